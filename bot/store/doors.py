"""The doors' tables: `api_tokens` (bearer tokens, as hashes) and `door_requests` (who asked a
request made through the HTTP API or MCP), and `DoorTables` (bot.doors.service.DoorStore,
bot.doors.tokens.TokenStore) over them on a SqlStore, each method one transaction."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Executable,
    Row,
    and_,
    bindparam,
    func,
    or_,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite

from bot.doors.task_lists import TaskQuery
from bot.records import Asked, AuditEntry, RequestRecord, RequestStatus, Token
from bot.store.request_rows import record_of
from bot.store.sql_store import SqlStore
from bot.store.tables import api_tokens, door_requests, requests

# -- tokens ------------------------------------------------------------------------------------

TOKEN_BY_HASH = select(api_tokens).where(
    api_tokens.c.token_hash == bindparam("token_hash"), api_tokens.c.revoked_at.is_(None)
)
LIST_TOKENS = select(api_tokens).order_by(api_tokens.c.created_at, api_tokens.c.name)
REVOKE_TOKEN = (
    update(api_tokens)
    .where(api_tokens.c.name == bindparam("b_name"), api_tokens.c.revoked_at.is_(None))
    .values(revoked_at=bindparam("b_at"))
)

LIVE_ADMIN = (
    select(api_tokens.c.name)
    .where(api_tokens.c.admin.is_(True), api_tokens.c.revoked_at.is_(None))
    .limit(1)
)


def token_of(row: Row[Any]) -> Token:
    return Token(
        row.name, row.token_hash, row.webhook_secret, row.created_at, row.revoked_at, row.admin
    )


def add_token(conn: Connection, token: Token) -> bool:
    """Insert the token; False if its name is taken (revoked or not)."""
    statement = _insert_new(conn, api_tokens, [api_tokens.c.name])
    values = {
        "name": token.name, "token_hash": token.token_hash,
        "webhook_secret": token.webhook_secret, "created_at": token.created_at,
    }  # fmt: skip
    if token.admin:  # named only when set: a plain token needs no column 0013 added
        values["admin"] = True
    return conn.execute(statement, values).rowcount == 1


def token_by_hash(conn: Connection, token_hash: str) -> Token | None:
    row = conn.execute(TOKEN_BY_HASH, {"token_hash": token_hash}).first()
    return token_of(row) if row is not None else None


def token_named(conn: Connection, name: str) -> Token | None:
    row = conn.execute(select(api_tokens).where(api_tokens.c.name == name)).first()
    return token_of(row) if row is not None else None


def list_tokens(conn: Connection) -> list[Token]:
    return [token_of(row) for row in conn.execute(LIST_TOKENS)]


def has_admin_token(conn: Connection) -> bool:
    """Whether any live admin token exists (else the console is for loopback only)."""
    return conn.execute(LIVE_ADMIN).first() is not None


def revoke_token(conn: Connection, name: str, at: datetime) -> bool:
    return conn.execute(REVOKE_TOKEN, {"b_name": name, "b_at": at}).rowcount == 1


# -- door requests -----------------------------------------------------------------------------

_DOOR_COLUMNS = ("request_id", "requester", "address", "created_at", "idempotency_key",
                 "callback_url", "body_hash")  # fmt: skip
# The request's columns by their names, the door's prefixed (both tables have `created_at`).
DOOR_JOINED = select(
    requests, *(door_requests.c[name].label(f"door_{name}") for name in _DOOR_COLUMNS)
).select_from(door_requests.outerjoin(requests, requests.c.id == door_requests.c.request_id))


def asked_of(row: Row[Any], prefix: str = "door_") -> Asked:
    values = row._mapping
    return Asked(**{name: values[f"{prefix}{name}"] for name in _DOOR_COLUMNS})


def _joined(row: Row[Any]) -> tuple[RequestRecord | None, Asked]:
    asked = asked_of(row)
    return (record_of(row) if row.id is not None else None), asked


def reserve(conn: Connection, asked: Asked) -> Asked:
    """Insert the door row; if this requester used its idempotency key before, that row."""
    statement = _insert_new(
        conn, door_requests, [door_requests.c.requester, door_requests.c.idempotency_key]
    )
    values = {name: getattr(asked, name) for name in _DOOR_COLUMNS}
    if asked.body_hash is None:  # named only when set: a row without needs no column 0019 added
        del values["body_hash"]
    if conn.execute(statement, values).rowcount == 1 or asked.idempotency_key is None:
        return asked
    same = and_(
        door_requests.c.requester == asked.requester,
        door_requests.c.idempotency_key == asked.idempotency_key,
    )
    row = conn.execute(select(door_requests).where(same)).first()
    assert row is not None  # it conflicted, so it is there (rows are never deleted but one's own)
    return asked_of(row, prefix="")


def drop(conn: Connection, request_id: str) -> None:
    conn.execute(door_requests.delete().where(door_requests.c.request_id == request_id))


def door(conn: Connection, request_id: str) -> tuple[RequestRecord | None, Asked] | None:
    row = conn.execute(DOOR_JOINED.where(door_requests.c.request_id == request_id)).first()
    return _joined(row) if row is not None else None


def settled_among(conn: Connection, request_ids: list[str]) -> list[str]:
    """Which of the requests are no longer pending (bot/doors/long_polls.py's sweep)."""
    query = select(requests.c.id).where(
        requests.c.id.in_(request_ids), requests.c.status != RequestStatus.PENDING.value
    )
    return [str(row.id) for row in conn.execute(query)]


def list_doors(
    conn: Connection,
    requester: str,
    status: RequestStatus | None,
    address: str | None,
    since: datetime | None,
    before: str | None,
    limit: int,
) -> list[tuple[RequestRecord, Asked]]:
    """A requester's requests, newest first; after the one `before` names, when given."""
    query = DOOR_JOINED.where(door_requests.c.requester == requester, requests.c.id.isnot(None))
    if status is not None:
        query = query.where(requests.c.status == status.value)
    if address is not None:
        query = query.where(door_requests.c.address == address)
    if since is not None:
        query = query.where(door_requests.c.created_at >= since)
    if before is not None:  # after `before` in the order below: older, or as old and less
        mark = (
            select(door_requests.c.created_at)
            .where(door_requests.c.request_id == before, door_requests.c.requester == requester)
            .scalar_subquery()
        )
        created = door_requests.c.created_at
        older = and_(created == mark, door_requests.c.request_id < before)
        query = query.where(or_(created < mark, older))
    query = query.order_by(door_requests.c.created_at.desc(), door_requests.c.request_id.desc())
    found = []
    for row in conn.execute(query.limit(limit)):
        record, asked = _joined(row)
        assert record is not None
        found.append((record, asked))
    return found


def _insert_new(conn: Connection, table: Any, keys: list[Any]) -> Executable:
    """INSERT … ON CONFLICT (keys) DO NOTHING in the connection's dialect."""
    dialect_insert: Any = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
    statement: Executable = dialect_insert(table).on_conflict_do_nothing(index_elements=keys)
    return statement


class DoorTables:
    """Tokens and door requests, on `store`."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store

    async def add_token(self, token: Token) -> bool:
        return await self.store.write(add_token, token)

    async def token_by_hash(self, token_hash: str) -> Token | None:
        return await self.store.read(token_by_hash, token_hash)

    async def token_named(self, name: str) -> Token | None:
        return await self.store.read(token_named, name)

    async def list_tokens(self) -> list[Token]:
        return await self.store.read(list_tokens)

    async def has_admin_token(self) -> bool:
        return await self.store.read(has_admin_token)

    async def revoke_token(self, name: str, at: datetime) -> bool:
        return await self.store.write(revoke_token, name, at)

    async def reserve_door(self, row: Asked) -> Asked:
        return await self.store.write(reserve, row)

    async def drop_door(self, request_id: str) -> None:
        await self.store.write(drop, request_id)

    async def door(self, request_id: str) -> tuple[RequestRecord | None, Asked] | None:
        return await self.store.read(door, request_id)

    async def settled_among(self, request_ids: list[str]) -> list[str]:
        return await self.store.read(settled_among, request_ids)

    async def list_doors(
        self,
        requester: str,
        *,
        status: RequestStatus | None,
        address: str | None,
        since: datetime | None,
        before: str | None,
        limit: int,
    ) -> list[tuple[RequestRecord, Asked]]:
        return await self.store.read(list_doors, requester, status, address, since, before, limit)

    async def list_tasks(
        self, requester: str, query: TaskQuery
    ) -> tuple[list[tuple[RequestRecord, Asked]], int]:
        return await self.store.read(list_tasks, requester, query)

    async def append_audit(self, entry: AuditEntry) -> None:
        await self.store.append_audit(entry)


# -- a token's door requests as a list of tasks (bot/doors/task_lists.py): one query on
# `door_requests` joined to `requests`, newest status time first, and the count of all that
# match (the page aside).

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
