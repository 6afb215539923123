"""Plain records the core hands to its store: no SQL here, only what a row holds.

`PendingInput` is the one record of a request, in memory and in the store alike (the store calls
it `RequestRecord`: the same class). What observers and notifiers are given are frozen views of
it, built by one mapping (`bot.human_input.snapshots`). `bot.store` implements `RequestStore`
with SQLAlchemy (bot/bridge/ports.py): the union of the narrow ports each part of the core
declares and is typed against (`RequestRows`, `HoldRows`, `AuditLog`, ...); the in-memory
handler needs none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, NoReturn


class RequestStatus(StrEnum):
    """The stored status of a request; `pending` is the only status a settle may leave."""

    PENDING = "pending"
    RESOLVED = "resolved"
    REJECTED = "rejected"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"
    # No surface could show it (the platform refused the post, after retries): the person was
    # never asked, which is not the same as their not answering.
    UNDELIVERABLE = "undeliverable"


class StoreClosedError(RuntimeError):
    """The store was closed: background work using it stops."""


class StoreUnavailableError(RuntimeError):
    """The database cannot be reached or written right now (read-only, full, down): the call
    did nothing, and the same call may work later. The driver's error is its `__cause__`."""


MessageRefs = dict[str, dict[str, Any]]


class _NoRefs(MessageRefs):
    """The shared, read-only `message_refs` of a request no surface has posted yet (an empty
    dict each would add 64 bytes to every request). The store replaces it, never edits it."""

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError("message_refs is replaced by the store, not changed in place")

    __setitem__ = __delitem__ = setdefault = update = pop = popitem = clear = __ior__ = _refuse


NO_REFS: MessageRefs = _NoRefs()


@dataclass(frozen=True, slots=True)
class EscalationState:
    """How far a request's escalation went: steps fired, and when the next is due."""

    fired: int = 0
    next_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Origin:
    """Through which door (`api`, `mcp`, `a2a`, `ag-ui`) and by which token (its name) a
    request was asked: what its `request.created` audit row says of where it came from."""

    door: str
    requester: str


@dataclass(slots=True)
class PendingInput:
    """One request for human input: RoomKit's `PendingInput`, and the store's row.

    `pending_id` (RoomKit's name) and `id` (the store's) are the same value. The handler
    keeps its own state of a request beside it (bot/human_input/ledger.py's `Entry`), not on it.
    """

    id: str
    tool_name: str
    arguments: dict[str, Any]
    room_id: str = ""
    tool_call_id: str = ""
    channel_id: str = ""
    status: RequestStatus = RequestStatus.PENDING
    result: str | None = None
    detached: bool = False
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    actor_id: str | None = None
    channel_type: str = "ai"
    expires_at: datetime | None = None
    reason: str | None = None
    settled_by: str | None = None
    settled_at: datetime | None = None
    # What came of the answer, in one line, once it is known: a gated tool's run after its
    # approval ("ok", or its error; bot/gates/gate.py). Shown under the settled request.
    run_outcome: str | None = None
    # How far its policy rule's escalation went (bot/durable/escalations.py): columns, so every
    # worker and a restart see it. None until it has a step (one slot: most requests have none).
    escalation: EscalationState | None = None
    # Where each surface posted the request, e.g. {"slack": {"channel": "C1", "ts": "1.2"}}.
    message_refs: MessageRefs = field(default_factory=lambda: NO_REFS)
    # The door and token that asked (None: the agent loop of a chat surface). Not a column:
    # its request.created audit row keeps it.
    origin: Origin | None = None

    @property
    def pending_id(self) -> str:
        return self.id

    @pending_id.setter
    def pending_id(self, value: str) -> None:
        self.id = value

    @property
    def escalation_step(self) -> int:
        """How many of its rule's escalation steps have fired."""
        return self.escalation.fired if self.escalation is not None else 0

    @property
    def next_escalation_at(self) -> datetime | None:
        """When its next escalation step is due (None: there is none)."""
        return self.escalation.next_at if self.escalation is not None else None

    @property
    def lifetime_seconds(self) -> float | None:
        if self.expires_at is None:
            return None
        return (self.expires_at - self.created_at).total_seconds()


RequestRecord = PendingInput
"""The store's name for the same record."""

# What a settle writes on a request; `Settlement` and `PendingInput` both read by these names.
SETTLED_FIELDS = ("status", "result", "reason", "settled_by", "settled_at")


def copy_settled(target: PendingInput, source: Settlement | PendingInput) -> None:
    """Write the outcome `source` holds (a settlement, or a settled record) onto `target`."""
    for name in SETTLED_FIELDS:
        setattr(target, name, getattr(source, name))


@dataclass(frozen=True, slots=True)
class Settlement:
    """The one transition a settle asks for: pending -> status.

    `worker` is the worker asking (a row held by another live worker is not settled by it) and
    `proposal` the id under which a worker that does not hold the request handed it over.
    """

    request_id: str
    status: RequestStatus
    at: datetime
    result: str | None = None
    reason: str | None = None
    by: str | None = None
    worker: str | None = None
    proposal: str | None = None
    # What the audit row adds of who settled (their display name, the surface), if known.
    by_detail: Mapping[str, str] | None = None

    @property
    def settled_by(self) -> str | None:
        return self.by

    @property
    def settled_at(self) -> datetime:
        return self.at


class Decision(StrEnum):
    """Where a proposal (a settle handed to the request's holder) stands."""

    PENDING = "pending"  # the holder is alive and has not decided yet
    ACCEPTED = "accepted"  # the request settled as proposed
    REFUSED = "refused"  # the request settled otherwise
    ORPHANED = "orphaned"  # still pending, and no live worker holds it: settle it directly


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One line of the append-only audit log."""

    action: str
    at: datetime
    request_id: str | None = None
    actor_id: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    id: int | None = None


@dataclass(frozen=True, slots=True)
class RunRecord:
    """The agent run of one room: who holds it and until when (a lapsed lease is adoptable)."""

    room_id: str
    channel_id: str
    actor_id: str | None
    owner: str | None
    lease_until: datetime | None
    active: bool
    stop_by: str | None = None  # someone asked it to stop, on another worker than its owner
    stop_reason: str | None = None  # what its open requests then say ("Stopped by …")


@dataclass(frozen=True, slots=True)
class InboxEntry:
    """An interaction a surface wrote down before acking it, not yet applied
    (bot/durable/inbox.py)."""

    key: str
    surface: str
    payload: dict[str, Any]
    received_at: datetime


@dataclass(frozen=True, slots=True)
class GateRun:
    """The run of an approved (or granted) tool call (bot/gates/gate.py), keyed once: its
    claim, taken by the first worker to insert it, and once finished its result or error."""

    key: str  # the approval's request id, or "call:<tool_call_id>" for a call run under a grant
    tool_name: str
    worker: str
    claimed_at: datetime
    lease_until: datetime  # while unfinished: the runner is alive until then (it renews it)
    request_id: str | None = None
    finished_at: datetime | None = None
    result: str | None = None  # what the tool returned
    error: str | None = None  # or why it did not (what the model read)
    refused: bool = False  # the error was a refusal rather than a failure
    outcome: str | None = None  # the one line people are shown


@dataclass(frozen=True, slots=True)
class Grant:
    """A tool allowed to run unasked for one actor in one room until `expires_at`
    (bot/gates/grants.py). `arguments` scope it to argument values (a redacted one by its
    digest); empty, it covers every call of the tool."""

    id: str
    room_id: str
    actor_id: str | None
    tool_name: str
    arguments: dict[str, Any]
    created_at: datetime
    expires_at: datetime
    granted_by: str | None
    request_id: str | None = None  # the approval that granted it
    revoked_at: datetime | None = None
    revoked_by: str | None = None

    def live(self, now: datetime) -> bool:
        return self.revoked_at is None and self.expires_at > now


@dataclass(frozen=True, slots=True)
class Vote:
    """One person's vote on a request its rule needs several people to decide (a policy's
    `required` or `declines_required`; bot/policies/tally.py counts them). One per person and
    request; `arguments_digest` is of the arguments they voted on: a vote given before the
    arguments changed no longer counts."""

    request_id: str
    voter: str
    approve: bool  # False: a decline
    arguments_digest: str
    at: datetime
    reason: str | None = None  # a decline's


@dataclass(frozen=True, slots=True)
class Token:
    """A bearer token of the doors (bot/doors/tokens.py), as stored: its SHA-256, never itself."""

    name: str
    token_hash: str
    webhook_secret: str  # signs the callbacks of the token's requests (shown once, at creation)
    created_at: datetime
    revoked_at: datetime | None = None
    admin: bool = False  # may sign in to the admin console too


@dataclass(frozen=True, slots=True)
class Asked:
    """Who asked a request through a door (bot/doors/service.py), and what they asked it with."""

    request_id: str
    requester: str  # the token's name
    address: str  # `to`, as read
    created_at: datetime
    idempotency_key: str | None = None
    callback_url: str | None = None
    # The SHA-256 of the body asked with the idempotency key: the key reused with another body
    # is a client's mistake, refused (None on rows from before 0019, compared with nothing).
    body_hash: str | None = None
