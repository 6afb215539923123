"""Reading the audit log for lists and exports: filtered pages, keyed by id.

Each page is one short query (`id` after or before the last one seen, LIMIT n), so a
million-row export holds one page in memory at a time on either database, and never a long
transaction. Each row comes with its request's tool, room and status (an outer join: rows of
requests gone, or of no request, keep what their own detail says).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Row, Select, func, or_, select

from bot.audit.query import AuditFilter, AuditLine
from bot.store.tables import audit, requests

tool_of = func.coalesce(requests.c.tool_name, audit.c.detail["tool_name"].as_string())
room_of = func.coalesce(requests.c.room_id, audit.c.detail["room_id"].as_string())
LINES = select(
    audit, tool_of.label("tool"), room_of.label("room"), requests.c.status.label("status")
).select_from(audit.outerjoin(requests, requests.c.id == audit.c.request_id))


def filtered(wanted: AuditFilter) -> Select[Any]:
    query = LINES
    if wanted.since is not None:
        query = query.where(audit.c.at >= wanted.since)
    if wanted.until is not None:
        query = query.where(audit.c.at < wanted.until)
    if wanted.actor is not None:
        query = query.where(audit.c.actor_id == wanted.actor)
    if wanted.tool is not None:
        query = query.where(tool_of == wanted.tool)
    if wanted.room is not None:
        query = query.where(room_of == wanted.room)
    if wanted.status is not None:
        query = query.where(requests.c.status == wanted.status)
    if wanted.action is not None:
        family = audit.c.action.startswith(wanted.action + ".", autoescape=True)
        query = query.where(or_(audit.c.action == wanted.action, family))
    if wanted.request_id is not None:
        query = query.where(audit.c.request_id == wanted.request_id)
    return query


def page(
    conn: Connection, wanted: AuditFilter, after: int | None, newest_first: bool, limit: int
) -> list[AuditLine]:
    """Up to `limit` matching rows past id `after` (None: from the start), in id order."""
    query = filtered(wanted)
    if newest_first:
        query = query.order_by(audit.c.id.desc())
        if after is not None:
            query = query.where(audit.c.id < after)
    else:
        query = query.order_by(audit.c.id)
        if after is not None:
            query = query.where(audit.c.id > after)
    return [line_of(row) for row in conn.execute(query.limit(limit))]


def line_of(row: Row[Any]) -> AuditLine:
    return AuditLine(
        id=row.id, at=row.at, action=row.action, request_id=row.request_id,
        actor_id=row.actor_id, detail=row.detail or {}, tool=row.tool, room=row.room,
        status=row.status, chain_seq=row.chain_seq, prev_hash=row.prev_hash, hash=row.hash,
    )  # fmt: skip
