"""The `requests` table: create, the settle's compare-and-set, and the reads of requests.

A row and a `PendingInput` (the store's `RequestRecord`) carry the same names: the mapping
between them is by name, once, in `row_values` and `record_of`.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    Connection,
    Row,
    bindparam,
    delete,
    exists,
    func,
    insert,
    or_,
    select,
    update,
)

from bot.records import NO_REFS, EscalationState, PendingInput, RequestStatus, Settlement
from bot.redaction import redact, redact_text
from bot.store.tables import PENDING, audit, holders, proposals, requests, transitions

SETTLED_CHANNEL = "hitl_settled"  # PostgreSQL NOTIFY channel: payload = the request id

# The record's fields that are columns (its handler-only fields are not).
RECORD_COLUMNS = tuple(
    f.name for f in dataclasses.fields(PendingInput) if f.init and f.name in requests.c
)

INSERT_REQUEST = insert(requests)
INSERT_TRANSITION = insert(transitions)
INSERT_AUDIT = insert(audit)
NOTIFY = select(func.pg_notify(bindparam("channel"), bindparam("id")))

# The row's holder is a live worker: its heartbeat has not lapsed (bot/human_input/holding.py).
HELD_BY_LIVE_WORKER = exists().where(
    holders.c.worker_id == requests.c.held_by, holders.c.alive_until >= bindparam("now")
)
# Who may settle a pending request: anyone if no live worker holds it, else only its holder.
MAY_SETTLE = or_(
    requests.c.held_by.is_(None),
    requests.c.held_by == bindparam("worker"),
    ~HELD_BY_LIVE_WORKER,
)
# The compare-and-set: only a request still pending matches, so only one settle can win.
SETTLE = (
    update(requests)
    .where(requests.c.id == bindparam("request_id"), requests.c.status == PENDING, MAY_SETTLE)
    .values(
        status=bindparam("new_status"),
        result=bindparam("new_result"),
        reason=bindparam("new_reason"),
        settled_by=bindparam("new_by"),
        settled_at=bindparam("new_at"),
        settled_proposal=bindparam("proposal"),
        held_by=None,
    )
)
DELETE_PROPOSAL = delete(proposals).where(proposals.c.id == bindparam("proposal"))
GET_REQUEST = select(requests).where(requests.c.id == bindparam("request_id"))
LIST_PENDING = (
    select(requests)
    .where(requests.c.status == PENDING)
    .order_by(requests.c.created_at, requests.c.id)
)
DECIDED = (
    select(requests)
    .where(requests.c.status != PENDING, requests.c.settled_at >= bindparam("since"))
    .order_by(requests.c.settled_at.desc(), requests.c.id)
    .limit(bindparam("limit"))
)
# Both deadline queries are range scans of ix_requests_status_expires_at.
DUE = (
    select(requests)
    .where(requests.c.status == PENDING, requests.c.expires_at <= bindparam("now"))
    .order_by(requests.c.expires_at)
    .limit(bindparam("limit"))
)
NEXT_DEADLINE = (
    select(requests.c.expires_at)
    .where(requests.c.status == PENDING, requests.c.expires_at.is_not(None))
    .order_by(requests.c.expires_at)
    .limit(1)
)
# FOR UPDATE (PostgreSQL) and BEGIN IMMEDIATE (SQLite) keep two surfaces that post at once
# from overwriting each other's reference.
LOCK_MESSAGE_REFS = (
    select(requests.c.message_refs)
    .where(requests.c.id == bindparam("request_id"))
    .with_for_update()
)
SET_MESSAGE_REFS = (
    update(requests)
    .where(requests.c.id == bindparam("request_id"))
    .values(message_refs=bindparam("refs"))
)
FOR_TOOL_CALL = (
    select(requests)
    .where(requests.c.tool_call_id == bindparam("tool_call_id"))
    .order_by(requests.c.created_at.desc())
    .limit(1)
)
PENDING_IN_ROOM = (
    select(requests)
    .where(requests.c.room_id == bindparam("room_id"), requests.c.status == PENDING)
    .order_by(requests.c.created_at)
)


def row_values(record: PendingInput, holder: str | None) -> dict[str, Any]:
    values = {name: getattr(record, name) for name in RECORD_COLUMNS}
    values["status"] = record.status.value
    values["held_by"] = holder
    values["escalation_step"] = record.escalation_step
    values["next_escalation_at"] = record.next_escalation_at
    return values


def record_of(row: Row[Any]) -> PendingInput:
    values = {name: getattr(row, name) for name in RECORD_COLUMNS}
    values["status"] = RequestStatus(values["status"])
    values["message_refs"] = values["message_refs"] or NO_REFS
    if row.escalation_step or row.next_escalation_at is not None:
        values["escalation"] = EscalationState(row.escalation_step, row.next_escalation_at)
    return PendingInput(**values)


def create(
    conn: Connection, record: PendingInput, holder: str | None, secret: frozenset[str] = frozenset()
) -> None:
    """The request with its transition and audit rows; the audit row keeps the arguments
    shown (`secret` keys redacted) and where it was asked."""
    conn.execute(INSERT_REQUEST, row_values(record, holder))
    conn.execute(INSERT_TRANSITION, {
        "request_id": record.id,
        "from_status": None,
        "to_status": record.status.value,
        "at": record.created_at,
        "by": record.actor_id,
        "detail": {},
    })  # fmt: skip
    conn.execute(INSERT_AUDIT, {
        "at": record.created_at,
        "action": "request.created",
        "request_id": record.id,
        "actor_id": record.actor_id,
        "detail": {
            "tool_name": record.tool_name,
            "arguments": redact(record.arguments, secret),
            "room_id": record.room_id,
            "channel_id": record.channel_id,
            "channel_type": record.channel_type,
            "tool_call_id": record.tool_call_id,
            "detached": record.detached,
            "expires_at": None if record.expires_at is None else record.expires_at.isoformat(),
        },
    })  # fmt: skip


def settle(
    conn: Connection,
    settlement: Settlement,
    notify: bool,
    now: datetime,
    secret: frozenset[str] = frozenset(),
) -> bool:
    """The compare-and-set with its transition and audit rows, written only if it won (the
    audit row's answer with `secret` keys redacted)."""
    won = conn.execute(SETTLE, {
        "request_id": settlement.request_id,
        "new_status": settlement.status.value,
        "new_result": settlement.result,
        "new_reason": settlement.reason,
        "new_by": settlement.by,
        "new_at": settlement.at,
        "proposal": settlement.proposal,
        "worker": settlement.worker,
        "now": now,
    })  # fmt: skip
    if won.rowcount != 1:
        return False
    if settlement.proposal is not None:  # applied: the proposal is done with
        conn.execute(DELETE_PROPOSAL, {"proposal": settlement.proposal})
    conn.execute(INSERT_TRANSITION, {
        "request_id": settlement.request_id,
        "from_status": PENDING,
        "to_status": settlement.status.value,
        "at": settlement.at,
        "by": settlement.by,
        "detail": {} if settlement.reason is None else {"reason": settlement.reason},
    })  # fmt: skip
    detail = {
        key: value
        for key, value in (
            ("result", redact_text(settlement.result, secret)),
            ("reason", settlement.reason),
        )
        if value is not None
    }
    if settlement.by_detail:  # who, as people know them: a display name, the surface
        detail.update(settlement.by_detail)
    conn.execute(INSERT_AUDIT, {
        "at": settlement.at,
        "action": f"request.{settlement.status.value}",
        "request_id": settlement.request_id,
        "actor_id": settlement.by,
        "detail": detail,
    })  # fmt: skip
    if notify:  # delivered at commit, to every worker listening: the waiter may be elsewhere
        conn.execute(NOTIFY, {"channel": SETTLED_CHANNEL, "id": settlement.request_id})
    return True


def set_message_ref(conn: Connection, request_id: str, surface: str, ref: dict[str, Any]) -> None:
    """Keep where `surface` posted the request; its first post is audited as delivered."""
    refs = conn.execute(LOCK_MESSAGE_REFS, {"request_id": request_id}).scalar()
    if refs is None:
        raise KeyError(request_id)
    conn.execute(SET_MESSAGE_REFS, {"request_id": request_id, "refs": {**refs, surface: ref}})
    if surface not in refs:
        conn.execute(INSERT_AUDIT, {
            "at": datetime.now(UTC),
            "action": "request.delivered",
            "request_id": request_id,
            "actor_id": None,
            "detail": {"surface": surface, "ref": ref},
        })  # fmt: skip
