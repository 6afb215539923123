"""The `requests` table: create, the settle's compare-and-set, and the reads of requests.

A row and a `PendingInput` (the store's `RequestRecord`) carry the same names: the mapping
between them is by name, once, in `row_values` and `record_of`. A request's transitions are its
audit rows (request.created, then request.<status>): written in the same transaction as the
change they record, so there is no second table repeating them.

Each write is one transaction. On SQLite it is a body of a few statements run in the store's
executor (bot/store/sqlite_executor.py) on the raw connection (bot/store/prepared.py). On PostgreSQL
it is one statement, its steps data-modifying CTEs (`CREATE_ONE`, `SETTLE_ONE`): one round trip,
in autocommit, and as atomic as the body.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import (
    Connection,
    Row,
    String,
    bindparam,
    delete,
    exists,
    func,
    insert,
    literal,
    or_,
    select,
    update,
)

from bot.audit.redaction import redact, redact_text
from bot.records import NO_REFS, EscalationState, PendingInput, RequestStatus, Settlement
from bot.store.prepared import execute
from bot.store.schema import JsonType, UTCDateTime
from bot.store.tables import PENDING, audit, holders, proposals, requests, unnested

SETTLED_CHANNEL = "hitl_settled"  # PostgreSQL NOTIFY channel: payload = the request id

# The record's fields that are columns (its handler-only fields are not).
RECORD_COLUMNS = tuple(
    f.name for f in dataclasses.fields(PendingInput) if f.init and f.name in requests.c
)
AUDIT_COLUMNS = ("at", "action", "request_id", "actor_id", "detail")

INSERT_REQUEST = insert(requests).values({c.key: bindparam(c.key) for c in requests.c})
INSERT_AUDIT = insert(audit).values({name: bindparam(name) for name in AUDIT_COLUMNS})
NOTIFY = select(func.pg_notify(bindparam("channel"), bindparam("id")))

# The row's holder is a live worker: its heartbeat has not lapsed (bot/human_input/holding.py).
HELD_BY_LIVE_WORKER = exists().where(
    holders.c.worker_id == requests.c.held_by, holders.c.alive_until >= bindparam("now")
)


def may_settle(worker: Any) -> Any:
    """Who may settle a pending request: anyone if no live worker holds it, else only its
    holder (`worker`: the settling worker's id, a parameter or a column)."""
    return or_(requests.c.held_by.is_(None), requests.c.held_by == worker, ~HELD_BY_LIVE_WORKER)


MAY_SETTLE = may_settle(bindparam("worker"))
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


def audit_of(source: Any, action: Any) -> Any:
    """INSERT INTO audit_log ... SELECT the audit values, one row per row of `source` (a CTE
    whose `id` is the request's): the audit row is written exactly when `source` has a row."""
    return insert(audit).from_select(
        list(AUDIT_COLUMNS),
        select(
            bindparam("at", type_=UTCDateTime()),
            action,
            source.c.id,
            bindparam("actor_id", type_=String()),
            bindparam("detail", type_=JsonType),
        ).select_from(source),
    )


# PostgreSQL: the request and its audit row in one statement.
_created = INSERT_REQUEST.returning(requests.c.id).cte("created")
_created_logged = audit_of(_created, literal("request.created")).returning(audit.c.id)
CREATE_ONE = select(func.count()).select_from(_created_logged.cte("created_logged"))

# PostgreSQL: the compare-and-set; if it won, the proposal it applied deleted, its audit row,
# and the NOTIFY (delivered at commit, to every worker listening: the waiter may be elsewhere).
_won = SETTLE.returning(requests.c.id).cte("won")
_applied = DELETE_PROPOSAL.where(exists().select_from(_won)).cte("applied")
_settled_logged = audit_of(_won, bindparam("action", type_=String())).cte("settled_logged")
SETTLE_ONE = (
    select(func.pg_notify(SETTLED_CHANNEL, _won.c.id))
    .select_from(_won)
    .add_cte(_applied, _settled_logged)
)

# PostgreSQL's group commit (bot/store/pg_groups.py): several creates, or several settles
# (of different requests), in one statement, their values as arrays column by column.
REQUEST_KEYS = tuple(column.key for column in requests.c)
CREATE_ARRAYS = (*REQUEST_KEYS, "detail")
SETTLE_ARRAYS = ("request_id", "new_status", "new_result", "new_reason", "new_by", "new_at",
                 "proposal", "worker", "action", "detail")  # fmt: skip


_asked_rows = unnested(
    "asked_rows", CREATE_ARRAYS, {**{c.key: c.type for c in requests.c}, "detail": JsonType}
)
_made = (
    insert(requests)
    .from_select(list(REQUEST_KEYS), select(*(_asked_rows.c[key] for key in REQUEST_KEYS)))
    .returning(requests.c.id)
    .cte("made")
)
_made_logged = insert(audit).from_select(
    list(AUDIT_COLUMNS),
    select(
        _asked_rows.c.created_at, literal("request.created"), _made.c.id,
        _asked_rows.c.actor_id, _asked_rows.c.detail,
    ).select_from(_made.join(_asked_rows, _asked_rows.c.id == _made.c.id)),
).cte("made_logged")  # fmt: skip
CREATE_MANY = select(_made.c.id).add_cte(_made_logged)

_settles = unnested("settles", SETTLE_ARRAYS, {
    "request_id": String(), "new_status": String(), "new_result": String(),
    "new_reason": String(), "new_by": String(), "new_at": UTCDateTime(), "proposal": String(),
    "worker": String(), "action": String(), "detail": JsonType,
})  # fmt: skip
_won_many = (
    update(requests)
    .where(
        requests.c.id == _settles.c.request_id,
        requests.c.status == PENDING,
        may_settle(_settles.c.worker),
    )
    .values(
        status=_settles.c.new_status,
        result=_settles.c.new_result,
        reason=_settles.c.new_reason,
        settled_by=_settles.c.new_by,
        settled_at=_settles.c.new_at,
        settled_proposal=_settles.c.proposal,
        held_by=None,
    )
    .returning(requests.c.id)
    .cte("won_many")
)
_applied_many = (
    delete(proposals)
    .where(proposals.c.id == _settles.c.proposal, _settles.c.request_id == _won_many.c.id)
    .cte("applied_many")
)
_settled_many_logged = insert(audit).from_select(
    list(AUDIT_COLUMNS),
    select(
        _settles.c.new_at, _settles.c.action, _won_many.c.id, _settles.c.new_by,
        _settles.c.detail,
    ).select_from(_won_many.join(_settles, _settles.c.request_id == _won_many.c.id)),
).cte("settled_many_logged")  # fmt: skip
SETTLE_MANY = select(
    _won_many.c.id.label("request_id"), func.pg_notify(SETTLED_CHANNEL, _won_many.c.id)
).add_cte(_applied_many, _settled_many_logged)

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
# PostgreSQL, in one statement: the reference merged in (`message_refs || {surface: ref}`,
# under the row's lock, so two surfaces posting at once both keep theirs) and, for the
# surface's first post, the request.delivered audit row. A row comes back if the request is.
_before = (
    select(requests.c.id, requests.c.message_refs)
    .where(requests.c.id == bindparam("request_id"))
    .with_for_update()
    .cte("before")
)
_merged = (
    update(requests)
    .where(requests.c.id == _before.c.id)
    .values(message_refs=requests.c.message_refs.op("||")(bindparam("patch", type_=JsonType)))
    .cte("merged")
)
_delivered = audit_of(
    select(_before.c.id)
    .where(~_before.c.message_refs.bool_op("?")(bindparam("surface", type_=String())))
    .cte("first_post"),
    literal("request.delivered"),
).cte("delivered")
SET_MESSAGE_REF_ONE = select(_before.c.id).add_cte(_merged, _delivered)

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
    values["settled_proposal"] = None
    values["escalation_step"] = record.escalation_step
    values["next_escalation_at"] = record.next_escalation_at
    return values


def record_of(row: Row[Any] | Mapping[str, Any]) -> PendingInput:
    columns = cast(Mapping[str, Any], row._mapping if isinstance(row, Row) else row)
    values = {name: columns[name] for name in RECORD_COLUMNS}
    values["status"] = RequestStatus(values["status"])
    values["message_refs"] = values["message_refs"] or NO_REFS
    if columns["escalation_step"] or columns["next_escalation_at"] is not None:
        step, next_at = columns["escalation_step"], columns["next_escalation_at"]
        values["escalation"] = EscalationState(step, next_at)
    return PendingInput(**values)


def created_values(
    record: PendingInput, holder: str | None, secret: frozenset[str]
) -> dict[str, Any]:
    """The row and its audit row's values: the arguments shown (`secret` keys redacted) and
    where it was asked."""
    values = row_values(record, holder)
    values.update(at=record.created_at, action="request.created", request_id=record.id, detail={
        "tool_name": record.tool_name,
        "arguments": redact(record.arguments, secret),
        "room_id": record.room_id,
        # Room ids start with their surface's name ("slack:C1:1.2", "teams:19:…").
        "surface": record.room_id.partition(":")[0] if ":" in record.room_id else None,
        "channel_id": record.channel_id,
        "channel_type": record.channel_type,
        "tool_call_id": record.tool_call_id,
        "detached": record.detached,
        "expires_at": None if record.expires_at is None else record.expires_at.isoformat(),
    })  # fmt: skip
    if record.origin is not None:  # asked through a door: which, and by which token
        values["detail"].update(door=record.origin.door, requester=record.origin.requester)
    return values


def settle_values(settlement: Settlement, now: datetime, secret: frozenset[str]) -> dict[str, Any]:
    """The compare-and-set's values and its audit row's (the answer, `secret` keys redacted)."""
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
    return {
        "request_id": settlement.request_id,
        "new_status": settlement.status.value,
        "new_result": settlement.result,
        "new_reason": settlement.reason,
        "new_by": settlement.by,
        "new_at": settlement.at,
        "proposal": settlement.proposal,
        "worker": settlement.worker,
        "now": now,
        "at": settlement.at,
        "action": f"request.{settlement.status.value}",
        "actor_id": settlement.by,
        "detail": detail,
    }


CREATED = (INSERT_REQUEST, INSERT_AUDIT)  # what `create` runs (bot/store/prepared.Bound)
SETTLED = (SETTLE, DELETE_PROPOSAL, INSERT_AUDIT)  # what `settle` may run


def create(conn: Connection, values: Mapping[str, Any]) -> None:
    """SQLite: the request and its audit row (`created_values`)."""
    execute(conn, INSERT_REQUEST, values)
    execute(conn, INSERT_AUDIT, values)


def settle(conn: Connection, values: Mapping[str, Any]) -> bool:
    """SQLite: the compare-and-set (`settle_values`) and, only if it won, its audit row (and
    the proposal it applied, deleted)."""
    if execute(conn, SETTLE, values).rowcount != 1:
        return False
    if values["proposal"] is not None:
        execute(conn, DELETE_PROPOSAL, values)
    execute(conn, INSERT_AUDIT, values)
    return True


def message_ref_values(request_id: str, surface: str, ref: dict[str, Any]) -> dict[str, Any]:
    """Where `surface` posted the request, and its request.delivered audit row's values."""
    return {
        "request_id": request_id,
        "surface": surface,
        "patch": {surface: ref},
        "at": datetime.now(UTC),
        "actor_id": None,
        "detail": {"surface": surface, "ref": ref},
    }


def set_message_ref(conn: Connection, values: Mapping[str, Any]) -> None:
    """SQLite: keep where a surface posted the request (`message_ref_values`); its first post
    is audited as delivered. KeyError for an unknown request."""
    request_id, surface = values["request_id"], values["surface"]
    refs = conn.execute(LOCK_MESSAGE_REFS, {"request_id": request_id}).scalar()
    if refs is None:
        raise KeyError(request_id)
    conn.execute(SET_MESSAGE_REFS, {"request_id": request_id, "refs": {**refs, **values["patch"]}})
    if surface not in refs:
        conn.execute(INSERT_AUDIT, {**values, "action": "request.delivered"})
