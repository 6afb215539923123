"""The tables of the store. Alembic owns the live schema; `migrations/versions` must match this."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    CheckConstraint,
    DateTime,
    Dialect,
    ForeignKey,
    Index,
    MetaData,
    String,
    Text,
    TypeDecorator,
    false,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from bot.records import RequestStatus

# Deterministic constraint names, so later migrations can refer to them on both dialects.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

UNSEALED = text("chain_seq IS NULL")
STATUS_VALUES = ", ".join(f"'{status.value}'" for status in RequestStatus)

# JSONB on PostgreSQL (binary, indexable); SQLite stores JSON as text.
JsonType = JSON().with_variant(JSONB(), "postgresql")
# The same for a column that may be empty: Python's None is SQL NULL, not JSON `null`.
NullableJson = JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql")


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC in and out, on every dialect.

    PostgreSQL keeps `timestamptz`; SQLite has no time zones, so values are stored as naive UTC
    text (which also sorts chronologically) and given back their UTC zone on the way out.
    Naive datetimes are refused: their meaning depends on the machine that made them.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: the store needs timezone-aware values")
        utc = value.astimezone(UTC)
        return utc.replace(tzinfo=None) if dialect.name == "sqlite" else utc

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class RequestRow(Base):
    """One human-input request; `status` moves away from 'pending' exactly once."""

    __tablename__ = "requests"
    __table_args__ = (
        CheckConstraint(f"status IN ({STATUS_VALUES})", name="status"),
        # Serves "pending, earliest expires_at first" (due sweep, next deadline) and
        # list_pending as index range scans.
        Index("ix_requests_status_expires_at", "status", "expires_at"),
        # A resumed run finds the request of its tool call; a thread reply, its room's open ones.
        Index("ix_requests_tool_call_id", "tool_call_id"),
        Index("ix_requests_room_id_status", "room_id", "status"),
        # A worker's heartbeat finds the requests it holds that have proposals waiting.
        Index("ix_requests_held_by", "held_by"),
        # The admin console's table, newest first (adapters/doors/admin).
        Index("ix_requests_created_at", "created_at"),
        # The latest decisions, latest first (bot/reports/home.py: a week's, for the figures).
        Index("ix_requests_settled_at", "settled_at"),
        # "Pending, earliest next escalation first" (bot/durable/escalations.py): an index range.
        Index("ix_requests_status_next_escalation_at", "status", "next_escalation_at"),
    )

    id: Mapped[str] = mapped_column(String, primary_key=True)
    tool_name: Mapped[str] = mapped_column(String)
    arguments: Mapped[dict[str, Any]] = mapped_column(JsonType)
    room_id: Mapped[str] = mapped_column(String)
    tool_call_id: Mapped[str] = mapped_column(String)
    channel_id: Mapped[str] = mapped_column(String)
    channel_type: Mapped[str] = mapped_column(String)
    actor_id: Mapped[str | None] = mapped_column(String)
    detached: Mapped[bool]
    status: Mapped[str] = mapped_column(String)
    result: Mapped[str | None] = mapped_column(Text)
    reason: Mapped[str | None] = mapped_column(Text)
    settled_by: Mapped[str | None] = mapped_column(String)
    settled_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    message_refs: Mapped[dict[str, Any]] = mapped_column(
        JsonType, default=dict, server_default="{}"
    )
    # The worker that decides this request's settle while it lives (bot/human_input/holding.py),
    # cleared by the settle; and the proposal the settle applied, if it came from another worker.
    held_by: Mapped[str | None] = mapped_column(String)
    settled_proposal: Mapped[str | None] = mapped_column(String)
    # What came of the answer, in one line: a gated tool's run (bot/gates/gate.py).
    run_outcome: Mapped[str | None] = mapped_column(Text)
    # How many of its rule's escalation steps have fired (each exactly once: advanced by a
    # compare-and-set) and when the next is due (bot/durable/escalations.py).
    escalation_step: Mapped[int] = mapped_column(default=0, server_default="0")
    next_escalation_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class AuditRow(Base):
    """The append-only audit log. No foreign key: it outlives requests and records attempts
    on ids that never existed. Rows are inserted unsealed; the sealer (bot/audit/chain.py)
    gives each its place in the hash chain after commit."""

    __tablename__ = "audit_log"
    __table_args__ = (
        # The chain's order, and its head (the highest): one row per place.
        Index("ix_audit_log_chain_seq", "chain_seq", unique=True),
        # What the sealer has left to do, oldest first, without walking the sealed rows.
        Index("ix_audit_log_unsealed", "id", sqlite_where=UNSEALED, postgresql_where=UNSEALED),
        Index("ix_audit_log_at", "at"),  # --since / --until
    )

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime)
    action: Mapped[str] = mapped_column(String)
    request_id: Mapped[str | None] = mapped_column(String, index=True)
    actor_id: Mapped[str | None] = mapped_column(String)
    detail: Mapped[dict[str, Any]] = mapped_column(JsonType, default=dict, server_default="{}")
    chain_seq: Mapped[int | None] = mapped_column(BigInteger)
    prev_hash: Mapped[str | None] = mapped_column(String)
    hash: Mapped[str | None] = mapped_column(String)


class TranscriptRow(Base):
    """The agent transcript of one room, replaced at every tool boundary."""

    __tablename__ = "transcripts"

    room_id: Mapped[str] = mapped_column(String, primary_key=True)
    channel_id: Mapped[str] = mapped_column(String, primary_key=True)
    messages: Mapped[list[dict[str, Any]]] = mapped_column(JsonType)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)


class ClaimRow(Base):
    """Keys claimed once across every worker (e.g. a chat event delivered twice)."""

    __tablename__ = "claims"

    key: Mapped[str] = mapped_column(String, primary_key=True)
    claimed_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)


class RunRow(Base):
    """Who is running the agent of one room: a lease a live worker renews, adopted once lapsed."""

    __tablename__ = "runs"
    __table_args__ = (Index("ix_runs_active_lease_until", "active", "lease_until"),)

    room_id: Mapped[str] = mapped_column(String, primary_key=True)
    channel_id: Mapped[str] = mapped_column(String, primary_key=True)
    actor_id: Mapped[str | None] = mapped_column(String)
    owner: Mapped[str | None] = mapped_column(String)
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
    active: Mapped[bool]
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)
    # Who asked the run to stop, from a worker that does not run it: its owner stops it at
    # its next renewal (bot/durable/leases.py).
    stop_by: Mapped[str | None] = mapped_column(String)
    stop_reason: Mapped[str | None] = mapped_column(String)


class HolderRow(Base):
    """A worker holding requests, alive while it renews `alive_until` (its heartbeat)."""

    __tablename__ = "holders"

    worker_id: Mapped[str] = mapped_column(String, primary_key=True)
    alive_until: Mapped[datetime] = mapped_column(UTCDateTime)


class ProposalRow(Base):
    """A settle handed by a worker to the worker holding the request, which decides it."""

    __tablename__ = "proposals"

    id: Mapped[str] = mapped_column(String, primary_key=True)
    request_id: Mapped[str] = mapped_column(
        ForeignKey("requests.id", ondelete="CASCADE"), index=True
    )
    status: Mapped[str] = mapped_column(String)
    result: Mapped[str | None] = mapped_column(Text)
    reason: Mapped[str | None] = mapped_column(Text)
    by: Mapped[str | None] = mapped_column(String)
    at: Mapped[datetime] = mapped_column(UTCDateTime)


class HealthRow(Base):
    """One row a readiness check rewrites: proof that the database takes writes right now."""

    __tablename__ = "health"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    checked_at: Mapped[datetime] = mapped_column(UTCDateTime)
    checked_by: Mapped[str | None] = mapped_column(String)


class InboxRow(Base):
    """An interaction a surface received, written before it was acked (bot/durable/inbox.py):
    applied once (`applied_at`), and its key recognises a replay of the same signed request."""

    __tablename__ = "inbox"
    # "Unapplied, oldest first" (the sweep) and "applied before" (the pruning): index ranges.
    __table_args__ = (Index("ix_inbox_applied_at_received_at", "applied_at", "received_at"),)

    key: Mapped[str] = mapped_column(String, primary_key=True)
    surface: Mapped[str] = mapped_column(String)
    # What to apply; NULL for an interaction handled before its ack (only its key matters).
    payload: Mapped[dict[str, Any] | None] = mapped_column(NullableJson)
    received_at: Mapped[datetime] = mapped_column(UTCDateTime)
    applied_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class GateRunRow(Base):
    """The run of an approved (or granted) tool call: inserted once, by the worker that runs
    it (the claim), then finished with its result (bot/gates/gate.py)."""

    __tablename__ = "gate_runs"

    key: Mapped[str] = mapped_column(String, primary_key=True)
    request_id: Mapped[str | None] = mapped_column(String)
    tool_name: Mapped[str] = mapped_column(String)
    worker: Mapped[str] = mapped_column(String)
    claimed_at: Mapped[datetime] = mapped_column(UTCDateTime)
    lease_until: Mapped[datetime] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    result: Mapped[str | None] = mapped_column(Text)
    error: Mapped[str | None] = mapped_column(Text)
    refused: Mapped[bool] = mapped_column(default=False, server_default=false())
    outcome: Mapped[str | None] = mapped_column(Text)


class GrantRow(Base):
    """A tool allowed to run unasked for one actor in one room for a while (bot/gates/grants.py)."""

    __tablename__ = "grants"
    __table_args__ = (
        # A call finds the live grants of its room, actor and tool.
        Index("ix_grants_room_id_tool_name", "room_id", "tool_name"),
        # One grant per approval, however often its run is resumed.
        Index("ix_grants_request_id", "request_id", unique=True),
    )

    id: Mapped[str] = mapped_column(String, primary_key=True)
    room_id: Mapped[str] = mapped_column(String)
    actor_id: Mapped[str | None] = mapped_column(String)
    tool_name: Mapped[str] = mapped_column(String)
    arguments: Mapped[dict[str, Any]] = mapped_column(JsonType, default=dict, server_default="{}")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    granted_by: Mapped[str | None] = mapped_column(String)
    request_id: Mapped[str | None] = mapped_column(String)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    revoked_by: Mapped[str | None] = mapped_column(String)


class TokenRow(Base):
    """A bearer token of the doors (bot/doors/tokens.py): kept as its SHA-256, never as itself; its
    webhook secret signs the callbacks of its requests."""

    __tablename__ = "api_tokens"
    __table_args__ = (Index("ix_api_tokens_token_hash", "token_hash", unique=True),)

    name: Mapped[str] = mapped_column(String, primary_key=True)
    token_hash: Mapped[str] = mapped_column(String)
    webhook_secret: Mapped[str] = mapped_column(String)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # An admin token may also sign in to the admin console (adapters/doors/admin); others may not.
    # No Python default: an insert names the column only for an admin token, so today's
    # store still writes plain tokens on a schema before 0013.
    admin: Mapped[bool] = mapped_column(server_default=false())


class DoorRow(Base):
    """Who asked a request through a door (bot/doors/service.py), with what address, idempotency key
    (and the hash of the body asked with it) and callback URL. Inserted (reserved) before the
    request itself is written."""

    __tablename__ = "door_requests"
    __table_args__ = (
        # The same key from the same token is the same request, whichever worker it reaches.
        Index("ix_door_requests_requester_idempotency_key", "requester", "idempotency_key",
              unique=True),
        # A token's requests, newest first (paged by id).
        Index("ix_door_requests_requester_created_at", "requester", "created_at"),
    )  # fmt: skip

    request_id: Mapped[str] = mapped_column(String, primary_key=True)
    requester: Mapped[str] = mapped_column(String)
    address: Mapped[str] = mapped_column(String)
    idempotency_key: Mapped[str | None] = mapped_column(String)
    callback_url: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    body_hash: Mapped[str | None] = mapped_column(String(64))


class WebhookRow(Base):
    """A webhook delivery of a door request's settle (adapters/doors/api/webhooks.py): one per
    request,
    sent and retried by whichever worker claims it (`lease_until`, `worker`) until `done_at`."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        # Two workers enqueueing the same settle make one delivery (per A2A push config).
        Index(
            "ix_webhook_deliveries_request_id_push_config", "request_id", "push_config", unique=True
        ),
        # "Not done, earliest next_at first" (what to send next) as an index range scan, as
        # ix_requests_status_expires_at does for deadlines: done rows are not walked past.
        Index("ix_webhook_deliveries_done_at_next_at", "done_at", "next_at"),
    )

    id: Mapped[str] = mapped_column(String, primary_key=True)
    request_id: Mapped[str] = mapped_column(String)
    requester: Mapped[str] = mapped_column(String)
    url: Mapped[str] = mapped_column(Text)
    body: Mapped[str] = mapped_column(Text)  # the exact JSON sent (and signed)
    attempts: Mapped[int]
    first_at: Mapped[datetime] = mapped_column(UTCDateTime)
    next_at: Mapped[datetime] = mapped_column(UTCDateTime)
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
    worker: Mapped[str | None] = mapped_column(String)
    done_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    outcome: Mapped[str | None] = mapped_column(Text)
    # An A2A push notification's config id ("": the HTTP API's callback URL), and the token
    # it is sent with (X-A2A-Notification-Token): the caller's, to tell our POSTs from others.
    push_config: Mapped[str] = mapped_column(String, default="", server_default="")
    push_token: Mapped[str | None] = mapped_column(Text)
    push_authorization: Mapped[str | None] = mapped_column(Text)  # its Authorization header


class PushConfigRow(Base):
    """An A2A push notification config of a door request (adapters/doors/a2a/push.py): where its
    task is POSTed once it settles, through the webhook deliveries. At most a few a task."""

    __tablename__ = "push_configs"

    request_id: Mapped[str] = mapped_column(String, primary_key=True)
    id: Mapped[str] = mapped_column(String, primary_key=True)
    requester: Mapped[str] = mapped_column(String)
    url: Mapped[str] = mapped_column(Text)
    token: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    auth_scheme: Mapped[str | None] = mapped_column(String)  # Bearer or Basic (0022)
    auth_credentials: Mapped[str | None] = mapped_column(Text)


class VoteRow(Base):
    """One person's vote on a request its policy rule needs several people to decide
    (bot/policies/tally.py): one per person and request, of the arguments as they were then
    (their digest). Rows, so any worker counts every vote."""

    __tablename__ = "votes"

    request_id: Mapped[str] = mapped_column(
        ForeignKey("requests.id", ondelete="CASCADE"), primary_key=True
    )
    voter: Mapped[str] = mapped_column(String, primary_key=True)
    approve: Mapped[bool]
    reason: Mapped[str | None] = mapped_column(Text)
    arguments_digest: Mapped[str] = mapped_column(String)
    at: Mapped[datetime] = mapped_column(UTCDateTime)


class MessageCopyRow(Base):
    """Where a surface posted a copy of a request in a room other than its own (a policy's
    `deliver`: an approvals channel, an approver's DM, a Teams channel): one per request,
    surface and room, so every copy is edited when the request changes. The request's own
    room's message is `requests.message_refs`."""

    __tablename__ = "message_copies"

    request_id: Mapped[str] = mapped_column(
        ForeignKey("requests.id", ondelete="CASCADE"), primary_key=True
    )
    surface: Mapped[str] = mapped_column(String, primary_key=True)
    room_id: Mapped[str] = mapped_column(String, primary_key=True)
    ref: Mapped[dict[str, Any]] = mapped_column(JsonType)


class AdminSessionRow(Base):
    """A signed-in admin console session (adapters/doors/admin): its cookie is signed, and this row
    is what keeps it open: signing out deletes it, on every worker at once. Kept as the
    SHA-256 of the session's nonce, never the nonce itself."""

    __tablename__ = "admin_sessions"

    id: Mapped[str] = mapped_column(String, primary_key=True)
    holder: Mapped[str] = mapped_column(String)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)


metadata = Base.metadata
