"""Tools the model may call: definitions, handlers and how they chain; tool sources (MCP servers,
Python callables) and the approval gates in front of them live beside this module."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from bot.errors import UnservedToolCallError

ToolHandler = Callable[[str, dict[str, Any]], Awaitable[str]]
"""Serve one tool call: (name, arguments) -> result text; UnservedToolCallError to pass."""


@dataclass(frozen=True, slots=True)
class AITool:
    """A tool the model may call: its name, what it does, and a JSON Schema of its arguments."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})


def compose_tool_handlers(*handlers: ToolHandler) -> ToolHandler:
    """One handler that asks each in turn; a handler passes with UnservedToolCallError."""

    async def composed(name: str, arguments: dict[str, Any]) -> str:
        for handler in handlers:
            try:
                return await handler(name, arguments)
            except UnservedToolCallError:
                continue
        raise UnservedToolCallError(name)

    return composed
