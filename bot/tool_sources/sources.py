"""Tool sources: where the agent's own tools come from (MCP servers, Python callables).

A source is started once (`start`, which raises `ToolSourceError` naming it when it cannot
start), offers its current tools (`tools`, which may change while it runs), serves calls
(`call`, raising `ToolFailedError` for a result the tool reported as an error, or when the
source is down), and is closed once. `bot/tool_sources/setup.py` puts them behind one tool handler.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from bot.tools import AITool


class ToolSourceError(RuntimeError):
    """A tool source could not start; `str(err)` is one line naming it and why."""


class ToolSource(Protocol):
    @property
    def label(self) -> str:
        """How the source is named in messages (`MCP server \\`python ops.py\\``)."""
        ...

    def tools(self) -> list[AITool]:
        """The tools it offers now."""
        ...

    async def call(self, name: str, arguments: dict[str, Any]) -> str:
        """Run one of its tools: the result text, or ToolFailedError (the model reads it)."""
        ...

    async def start(self) -> None: ...

    async def close(self) -> None: ...


def result_text(value: Any) -> str:
    """A Python value as the model reads it: text as it is, anything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)
