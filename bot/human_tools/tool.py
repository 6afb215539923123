"""The tools that ask a person: their argument and answer models, and the handler serving them.

A human tool is a pydantic model for its arguments and one for its answer. Arguments the model
writes are validated before anyone is asked; an answer is validated before the model reads it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import (
    BaseModel,
    ValidationError,
)

from bot.errors import (
    AnswerInvalidError,
    ExpiredWithAnswerError,
    HumanInputRejectedError,
    RequestCancelledError,
    ToolFailedError,
    ToolRefusedError,
    UndeliverableError,
    UnservedToolCallError,
)
from bot.human_input import HumanInputHandler, timeout_message, undeliverable_message
from bot.human_tools.models import (  # re-exported: the built-in tools' models
    AskUserQuestionAnswer as AskUserQuestionAnswer,
)
from bot.human_tools.models import (
    AskUserQuestionArgs as AskUserQuestionArgs,
)
from bot.human_tools.models import (
    CollectUserDataArgs as CollectUserDataArgs,
)
from bot.human_tools.models import (
    ConfirmActionAnswer as ConfirmActionAnswer,
)
from bot.human_tools.models import (
    ConfirmActionArgs as ConfirmActionArgs,
)
from bot.human_tools.models import (
    DataField as DataField,
)
from bot.human_tools.models import (
    FieldType as FieldType,
)
from bot.human_tools.models import (
    Number as Number,
)
from bot.human_tools.models import (
    RequestApprovalAnswer as RequestApprovalAnswer,
)
from bot.human_tools.models import (
    RequestApprovalArgs as RequestApprovalArgs,
)
from bot.human_tools.models import (
    SelectOptionAnswer as SelectOptionAnswer,
)
from bot.human_tools.models import (
    SelectOptionArgs as SelectOptionArgs,
)
from bot.human_tools.models import (
    Text as Text,
)
from bot.human_tools.models import (
    UploadFileAnswer as UploadFileAnswer,
)
from bot.human_tools.models import (
    UploadFileArgs as UploadFileArgs,
)
from bot.human_tools.models import (
    _check_selection as _check_selection,
)
from bot.human_tools.models import (
    _check_upload as _check_upload,
)
from bot.human_tools.models import (
    data_form as data_form,
)
from bot.human_tools.models import (
    file_accepted as file_accepted,
)
from bot.human_tools.models import (
    form_answer_model as form_answer_model,
)
from bot.tools import AITool
from bot.tools.context import current_tool_context
from bot.words.tool_names import (
    ASK_USER_QUESTION,
    COLLECT_USER_DATA,
    CONFIRM_ACTION,
    REQUEST_APPROVAL,
    SELECT_OPTION,
    UPLOAD_FILE,
)
from bot.words.visible_text import visible_values

# -- the tool spec ------------------------------------------------------------------------

AnswerCheck = Callable[[BaseModel, dict[str, Any]], None]


@dataclass(frozen=True)
class HumanTool:
    """A tool that asks a person. `renderers` maps a surface name to its render function."""

    name: str
    description: str
    arguments: type[BaseModel]
    answer: type[BaseModel] | None = None
    renderers: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    # Checks that need the request's arguments (an option index within the options offered).
    check_answer: AnswerCheck | None = None

    def definition(self) -> AITool:
        schema = inline_refs(self.arguments.model_json_schema())
        return AITool(name=self.name, description=self.description, parameters=schema)

    def validated(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The arguments as the tool's model reads them, or pydantic's ValidationError (each
        caller words it for its reader). Validated as people will read them (`visible`): a
        limit counts what is shown."""
        model = self.arguments.model_validate(visible_values(arguments))
        dumped: dict[str, Any] = model.model_dump(mode="json", exclude_none=True)
        return dumped

    def parse_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The validated arguments, or ToolRefusedError with what is wrong (for the model)."""
        try:
            return self.validated(arguments)
        except ValidationError as err:
            raise ToolRefusedError(f"Invalid arguments for '{self.name}': {_brief(err)}") from err

    def parse_answer(self, arguments: dict[str, Any], raw: str) -> str:
        """The answer as the model will read it (normalised JSON), or AnswerInvalidError."""
        answer_model = self.answer_model(arguments)
        if answer_model is None:
            return raw
        try:
            answer = answer_model.model_validate_json(raw)
            if self.check_answer is not None:
                self.check_answer(answer, arguments)
        except ValidationError as err:
            raise AnswerInvalidError(
                f"Invalid answer for '{self.name}': {_brief(err)}", _field_errors(err)
            ) from err
        except ValueError as err:
            message = f"Invalid answer for '{self.name}': {err}"
            raise AnswerInvalidError(message, {"": str(err)}) from err
        return answer.model_dump_json(exclude_none=True)

    def answer_model(self, arguments: dict[str, Any]) -> type[BaseModel] | None:
        if self.name == "collectUserData":
            return form_answer_model(CollectUserDataArgs.model_validate(arguments).fields)
        return self.answer


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with its `$defs` written in place, as the model is best shown it."""
    definitions = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return inline(definitions[ref.removeprefix("#/$defs/")])
            return {key: inline(value) for key, value in node.items()}
        if isinstance(node, list):
            return [inline(item) for item in node]
        return node

    result: dict[str, Any] = inline(schema)
    return result


def _field_errors(err: ValidationError) -> dict[str, str]:
    """Each error on the answer key it concerns ("" for the answer as a whole)."""
    errors: dict[str, str] = {}
    for error in err.errors():
        key = str(error["loc"][0]) if error["loc"] else ""
        errors.setdefault(key, "Required" if error["type"] == "missing" else error["msg"])
    return errors


def _brief(err: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}" for e in err.errors()
    )


BUILTIN_TOOLS: dict[str, HumanTool] = {
    tool.name: tool
    for tool in (
        HumanTool(
            ASK_USER_QUESTION,
            "Ask the user a question and wait for the answer.",
            AskUserQuestionArgs,
            AskUserQuestionAnswer,
        ),
        HumanTool(
            REQUEST_APPROVAL,
            "Ask a person to approve or reject an action before you take it.",
            RequestApprovalArgs,
            RequestApprovalAnswer,
        ),
        HumanTool(
            SELECT_OPTION,
            "Ask the user to pick one of several options.",
            SelectOptionArgs,
            SelectOptionAnswer,
            check_answer=_check_selection,
        ),
        HumanTool(
            COLLECT_USER_DATA,
            "Ask the user to fill in a few typed form fields.",
            CollectUserDataArgs,
        ),
        HumanTool(
            UPLOAD_FILE,
            "Ask the user to upload a file.",
            UploadFileArgs,
            UploadFileAnswer,
            check_answer=_check_upload,
        ),
        HumanTool(
            CONFIRM_ACTION,
            "Ask the user to confirm something, dangerous or not, before doing it.",
            ConfirmActionArgs,
            ConfirmActionAnswer,
        ),
    )
}


# -- the handler --------------------------------------------------------------------------


class HumanInputToolHandler:
    """Serve the tools that ask a person; a tool handler that passes on every other name."""

    def __init__(
        self,
        tool_names: Iterable[str] = (),
        timeout: float = 300,
        handler: HumanInputHandler | None = None,
        tool_definitions: Iterable[AITool] = (),
        *,
        tools: Iterable[HumanTool] = (),
    ) -> None:
        self.handler = handler if handler is not None else HumanInputHandler()
        self.timeout = timeout
        self.tools: dict[str, HumanTool] = {}
        # A tool declared by name is the developer's own: its arguments and answer pass as
        # written (RoomKit's Quick Start declares its own AskUserQuestion). Only tools whose
        # models the project defines (`builtin()`, `tools=`) are validated.
        names = set(tool_names)
        definitions = {d.name: d for d in tool_definitions}
        for tool in tools:
            self._add(tool)
            definitions.setdefault(tool.name, tool.definition())
            names.add(tool.name)
        self.tool_names = frozenset(names)
        self.tool_definitions = list(definitions.values())

    @classmethod
    def builtin(
        cls, *, timeout: float = 300, handler: HumanInputHandler | None = None
    ) -> HumanInputToolHandler:
        """All six built-in tools, offered and served."""
        return cls(timeout=timeout, handler=handler, tools=BUILTIN_TOOLS.values())

    def _add(self, tool: HumanTool) -> None:
        self.tools[tool.name] = tool

        def validate(arguments: dict[str, Any], raw: str) -> str:
            return tool.parse_answer(arguments, raw)

        self.handler.set_answer_validator(tool.name, validate)

    async def __call__(self, name: str, arguments: dict[str, Any]) -> str:
        if name not in self.tool_names:
            raise UnservedToolCallError(name)
        context = current_tool_context()
        return await self.ask(
            name, arguments, channel_type=context.channel_type if context else "ai"
        )

    async def ask(self, name: str, arguments: dict[str, Any], *, channel_type: str = "ai") -> str:
        """Ask a person through this handler and return the answer the model reads."""
        tool = self.tools.get(name)
        if tool is not None:
            arguments = tool.parse_arguments(arguments)
        context = current_tool_context()
        if context is not None and context.resumed and context.tool_call_id:
            asked = await self.handler.request_for_tool_call(context.tool_call_id)
            if asked is not None:
                return await self._wait(name, asked)
        pending = await self.handler.create(
            name,
            arguments,
            room_id=context.room_id if context else "",
            tool_call_id=context.tool_call_id if context else "",
            channel_id=context.channel_id if context else "",
            channel_type=channel_type,
            actor_id=context.actor_id if context else None,
            timeout=self.timeout,
        )
        return await self._wait(name, pending.pending_id)

    async def _wait(self, name: str, pending_id: str) -> str:
        try:
            return await self.handler.wait(pending_id, timeout=self.timeout)
        except HumanInputRejectedError as rejected:
            raise ToolRefusedError(
                f"Rejected: {rejected}" if str(rejected) else "Rejected"
            ) from None
        except ExpiredWithAnswerError as expired:
            return expired_answer(expired.answer)
        except TimeoutError as expired:
            raise ToolFailedError(str(expired) or timeout_message(self.timeout, name)) from None
        except UndeliverableError as undelivered:
            raise ToolFailedError(undeliverable_message(str(undelivered))) from None
        except RequestCancelledError as cancelled:  # an admin's reason, read as they wrote it
            raise ToolRefusedError(str(cancelled)) from None


def expired_answer(answer: str) -> str:
    """What the model reads of the policy's default answer at the deadline: the answer with
    `"expired": true`, so it is never taken for a person's. Added here, not a field of the
    answer models: a person's answer can then never claim to be a default."""
    try:
        parsed = json.loads(answer)
    except ValueError:
        parsed = answer  # a developer's tool's answer, taken verbatim
    shown = {**parsed} if isinstance(parsed, dict) else {"answer": parsed}
    return json.dumps({**shown, "expired": True}, ensure_ascii=False)


def answer_json(answer: BaseModel | dict[str, Any]) -> str:
    """Serialise an answer the way the model reads it."""
    if isinstance(answer, BaseModel):
        return answer.model_dump_json(exclude_none=True)
    return json.dumps(answer)
