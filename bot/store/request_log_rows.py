"""The SQL of the request log (bot/request_log.py): the admin console's filtered table, a
request's timeline, and the rows its figures are computed from."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, Row, Select, and_, func, or_, select

from bot.records import AuditEntry, RequestStatus
from bot.request_log import LoggedRequest, RequestFilter, Settled
from bot.store.journal import audit_entry
from bot.store.request_rows import record_of
from bot.store.tables import audit, door_requests, requests

TIMELINE_LIMIT = 1000  # audit rows of one request shown: a request has a handful
TOKEN_ACTOR = "token:"  # noqa: S105 (a prefix, not a secret); an actor filter naming a door's token, as the table shows it

JOINED = requests.outerjoin(door_requests, door_requests.c.request_id == requests.c.id)
LOGGED = select(requests, door_requests.c.requester.label("door_requester")).select_from(JOINED)
NEWEST_FIRST = (requests.c.created_at.desc(), requests.c.id.desc())
SETTLED_COLUMNS = select(
    requests.c.tool_name, requests.c.status, requests.c.created_at, requests.c.settled_at
)


def conditions(where: RequestFilter) -> list[ColumnElement[bool]]:
    """The WHERE clauses of `where` (LIKE's wildcards in `text` are escaped, not wild)."""
    found: list[ColumnElement[bool]] = []
    if where.text is not None:
        found.append(or_(
            requests.c.tool_name.icontains(where.text, autoescape=True),
            requests.c.id.icontains(where.text, autoescape=True),
        ))  # fmt: skip
    if where.status is not None:
        found.append(requests.c.status == where.status.value)
    if where.actor is not None:
        actor = where.actor
        asked = [requests.c.actor_id == actor, requests.c.settled_by == actor]
        if actor.startswith(TOKEN_ACTOR):
            asked.append(door_requests.c.requester == actor.removeprefix(TOKEN_ACTOR))
        found.append(or_(*asked))
    if where.tool is not None:
        found.append(requests.c.tool_name == where.tool)
    if where.room is not None:
        found.append(requests.c.room_id == where.room)
    if where.since is not None:
        found.append(requests.c.created_at >= where.since)
    if where.until is not None:
        found.append(requests.c.created_at < where.until)
    return found


def _logged(row: Row[Any]) -> LoggedRequest:
    return LoggedRequest(record_of(row), row.door_requester)


def page(conn: Connection, where: RequestFilter, offset: int, limit: int) -> list[LoggedRequest]:
    """One page of the filtered requests, newest first."""
    query: Select[Any] = LOGGED.where(*conditions(where)).order_by(*NEWEST_FIRST)
    return [_logged(row) for row in conn.execute(query.offset(offset).limit(limit))]


def after(
    conn: Connection, where: RequestFilter, mark: tuple[datetime, str] | None, limit: int
) -> list[LoggedRequest]:
    """The filtered requests older than `mark` (created_at, id) in the page order: a walk
    that neither skips nor repeats a request while new ones are made (an export's)."""
    query: Select[Any] = LOGGED.where(*conditions(where))
    if mark is not None:
        at, request_id = mark
        created = requests.c.created_at
        query = query.where(or_(created < at, and_(created == at, requests.c.id < request_id)))
    query = query.order_by(*NEWEST_FIRST).limit(limit)
    return [_logged(row) for row in conn.execute(query)]


def count(conn: Connection, where: RequestFilter) -> int:
    query = select(func.count()).select_from(JOINED).where(*conditions(where))
    return int(conn.execute(query).scalar_one())


def logged(conn: Connection, request_id: str) -> LoggedRequest | None:
    row = conn.execute(LOGGED.where(requests.c.id == request_id)).first()
    return _logged(row) if row is not None else None


def timeline(conn: Connection, request_id: str) -> list[AuditEntry]:
    """Every audit row of the request, oldest first (by id: the order they were written)."""
    query = (
        select(audit).where(audit.c.request_id == request_id).order_by(audit.c.id)
        .limit(TIMELINE_LIMIT)
    )  # fmt: skip
    return [audit_entry(row) for row in conn.execute(query)]


def settled_since(conn: Connection, since: datetime, limit: int) -> list[Settled]:
    """The requests made since `since` (the newest `limit`), for the figures."""
    query = (
        SETTLED_COLUMNS.where(requests.c.created_at >= since).order_by(*NEWEST_FIRST).limit(limit)
    )
    return [
        Settled(row.tool_name, RequestStatus(row.status), row.created_at, row.settled_at)
        for row in conn.execute(query)
    ]
