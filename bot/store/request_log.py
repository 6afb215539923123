"""The request log's SQL (bot/reports/request_log.py): the admin console's filtered table, a
request's timeline, and the rows its figures are computed from; and `RequestLog`
(bot.reports.request_log.RequestLogStore) over them on a SqlStore, each method one read."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, Row, Select, and_, func, or_, select

from bot.records import AuditEntry, RequestStatus
from bot.reports.request_log import TOKEN_ASKER, DecidedRequest, LoggedRequest, RequestFilter
from bot.store.journal import audit_entry
from bot.store.request_rows import record_of
from bot.store.sql_store import SqlStore
from bot.store.tables import audit, door_requests, message_copies, requests

TIMELINE_LIMIT = 1000  # audit rows of one request shown: a request has a handful

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
        found.append(_by(where.actor))
    if where.tool is not None:
        found.append(requests.c.tool_name == where.tool)
    if where.room is not None:
        found.append(requests.c.room_id == where.room)
    if where.since is not None:
        found.append(requests.c.created_at >= where.since)
    if where.until is not None:
        found.append(requests.c.created_at < where.until)
    return found


def _by(actor: str) -> ColumnElement[bool]:
    """Asked by `actor` (LoggedRequest.asked_by: a door's `token:NAME`, else the person whose
    turn asked; a door request's actor is whom it was for) or decided by them."""
    if actor.startswith(TOKEN_ASKER):
        return door_requests.c.requester == actor.removeprefix(TOKEN_ASKER)
    asked = and_(requests.c.actor_id == actor, door_requests.c.requester.is_(None))
    return or_(asked, requests.c.settled_by == actor)


def _logged(conn: Connection, rows: list[Row[Any]]) -> list[LoggedRequest]:
    """The rows as LoggedRequests, each with the rooms of its copies (one more query)."""
    ids = [row.id for row in rows]
    copies: dict[str, list[str]] = {}
    if ids:
        query = (
            select(message_copies.c.request_id, message_copies.c.room_id)
            .where(message_copies.c.request_id.in_(ids))
            .order_by(message_copies.c.request_id, message_copies.c.surface,
                      message_copies.c.room_id)
        )  # fmt: skip
        for request_id, room_id in conn.execute(query):
            copies.setdefault(request_id, []).append(room_id)
    return [
        LoggedRequest(record_of(row), row.door_requester, tuple(copies.get(row.id, ())))
        for row in rows
    ]


def page(conn: Connection, where: RequestFilter, offset: int, limit: int) -> list[LoggedRequest]:
    """One page of the filtered requests, newest first."""
    query: Select[Any] = LOGGED.where(*conditions(where)).order_by(*NEWEST_FIRST)
    return _logged(conn, list(conn.execute(query.offset(offset).limit(limit))))


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
    return _logged(conn, list(conn.execute(query)))


def count(conn: Connection, where: RequestFilter) -> int:
    query = select(func.count()).select_from(JOINED).where(*conditions(where))
    return int(conn.execute(query).scalar_one())


def logged(conn: Connection, request_id: str) -> LoggedRequest | None:
    row = conn.execute(LOGGED.where(requests.c.id == request_id)).first()
    return _logged(conn, [row])[0] if row is not None else None


def timeline(conn: Connection, request_id: str) -> list[AuditEntry]:
    """Every audit row of the request, oldest first (by id: the order they were written)."""
    query = (
        select(audit).where(audit.c.request_id == request_id).order_by(audit.c.id)
        .limit(TIMELINE_LIMIT)
    )  # fmt: skip
    return [audit_entry(row) for row in conn.execute(query)]


def settled_since(conn: Connection, since: datetime, limit: int) -> list[DecidedRequest]:
    """The requests made since `since` (the newest `limit`), for the figures."""
    query = (
        SETTLED_COLUMNS.where(requests.c.created_at >= since).order_by(*NEWEST_FIRST).limit(limit)
    )
    return [
        DecidedRequest(row.tool_name, RequestStatus(row.status), row.created_at, row.settled_at)
        for row in conn.execute(query)
    ]


class RequestLog:
    """The requests and their audit rows as an admin reads them, on `store`."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store

    async def page(self, where: RequestFilter, offset: int, limit: int) -> list[LoggedRequest]:
        return await self.store.read(page, where, offset, limit)

    async def after(
        self, where: RequestFilter, mark: tuple[datetime, str] | None, limit: int
    ) -> list[LoggedRequest]:
        return await self.store.read(after, where, mark, limit)

    async def count(self, where: RequestFilter) -> int:
        return await self.store.read(count, where)

    async def logged(self, request_id: str) -> LoggedRequest | None:
        return await self.store.read(logged, request_id)

    async def timeline(self, request_id: str) -> list[AuditEntry]:
        return await self.store.read(timeline, request_id)

    async def settled_since(self, since: datetime, limit: int) -> list[DecidedRequest]:
        return await self.store.read(settled_since, since, limit)

    async def append_audit(self, entry: AuditEntry) -> None:
        await self.store.append_audit(entry)
