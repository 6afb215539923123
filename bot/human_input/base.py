"""The state every part of `HumanInputHandler` shares, and the calls one part makes of another.

The handler is one class assembled from one module per concern (waiting, settling, scopes,
holding, observing); this base declares what they share so each can be read, and type-checked,
on its own.
"""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from bot.durable.leases import worker_name
from bot.failures import RepeatedFailures
from bot.human_input.deadlines import Deadlines
from bot.human_input.snapshots import AnswerValidator, Notifier, Observer, RequestUpdate
from bot.records import PendingInput, RequestStatus, RequestStore, Settlement

if TYPE_CHECKING:
    from bot.policies.escalation import Audience
    from bot.policies.tally import Tally

DENIED_BY_HOOK = "Denied by ON_USER_INPUT_REQUIRED hook"
NOTIFIER_BUDGET_SECONDS = 30.0
DEFAULT_TIMEOUT_SECONDS = 300.0
# How long other workers wait for a silent holder before settling its requests themselves
# (see bot/human_input/holding.py).
HOLD_SECONDS = 4.0

# Set inside the handler's own callbacks (notifiers, observers): a close() or drain() from there
# must not wait for the very callback that called it.
in_callback: ContextVar[bool] = ContextVar("hitl_in_callback", default=False)


@dataclass(slots=True)
class Scope:
    """A channel scope (or the default one, key None): its notifier and whether it is closed."""

    notifier: Notifier | None = None
    token: str | None = None
    closed: bool = False


class HandlerState(ABC):
    """The shared state of a handler; see `HumanInputHandler` for the public API."""

    def __init__(
        self,
        retention: int,
        store: RequestStore | None,
        default_timeout: float,
        notifier_budget: float,
        hold_seconds: float,
        worker_id: str | None,
    ) -> None:
        self.retention = retention
        self.store = store
        self.default_timeout = default_timeout
        self.notifier_budget = notifier_budget
        self.hold_seconds = hold_seconds
        self.worker_id = worker_id or worker_name()
        # Requests created or loaded here that wait() has not retired nor release() dropped,
        # settled or not; and the latest `retention` outcomes, filled as they are settled.
        self._active: dict[str, PendingInput] = {}
        self._settled: OrderedDict[str, PendingInput] = OrderedDict()
        self._scopes: dict[str | None, Scope] = {None: Scope()}
        self._observers: list[Observer] = []
        # Updates of a request not yet delivered to the observers, while a delivery runs.
        self._deliveries: dict[str, list[RequestUpdate]] = {}
        self._validators: dict[str, AnswerValidator] = {}
        # A policy's default answer at the deadline, where it reads otherwise than a person's
        # (an approval gate's default may decline); else `_validators` checks it.
        self._expiry_validators: dict[str, AnswerValidator] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        # Running notifier calls, with the channel of their request (close() cuts a channel's).
        self._notifiers: dict[asyncio.Task[Any], str] = {}
        self.on_deadline_armed: Callable[[datetime], None] | None = None
        # A policy's deadline for a call (tool name, arguments), over the caller's: the
        # policy file's `timeout_seconds` (bot/policies/deciders.py); None: the caller's.
        self.lifetime_rule: Callable[[str, dict[str, Any]], float | None] | None = None
        # A policy's answer at the deadline for a call (tool name, arguments), as JSON: the
        # policy file's `on_timeout: {answer: ...}`; None: the request expires unanswered.
        self.expiry_answer: Callable[[str, dict[str, Any]], str | None] | None = None
        # A policy's escalation: when the first step of a call's rule is due (seconds after
        # creation; None: it has none), and who may answer a request and how far its
        # escalation went, as its message shows them (bot/policies/escalation.py).
        self.escalation_start: Callable[[str, dict[str, Any]], float | None] | None = None
        self.audience_of: Callable[[PendingInput], Audience | None] | None = None
        self.on_escalation_armed: Callable[[datetime], None] | None = None
        # Set while the worker shuts down: a wait cut then leaves its request pending, for the
        # worker that resumes the run, instead of withdrawing it.
        self.suspended = False
        # Every request's deadline, in one queue per timeout (bot/human_input/deadlines.py).
        self._deadlines = Deadlines(self._expire)
        # Holding (bot/human_input/holding.py): how many pending requests this worker holds,
        # the loop time until which the other workers surely see it alive, its heartbeat, and
        # the proposers here waiting to hear about a request.
        self._holding = 0
        self._alive_until = 0.0
        self._beater: asyncio.Task[None] | None = None
        self._listeners: dict[str, list[asyncio.Future[None]]] = {}
        # The heartbeat fails every beat while the database cannot be written: one line.
        self._failures = RepeatedFailures(logging.getLogger("bot.human_input"))

    def _settlement(
        self,
        request_id: str,
        status: RequestStatus,
        result: str | None = None,
        reason: str | None = None,
        by: str | None = None,
        at: datetime | None = None,
        proposal: str | None = None,
        by_detail: Mapping[str, str] | None = None,
    ) -> Settlement:
        return Settlement(
            request_id, status, at or datetime.now(UTC), result, reason, by,
            self.worker_id, proposal, by_detail,
        )  # fmt: skip

    def _spawn(self, coroutine: Awaitable[Any]) -> asyncio.Task[Any]:
        task: asyncio.Task[Any] = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _drain_tasks(self) -> None:
        """Let in-flight settles and observer calls finish (a close must not lose an edit).

        From inside a notifier or an observer it returns at once: waiting there would wait
        for the callback that is waiting.
        """
        if in_callback.get():
            return
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def drain(self) -> None:
        """Wait until every settle is recorded and every observer has been told (returns at
        once when called from inside a notifier or an observer, which it would wait for)."""
        await self._drain_tasks()

    # -- what one part calls of another (each implemented in the module named) ----------------

    @abstractmethod
    def _settle(
        self,
        request: PendingInput,
        status: RequestStatus,
        *,
        result: str | None = None,
        reason: str | None = None,
        by: str | None = None,
        proposal: str | None = None,
    ) -> bool: ...  # settling.py

    @abstractmethod
    def _apply(
        self, request: PendingInput, source: Settlement | PendingInput, *, tell: bool = True
    ) -> None: ...  # settling.py

    @abstractmethod
    def _apply_written(
        self, request: PendingInput, source: Settlement | PendingInput
    ) -> None: ...  # settling.py

    @abstractmethod
    def _retain(self, request: PendingInput) -> None: ...  # settling.py

    @abstractmethod
    def _validated(self, request: PendingInput, result: str) -> str: ...  # settling.py

    @abstractmethod
    def _retire(self, request: PendingInput) -> None: ...  # waiting.py

    @abstractmethod
    def _arm_timer(self, request: PendingInput, seconds: float) -> None: ...  # waiting.py

    @abstractmethod
    def _expire(self, request: PendingInput) -> None: ...  # waiting.py

    @abstractmethod
    def _default_answer(self, request: PendingInput) -> str | None: ...  # waiting.py

    @abstractmethod
    def reject(
        self, pending_id: str, reason: str = "", *, by: str | None = None
    ) -> bool: ...  # settling.py

    @abstractmethod
    def _notify_observers(
        self, request: PendingInput, tally: Tally | None = None, audience: Audience | None = None
    ) -> None: ...  # observing.py

    @abstractmethod
    def _tell_observers(self, update: RequestUpdate) -> None: ...  # observing.py

    @abstractmethod
    async def _record_settle(
        self, request: PendingInput, settlement: Settlement
    ) -> bool: ...  # holding.py

    @abstractmethod
    async def _take(self, request: PendingInput) -> None: ...  # holding.py

    @abstractmethod
    def _release_memory(self, request: PendingInput) -> None: ...  # holding.py

    @abstractmethod
    async def follow(self, request_id: str) -> None: ...  # holding.py
