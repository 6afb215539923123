"""Hooks: code the host runs at fixed points of a tool call (RoomKit's three triggers).

SYNC hooks run in priority order and may block (and BEFORE_TOOL_USE may replace the
arguments, under `metadata["arguments"]`); ASYNC hooks are observers started in the background.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

log = logging.getLogger(__name__)

HOOK_BUDGET_SECONDS = 30.0


class HookTrigger(StrEnum):
    BEFORE_TOOL_USE = "before_tool_use"
    ON_USER_INPUT_REQUIRED = "on_user_input_required"
    ON_TOOL_CALL = "on_tool_call"


class HookExecution(StrEnum):
    SYNC = "sync"
    ASYNC = "async"


@dataclass(frozen=True, slots=True)
class HookResult:
    """What a sync hook decided: allow (optionally with metadata) or block with a reason."""

    action: str = "allow"
    reason: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def allow(cls, metadata: dict[str, Any] | None = None) -> HookResult:
        return cls("allow", None, metadata or {})

    @classmethod
    def block(cls, reason: str = "") -> HookResult:
        return cls("block", reason)

    @property
    def blocked(self) -> bool:
        return self.action == "block"


@dataclass(frozen=True, slots=True)
class ToolCallEvent:
    """BEFORE_TOOL_USE and ON_TOOL_CALL: a tool call, and (after) how it ended."""

    tool_name: str
    arguments: dict[str, Any]
    tool_call_id: str
    room_id: str
    channel_id: str
    actor_id: str | None
    result: str | None = None
    is_error: bool = False
    refused: bool = False
    cancelled: bool = False
    error_detail: str | None = None


@dataclass(frozen=True, slots=True)
class HookContext:
    """Where the hook runs: the room and channel of the event."""

    room_id: str
    channel_id: str


Hook = Callable[[Any, HookContext], Awaitable[HookResult | None]]


@dataclass(frozen=True, slots=True)
class _Registration:
    hook: Hook
    execution: HookExecution
    priority: int
    name: str


class HookRegistry:
    """Hooks by trigger; `run` gives the combined verdict of the sync ones."""

    def __init__(self, budget: float = HOOK_BUDGET_SECONDS) -> None:
        self.budget = budget
        self._hooks: dict[HookTrigger, list[_Registration]] = {t: [] for t in HookTrigger}
        self._background: set[asyncio.Task[Any]] = set()

    def register(
        self,
        trigger: HookTrigger,
        hook: Hook,
        *,
        execution: HookExecution = HookExecution.SYNC,
        priority: int = 0,
        name: str | None = None,
    ) -> None:
        hooks = self._hooks[trigger]
        # A hook may be any callable (an object with __call__, a partial), not only a function.
        label: str = name or getattr(hook, "__name__", None) or type(hook).__name__
        hooks.append(_Registration(hook, execution, priority, label))
        hooks.sort(key=lambda r: r.priority)

    def adopt(self, other: HookRegistry) -> None:
        """Take over the hooks registered on `other` (a channel's own, before it joined)."""
        if other is self:
            return
        for trigger, registrations in other._hooks.items():
            self._hooks[trigger].extend(registrations)
            self._hooks[trigger].sort(key=lambda r: r.priority)

    def has(self, trigger: HookTrigger) -> bool:
        return bool(self._hooks[trigger])

    async def run(self, trigger: HookTrigger, event: Any, context: HookContext) -> HookResult:
        """Run the sync hooks in order until one blocks; start the async ones alongside.

        A sync hook that raises or overruns its budget is logged and counts as allow, except
        for BEFORE_TOOL_USE, which fails closed: a gate that cannot answer does not open.
        """
        metadata: dict[str, Any] = {}
        for registration in self._hooks[trigger]:
            if registration.execution is HookExecution.ASYNC:
                self._start(registration, event, context)
                continue
            result = await self._run_one(registration, trigger, event, context)
            if result.blocked:
                return result
            metadata.update(result.metadata)
            if "arguments" in result.metadata and hasattr(event, "arguments"):
                event = _with_arguments(event, result.metadata["arguments"])
        return HookResult.allow(metadata)

    async def _run_one(
        self,
        registration: _Registration,
        trigger: HookTrigger,
        event: Any,
        context: HookContext,
    ) -> HookResult:
        try:
            async with asyncio.timeout(self.budget):
                result = await registration.hook(event, context)
        except Exception as err:  # TimeoutError included
            log.exception("hook %s on %s failed", registration.name, trigger)
            if trigger is HookTrigger.BEFORE_TOOL_USE:
                return HookResult.block(f"Hook '{registration.name}' failed: {type(err).__name__}")
            return HookResult.allow()
        return result if result is not None else HookResult.allow()

    def fire(self, trigger: HookTrigger, event: Any, context: HookContext) -> None:
        """Run a trigger's hooks in the background (from a teardown that must not wait)."""
        if self._hooks[trigger]:
            self._track(self.run(trigger, event, context))

    def _start(self, registration: _Registration, event: Any, context: HookContext) -> None:
        async def observe() -> None:
            try:
                await registration.hook(event, context)
            except Exception:
                log.exception("async hook %s failed", registration.name)

        self._track(observe())

    def _track(self, coroutine: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def drain(self) -> None:
        """Wait for the async hooks still running."""
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)


def _with_arguments(event: Any, arguments: dict[str, Any]) -> Any:
    """A copy of a frozen event with replaced arguments (later hooks see the replacement)."""
    return replace(event, arguments=arguments)
