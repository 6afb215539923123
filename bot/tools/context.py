"""Who and where a tool call runs for, carried by a context variable through the tool loop."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from bot.records import Origin


@dataclass(frozen=True, slots=True)
class ToolCallContext:
    """The turn a tool call belongs to. `actor_id` names the turn's author, unauthenticated."""

    room_id: str = ""
    channel_id: str = ""
    channel_type: str = "ai"
    tool_call_id: str = ""
    actor_id: str | None = None
    # A call of a run resumed after a restart: a human tool waits on the request it already
    # made rather than asking again.
    resumed: bool = False


_current: ContextVar[ToolCallContext | None] = ContextVar("hitl_tool_call", default=None)
_origin: ContextVar[Origin | None] = ContextVar("hitl_origin", default=None)


@contextmanager
def tool_turn_context(context: ToolCallContext) -> Iterator[ToolCallContext]:
    """Run the enclosed tool call with `context` as the current one."""
    token = _current.set(context)
    try:
        yield context
    finally:
        _current.reset(token)


def current_tool_context() -> ToolCallContext | None:
    return _current.get()


def current_tool_actor_id() -> str | None:
    """The participant whose turn raised the current tool call, or None."""
    context = _current.get()
    return context.actor_id if context else None


@contextmanager
def asked_through(origin: Origin) -> Iterator[Origin]:
    """Requests made in the enclosed code (and in the tasks it starts, which copy the context:
    an agent's turn started for a door's run) were asked through `origin`."""
    token = _origin.set(origin)
    try:
        yield origin
    finally:
        _origin.reset(token)


def current_origin() -> Origin | None:
    return _origin.get()
