"""Python callables as tools: `python: mypackage.tools:restart_service` in the agent file.

The tool's name is the callable's (or the file's `name:`), its description the docstring, and
its arguments' JSON schema comes from the signature's type hints through pydantic, which also
validates the model's arguments before the call (a bad call is refused back to the model with
what is wrong). An async callable is awaited; a sync one runs in a thread, so it cannot stall
the event loop. The result is text as returned, anything else as JSON.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import sys
import typing
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from pydantic_core import to_jsonable_python

from bot.config.agent_file import TOOL_NAME, AgentConfig, PythonSourceConfig
from bot.errors import ToolRefusedError, UnservedToolCallError
from bot.human_tools.tool import inline_refs
from bot.tool_sources.sources import result_text
from bot.tools import AITool


class PythonTool:
    """One callable, its arguments' model, and the tool the model is offered."""

    def __init__(
        self, function: Callable[..., Any], *, name: str | None = None, description: str = ""
    ) -> None:
        self.function = function
        self.name: str = name or str(getattr(function, "__name__", ""))
        if not TOOL_NAME.match(self.name):
            raise ValueError(f"{self.name!r} is not a valid tool name (letters, digits, _ and -)")
        self.arguments = arguments_model(function, self.name)
        self.is_async = inspect.iscoroutinefunction(function) or (
            # an object with an async __call__
            not inspect.isroutine(function) and inspect.iscoroutinefunction(type(function).__call__)
        )
        schema = inline_refs(self.arguments.model_json_schema())
        schema.pop("title", None)
        about = description or inspect.getdoc(function) or ""
        self.definition = AITool(self.name, about, schema)

    async def __call__(self, arguments: dict[str, Any]) -> str:
        try:
            parsed = self.arguments.model_validate(arguments)
        except ValidationError as err:
            raise ToolRefusedError(f"Invalid arguments for '{self.name}': {_brief(err)}") from None
        values = {name: getattr(parsed, name) for name in type(parsed).model_fields}
        if self.is_async:
            result = await self.function(**values)
        else:
            result = await asyncio.to_thread(self.function, **values)
        return result_text(result if isinstance(result, str) else to_jsonable_python(result))


def arguments_model(function: Callable[..., Any], name: str) -> type[BaseModel]:
    """A pydantic model of the callable's parameters (their hints, defaults and `Annotated`
    descriptions); ValueError for a signature a tool cannot have (`*args`, `**kwargs`)."""
    signature = inspect.signature(function)
    try:
        hints = typing.get_type_hints(function, include_extras=True)
    except Exception:  # hints that cannot be resolved: the parameters are taken as they come
        hints = {}
    fields: dict[str, Any] = {}
    for parameter in signature.parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise ValueError(f"{name} takes *args or **kwargs: a tool's arguments are named")
        if parameter.kind is parameter.POSITIONAL_ONLY:
            raise ValueError(f"{name} has positional-only parameters: a tool's are named")
        hint = hints.get(parameter.name, Any)
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[parameter.name] = (hint, default)
    model: type[BaseModel] = create_model(
        f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields
    )
    return model


class PythonToolSource:
    """The tool source of one `python:` entry of the agent file."""

    def __init__(self, config: PythonSourceConfig, tool: PythonTool) -> None:
        self.config = config
        self.tool = tool

    @classmethod
    def load(cls, agent: AgentConfig, index: int) -> PythonToolSource:
        """Import the entry's callable (from the agent file's folder too); ConfigurationError
        at the entry's line if it cannot be imported or is not a callable a tool can be."""
        config = agent.tools[index]
        assert isinstance(config, PythonSourceConfig)
        where = ("tools", index, "python")
        module_name, _, attribute = config.python.partition(":")
        folder = str(agent.folder)
        if folder not in sys.path:
            sys.path.append(folder)
        try:
            target: Any = importlib.import_module(module_name)
            for part in attribute.split("."):
                target = getattr(target, part)
        except Exception as err:
            raise agent.error(where, f"cannot import {config.python}: {_said(err)}") from None
        if not callable(target):
            raise agent.error(where, f"{config.python} is not callable")
        try:
            tool = PythonTool(target, name=config.name, description=config.description or "")
        except (ValueError, TypeError) as err:
            raise agent.error(where, f"cannot be a tool: {_said(err)}") from None
        return cls(config, tool)

    @property
    def label(self) -> str:
        return self.config.label

    def tools(self) -> list[AITool]:
        return [self.tool.definition]

    async def call(self, name: str, arguments: dict[str, Any]) -> str:
        if name != self.tool.name:
            raise UnservedToolCallError(name)
        return await self.tool(arguments)

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None


def _brief(err: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}" for e in err.errors()
    )


def _said(err: BaseException) -> str:
    lines = str(err).strip().splitlines()
    return f"{type(err).__name__}: {lines[0]}" if lines else type(err).__name__
