"""What the handler tells: frozen views of the one request record, built by one mapping.

`PendingInputEvent` goes to the notifier (RoomKit's ON_USER_INPUT_REQUIRED), `RequestUpdate`
to the observers (the chat surfaces). Each is a snapshot of a `PendingInput`, never the live
request: `snapshot(view, request)` copies the fields the view declares, by name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from bot.errors import (
    ExpiredWithAnswerError,
    HumanInputRejectedError,
    RequestCancelledError,
    UndeliverableError,
)
from bot.records import PendingInput, RequestStatus
from bot.words.phrases import Phrase


class RenderState(StrEnum):
    """What a surface shows for a request: CopilotKit's three states plus our four endings."""

    IN_PROGRESS = "inProgress"
    EXECUTING = "executing"
    COMPLETE = "complete"
    REJECTED = "rejected"
    EXPIRED = "expired"
    CANCELLED = "cancelled"
    UNDELIVERABLE = "undeliverable"


STATE_OF_STATUS = {
    RequestStatus.PENDING: RenderState.EXECUTING,
    RequestStatus.RESOLVED: RenderState.COMPLETE,
    RequestStatus.REJECTED: RenderState.REJECTED,
    RequestStatus.TIMED_OUT: RenderState.EXPIRED,
    RequestStatus.CANCELLED: RenderState.CANCELLED,
    RequestStatus.UNDELIVERABLE: RenderState.UNDELIVERABLE,
}


# The tools the bridge asks with itself (an approval gate's, an MCP server's elicitation), as
# people and the model know them: neither ever called a tool by these names.
ASKED_BY_THE_BRIDGE = {
    "approveToolCall": "the permission prompt",
    "elicitInput": "the input request",
}


def timeout_message(seconds: float, tool_name: str) -> str:
    """What the model (and a door's caller) reads of a request that expired unanswered: the
    RoomKit's words for a tool the model called, the prompt's label for one the bridge asked."""
    label = ASKED_BY_THE_BRIDGE.get(tool_name)
    if label is not None:
        return f"No answer within {seconds:g}s to {label}"
    return f"Human input timed out after {seconds:g}s for tool '{tool_name}'"


def undeliverable_message(reason: str) -> str:
    """What the model reads when a request could not be shown: not the person's silence."""
    why = reason.strip().rstrip(".") or "the request could not be delivered"
    return (
        f"The person could not be reached: {why}. They never saw the request, so this is "
        "not their answer; do not treat it as a refusal or as approval."
    )


if TYPE_CHECKING:
    from _typeshed import DataclassInstance


class TallyView(Protocol):
    """The votes an update shows (bot/policies/tally.py's `Tally`, which the primitive carries
    to the observers without reading): who approved, who declined, the line saying so."""

    @property
    def approvers(self) -> tuple[str, ...]: ...

    @property
    def decliners(self) -> tuple[str, ...]: ...

    @property
    def line(self) -> Phrase: ...


class AudienceView(Protocol):
    """Who may answer, as an update shows it (bot/policies/escalation.py's `Audience`)."""

    @property
    def fired(self) -> object | None:
        """The escalation step this update announces, if it announces one."""
        ...

    def who(self, actor_id: str | None) -> Phrase | None: ...

    def notes(self) -> Phrase | None: ...

    def ping(self, actor_id: str | None, voted: Sequence[str] = ()) -> Phrase | None: ...


V = TypeVar("V", bound="DataclassInstance")

_FIELDS: dict[type[Any], tuple[str, ...]] = {}


def snapshot(view: type[V], request: PendingInput, **given: Any) -> V:
    """`view` (a dataclass) of `request`: each of its fields read from the request by name,
    unless `given` (for what the request does not hold, like a RequestUpdate's `state`)."""
    names = _FIELDS.get(view)
    if names is None:
        names = _FIELDS[view] = tuple(f.name for f in dataclasses.fields(view))
    return view(**{name: given[name] if name in given else getattr(request, name)
                   for name in names})  # fmt: skip


@dataclass(frozen=True, slots=True)
class PendingInputEvent:
    """What the notifier (ON_USER_INPUT_REQUIRED) is told about a new request."""

    pending_id: str
    tool_name: str
    arguments: dict[str, Any]
    room_id: str
    tool_call_id: str
    channel_id: str
    channel_type: str
    actor_id: str | None
    created_at: datetime
    expires_at: datetime | None

    @classmethod
    def of(cls, request: PendingInput) -> PendingInputEvent:
        return snapshot(cls, request)


@dataclass(frozen=True, slots=True)
class RequestUpdate:
    """A transition an observer (a chat surface) renders: a snapshot, never the live request."""

    state: RenderState
    pending_id: str
    tool_name: str
    arguments: dict[str, Any]
    room_id: str
    tool_call_id: str
    channel_id: str
    channel_type: str
    actor_id: str | None
    created_at: datetime
    expires_at: datetime | None = None
    result: str | None = None
    reason: str | None = None
    settled_by: str | None = None
    settled_at: datetime | None = None
    run_outcome: str | None = None  # what came of the answer (a gated tool's run), once known
    # The votes so far on an open request several people decide (bot/policies/tally.py):
    # not the request's own, so the router gives it (from the votes' rows) when it has one.
    tally: TallyView | None = None
    # A copy of the request shown in a room other than its own (`room_id` is the copy's; a
    # policy's `deliver`, bot/policies/delivery.py): its message is kept apart from the
    # request's own, and a copy that cannot be posted never makes the request undeliverable.
    copy: bool = False
    # Who may answer an open request under its policy rule and how far its escalation went
    # (bot/policies/escalation.py); `audience.fired` on the update announcing a step just fired.
    audience: AudienceView | None = None

    @classmethod
    def of(
        cls,
        request: PendingInput,
        state: RenderState | None = None,
        tally: TallyView | None = None,
        audience: AudienceView | None = None,
    ) -> RequestUpdate:
        """The request as it stands (in `state`, if given, rather than its status's)."""
        state = state or STATE_OF_STATUS[request.status]
        return snapshot(cls, request, state=state, tally=tally, audience=audience, copy=False)

    @property
    def shown_again(self) -> bool:
        """An open request already posted, told again for its votes or a step of its
        escalation: its message is edited, never posted anew."""
        fired = self.audience is not None and self.audience.fired is not None
        return self.state is RenderState.EXECUTING and (self.tally is not None or fired)


Notifier = Callable[[PendingInputEvent], Awaitable[bool | None] | bool | None]
Observer = Callable[[RequestUpdate], Awaitable[None]]
AnswerValidator = Callable[[dict[str, Any], str], str]
"""(the request's arguments, the raw answer) -> the answer as stored; raises AnswerInvalidError."""


def outcome(request: PendingInput) -> str:
    """The answer of a settled request, or the error its waiters raise."""
    status, reason = request.status, request.reason or ""
    if status is RequestStatus.RESOLVED:
        return request.result or ""
    if status is RequestStatus.REJECTED:
        raise HumanInputRejectedError(reason)
    if status is RequestStatus.TIMED_OUT:
        if request.result is not None:  # the policy's default answer applied at the deadline
            raise ExpiredWithAnswerError(reason, request.result)
        raise TimeoutError(reason)
    if status is RequestStatus.UNDELIVERABLE:
        raise UndeliverableError(reason)
    if status is RequestStatus.CANCELLED and request.settled_by:
        raise RequestCancelledError(reason or "Cancelled")
    raise RuntimeError(reason or "Human input request withdrawn")
