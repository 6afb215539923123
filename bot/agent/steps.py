"""A turn's steps, told as they happen, so a surface can show a run live (Slack's status line
and streamed reply, Teams' streaming message, AG-UI's events).

The agent loop (bot/agent/channel.py) tells a `RunSteps` when it asks the model, each piece of
the reply as the model writes it, when a reply being written was cut short and is asked for
again, and when each tool call starts and ends. Every method is synchronous and must return at
once: a surface queues what it is told and does its I/O elsewhere, so a slow platform never
slows the turn. What a step carries was written by the model or a tool: a surface escapes it as
it escapes any such text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

OUTCOME_CHARS = 120  # a step's one-line outcome: a glance, not the tool's output


@dataclass(frozen=True, slots=True)
class ToolStep:
    """One tool call of a turn: `ok` is None while it runs, then whether it succeeded, with
    `outcome` its result (or error) in one line."""

    call_id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    ok: bool | None = None
    outcome: str = ""


class RunSteps(Protocol):
    """What a surface is told of a running turn (see the module's docstring)."""

    def thinking(self) -> None:
        """The model is asked for its next reply."""
        ...

    def text(self, delta: str) -> None:
        """The next piece of the reply, as the model writes it (visible text, not escaped)."""
        ...

    def discarded(self) -> None:
        """The reply being written was cut short: what was told of it since `thinking` is not
        part of the reply (it is asked for again, or the turn says it was interrupted)."""
        ...

    def tool_started(self, step: ToolStep) -> None: ...

    def tool_finished(self, step: ToolStep) -> None: ...


class NoSteps:
    """Told nothing: a turn nobody watches live."""

    def thinking(self) -> None:
        return None

    def text(self, delta: str) -> None:
        return None

    def discarded(self) -> None:
        return None

    def tool_started(self, step: ToolStep) -> None:
        return None

    def tool_finished(self, step: ToolStep) -> None:
        return None


def outcome_line(content: str, *, is_error: bool) -> str:
    """A tool result in one line: an error's message, or the first line of what it returned,
    cut to `OUTCOME_CHARS`. Errors come as `{"error": "..."}` from the loop and the tools."""
    text = content.strip()
    if is_error:
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and isinstance(parsed.get("error"), str):
            text = parsed["error"]
    first = text.splitlines()[0] if text else ("failed" if is_error else "done")
    return first if len(first) <= OUTCOME_CHARS else first[: OUTCOME_CHARS - 1] + "…"
