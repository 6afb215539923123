"""The agent's own tools, from the agent file: its sources, started; one handler over them.

```python
tools = AgentTools.from_config(config, elicitation=HumanElicitation(human.handler, timeout))
await tools.start()             # ToolSourceError (one line) / ConfigurationError (FILE:LINE)
channel = AIChannel(..., tool_handler=build_tool_handler(tools, gate=...),
                    tool_catalog=tools.catalog)
...
await tools.close()
```

`build_tool_handler` is the one place the channel's tool handler is made: an approval gate
wraps the handler there (`gate(inner, tools.live, tools)`), reading each tool's rule with
`tools.approval_for(name)` (whether it needs a person, which argument keys are redacted).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.config.agent_file import (
    A2aSourceConfig,
    AgentConfig,
    McpSourceConfig,
    PythonSourceConfig,
)
from bot.errors import UnservedToolCallError
from bot.gates.grants import GRANT_SECONDS
from bot.human_tools.tool import BUILTIN_TOOLS
from bot.tool_sources.elicitation import HumanElicitation
from bot.tool_sources.python_tools import PythonToolSource
from bot.tool_sources.sources import ToolSource
from bot.tools import AITool, ToolHandler
from bot.words.tool_names import ELICIT_INPUT

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ToolRule:
    """What the agent file says of one tool: whether a person approves each call first, which
    argument keys are shown masked (•••) to people, and what "approve and allow here" allows
    (for how long; scoped to which arguments' values)."""

    needs_approval: bool
    redact: frozenset[str]
    grant_seconds: float = GRANT_SECONDS
    grant_scope: frozenset[str] = frozenset()


Gate = Callable[[ToolHandler, Mapping[str, AITool], "AgentTools"], ToolHandler]
"""Wraps the tools' handler: (inner handler, the tools by name (live), the tools' rules)."""


class AgentTools:
    """The tool sources of an agent file, in its order: the first to offer a name serves it."""

    def __init__(self, config: AgentConfig, sources: Sequence[ToolSource]) -> None:
        if len(sources) != len(config.tools):
            raise ValueError("one source per entry of the agent file's tools")
        self.config = config
        self.sources = list(sources)
        self.live: Mapping[str, AITool] = _LiveTools(self)

    @classmethod
    def from_config(
        cls,
        config: AgentConfig,
        *,
        elicitation: HumanElicitation | None = None,
        **mcp_options: Any,
    ) -> AgentTools:
        """The file's sources, not started: Python callables are imported now
        (ConfigurationError at their line), MCP servers start with `start()`."""
        sources: list[ToolSource] = []
        for index, source in enumerate(config.tools):
            if isinstance(source, PythonSourceConfig):
                sources.append(PythonToolSource.load(config, index))
            elif isinstance(source, A2aSourceConfig):
                # The A2A SDK only for a file that lists remote agents.
                from bot.tool_sources.a2a_tools import A2aAgentSource

                sources.append(A2aAgentSource(source.a2a, elicitation=elicitation))
            else:
                assert isinstance(source, McpSourceConfig)
                # The MCP SDK (seconds to import) only for a file that lists MCP servers.
                from bot.tool_sources.mcp_tools import McpServerSource

                sources.append(
                    McpServerSource(
                        source, folder=config.folder, elicitation=elicitation, **mcp_options
                    )
                )
        return cls(config, sources)

    # -- life ------------------------------------------------------------------------------

    async def start(self) -> None:
        """Start every source (all at once); the first that cannot start stops the others and
        raises ToolSourceError naming it. Then every name under `approval` must be a tool
        of its source: ConfigurationError at its line otherwise."""
        results = await asyncio.gather(
            *(source.start() for source in self.sources), return_exceptions=True
        )
        failure = next((r for r in results if isinstance(r, BaseException)), None)
        if failure is not None:
            await self.close()
            raise failure
        try:
            self.check()
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        await asyncio.gather(*(source.close() for source in self.sources), return_exceptions=True)

    def check(self) -> None:
        """ConfigurationError (FILE:LINE) for a name in `approval` its source does not offer."""
        for index, (entry, source) in enumerate(zip(self.config.tools, self.sources, strict=True)):
            offered = [tool.name for tool in source.tools()]
            for position, name in enumerate(entry.approval):
                if name != "*" and name not in offered:
                    where = ("tools", index, "approval", position)
                    raise self.config.error(
                        where,
                        f"unknown tool {name!r}: {source.label} offers "
                        f"{', '.join(offered) or 'no tools'}",
                    )
        names: dict[str, str] = {}
        for source in self.sources:
            for tool in source.tools():
                if tool.name in BUILTIN_TOOLS or tool.name == ELICIT_INPUT:
                    log.warning("%s offers %s, a human tool's name: the human tool is used",
                                source.label, tool.name)  # fmt: skip
                elif tool.name in names:
                    log.warning("%s and %s both offer %s: %s serves it", names[tool.name],
                                source.label, tool.name, names[tool.name])  # fmt: skip
                else:
                    names[tool.name] = source.label

    # -- tools and rules ---------------------------------------------------------------------

    def _served(self) -> Iterator[tuple[AITool, ToolSource, int]]:
        seen: set[str] = set()
        for index, source in enumerate(self.sources):
            for tool in source.tools():
                if tool.name not in seen:
                    seen.add(tool.name)
                    yield tool, source, index

    def catalog(self) -> list[AITool]:
        """The tools offered now (the channel's `tool_catalog`)."""
        return [tool for tool, _, _ in self._served()]

    def source_of(self, name: str) -> tuple[ToolSource, int] | None:
        """The source serving `name` now, and its entry's index in the file."""
        return next(((s, i) for tool, s, i in self._served() if tool.name == name), None)

    def approval_for(self, tool_name: str) -> ToolRule | None:
        """The file's rule for a tool (None: no source serves that name now)."""
        served = self.source_of(tool_name)
        if served is None:
            return None
        entry = self.config.tools[served[1]]
        needs = entry.approve_all or tool_name in entry.approval_names
        return ToolRule(
            needs_approval=needs, redact=frozenset(entry.redact),
            grant_seconds=entry.grant_minutes * 60.0, grant_scope=frozenset(entry.grant_scope),
        )  # fmt: skip

    async def call(self, name: str, arguments: dict[str, Any]) -> str:
        """Run a tool on the source serving it; UnservedToolCallError for any other name."""
        served = self.source_of(name)
        if served is None:
            raise UnservedToolCallError(name)
        return await served[0].call(name, arguments)


def build_tool_handler(tools: AgentTools, gate: Gate | None = None) -> ToolHandler:
    """The channel's tool handler over the agent's tools: the one place it is made, where an
    approval gate wraps it (None: every call runs as the model makes it)."""
    inner: ToolHandler = tools.call
    if gate is None:
        return inner
    return gate(inner, tools.live, tools)


class _LiveTools(Mapping[str, AITool]):
    """The tools offered now, by name (it follows the servers' list changes)."""

    def __init__(self, tools: AgentTools) -> None:
        self._tools = tools

    def __getitem__(self, name: str) -> AITool:
        for tool, _, _ in self._tools._served():
            if tool.name == name:
                return tool
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return (tool.name for tool, _, _ in self._tools._served())

    def __len__(self) -> int:
        return sum(1 for _ in self._tools._served())
