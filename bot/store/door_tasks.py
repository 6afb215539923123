"""A token's door requests as a list of tasks (bot/doors/task_lists.py): one query on
`door_requests` joined to `requests`, newest status time first, and the count of all that match
(the page aside)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, Connection, and_, func, or_, select

from bot.doors.task_lists import TaskQuery
from bot.records import Asked, RequestRecord
from bot.store.doors import DOOR_JOINED, asked_of
from bot.store.request_rows import record_of
from bot.store.tables import door_requests, requests

status_time: ColumnElement[Any] = func.coalesce(requests.c.settled_at, requests.c.created_at)


def list_tasks(
    conn: Connection, requester: str, query: TaskQuery
) -> tuple[list[tuple[RequestRecord, Asked]], int]:
    """The page of the requester's requests `query` asks for, and how many match in all."""
    matching = _filters(requester, query)
    counted = select(func.count()).select_from(
        door_requests.join(requests, requests.c.id == door_requests.c.request_id)
    )
    total = int(conn.execute(counted.where(*matching)).scalar_one())
    paged = DOOR_JOINED.where(*matching)
    if query.after is not None:
        mark = query.after
        older = and_(status_time == mark.at, door_requests.c.request_id < mark.request_id)
        paged = paged.where(or_(status_time < mark.at, older))
    paged = paged.order_by(status_time.desc(), door_requests.c.request_id.desc())
    rows = [(record_of(row), asked_of(row)) for row in conn.execute(paged.limit(query.limit))]
    return rows, total


def _filters(requester: str, query: TaskQuery) -> list[Any]:
    found: list[Any] = [door_requests.c.requester == requester, requests.c.id.isnot(None)]
    if query.statuses:
        found.append(requests.c.status.in_([status.value for status in query.statuses]))
    if query.since is not None:
        found.append(query.since <= status_time)
    if query.key_suffix is not None or query.or_id is not None:
        key = door_requests.c.idempotency_key
        keyed = and_(
            key.startswith(query.key_prefix or "", autoescape=True),
            key.endswith(query.key_suffix or "", autoescape=True),
        )
        found.append(or_(keyed, door_requests.c.request_id == (query.or_id or "")))
    return found
