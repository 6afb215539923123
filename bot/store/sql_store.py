"""`SqlStore`: the `RequestStore` the core talks to, on SQLite (aiosqlite) or PostgreSQL (asyncpg).

Every public method is one transaction. A settle is a single compare-and-set UPDATE; its
transition and audit rows are written in the same transaction only when it won, so exactly one
settle of a request ever leaves a trace, whichever process or task raced for it.

Throughput notes: statements are built once at import (building and cache-keying a statement per
call cost more than running it), and each transaction body runs as one synchronous function via
`run_sync`, so its statements go back to back instead of each paying an await round trip through
SQLAlchemy's async layer.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any, Concatenate, ParamSpec, TypeVar, cast

from alembic.runtime.migration import MigrationContext
from sqlalchemy import (
    Connection,
    Executable,
    Row,
    Table,
    bindparam,
    delete,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.records import AuditEntry, RequestRecord, RequestStatus, RunRecord, Settlement
from bot.store.engine import WRITE_OPTION, create_engine, create_sqlite_thread_engine
from bot.store.migrate import head_revision
from bot.store.schema import (
    AuditRow,
    ClaimRow,
    RequestRow,
    RunRow,
    TranscriptRow,
    TransitionRow,
)

P = ParamSpec("P")
T = TypeVar("T")

_PENDING = RequestStatus.PENDING.value

# A claim only has to outlive redeliveries of its event (Slack retries within minutes); older
# claims are deleted every CLAIM_PRUNE_EVERY claims so the table stays small.
CLAIM_RETENTION = timedelta(days=1)
CLAIM_PRUNE_EVERY = 1000

_requests = cast(Table, RequestRow.__table__)
_transitions = cast(Table, TransitionRow.__table__)
_audit = cast(Table, AuditRow.__table__)
_transcripts = cast(Table, TranscriptRow.__table__)
_claims = cast(Table, ClaimRow.__table__)
_runs = cast(Table, RunRow.__table__)

SETTLED_CHANNEL = "hitl_settled"  # PostgreSQL NOTIFY channel: payload = the request id

_INSERT_REQUEST = insert(_requests)
_INSERT_TRANSITION = insert(_transitions)
_INSERT_AUDIT = insert(_audit)
# The compare-and-set: only a request still pending matches, so only one settle can win.
_SETTLE = (
    update(_requests)
    .where(_requests.c.id == bindparam("request_id"), _requests.c.status == _PENDING)
    .values(
        status=bindparam("new_status"),
        result=bindparam("new_result"),
        reason=bindparam("new_reason"),
        settled_by=bindparam("new_by"),
        settled_at=bindparam("new_at"),
    )
)
_GET_REQUEST = select(_requests).where(_requests.c.id == bindparam("request_id"))
_LIST_PENDING = (
    select(_requests)
    .where(_requests.c.status == _PENDING)
    .order_by(_requests.c.created_at, _requests.c.id)
)
# Both deadline queries are range scans of ix_requests_status_expires_at.
_DUE = (
    select(_requests)
    .where(_requests.c.status == _PENDING, _requests.c.expires_at <= bindparam("now"))
    .order_by(_requests.c.expires_at)
    .limit(bindparam("limit"))
)
_NEXT_DEADLINE = (
    select(_requests.c.expires_at)
    .where(_requests.c.status == _PENDING, _requests.c.expires_at.is_not(None))
    .order_by(_requests.c.expires_at)
    .limit(1)
)
# FOR UPDATE (PostgreSQL) and BEGIN IMMEDIATE (SQLite) keep two surfaces that post at once
# from overwriting each other's reference.
_LOCK_MESSAGE_REFS = (
    select(_requests.c.message_refs)
    .where(_requests.c.id == bindparam("request_id"))
    .with_for_update()
)
_SET_MESSAGE_REFS = (
    update(_requests)
    .where(_requests.c.id == bindparam("request_id"))
    .values(message_refs=bindparam("refs"))
)
_LOAD_TRANSCRIPT = select(_transcripts.c.messages).where(
    _transcripts.c.room_id == bindparam("room_id"),
    _transcripts.c.channel_id == bindparam("channel_id"),
)
_PRUNE_CLAIMS = delete(_claims).where(_claims.c.claimed_at < bindparam("before"))
_FOR_TOOL_CALL = (
    select(_requests)
    .where(_requests.c.tool_call_id == bindparam("tool_call_id"))
    .order_by(_requests.c.created_at.desc())
    .limit(1)
)
_PENDING_IN_ROOM = (
    select(_requests)
    .where(_requests.c.room_id == bindparam("room_id"), _requests.c.status == _PENDING)
    .order_by(_requests.c.created_at)
)
_NOTIFY_SETTLED = select(func.pg_notify(bindparam("channel"), bindparam("id")))
_RUN_KEY = (
    _runs.c.room_id == bindparam("b_room"),
    _runs.c.channel_id == bindparam("b_channel"),
)
# Taking a run is a compare-and-set too: idle, already ours, or its holder's lease lapsed.
_TAKE_RUN = (
    update(_runs)
    .where(
        *_RUN_KEY,
        (_runs.c.active.is_(False))
        | (_runs.c.owner == bindparam("b_owner"))
        | (_runs.c.lease_until < bindparam("b_now")),
    )
    .values(
        owner=bindparam("b_owner"),
        actor_id=bindparam("b_actor"),
        lease_until=bindparam("b_lease"),
        active=True,
        updated_at=bindparam("b_now"),
    )
)
_RENEW_RUNS = (
    update(_runs)
    .where(_runs.c.owner == bindparam("b_owner"), _runs.c.active.is_(True))
    .values(lease_until=bindparam("b_lease"))
)
_FINISH_RUN = (
    update(_runs)
    .where(*_RUN_KEY, _runs.c.owner == bindparam("b_owner"))
    .values(active=False, owner=None, lease_until=None, updated_at=bindparam("b_now"))
)
_RELEASE_RUNS = (
    update(_runs)
    .where(_runs.c.owner == bindparam("b_owner"), _runs.c.active.is_(True))
    .values(lease_until=bindparam("b_now"))
)
_ORPHANED_RUNS = (
    select(_runs)
    .where(_runs.c.active.is_(True), _runs.c.lease_until < bindparam("now"))
    .order_by(_runs.c.lease_until)
    .limit(bindparam("limit"))
)


def _upserts(dialect: str) -> tuple[Executable, Executable]:
    """The transcript upsert and the claim insert: ON CONFLICT, spelled per dialect."""
    dialect_insert: Any = postgresql.insert if dialect == "postgresql" else sqlite.insert
    transcript = dialect_insert(_transcripts)
    save_transcript = transcript.on_conflict_do_update(
        index_elements=[_transcripts.c.room_id, _transcripts.c.channel_id],
        set_={
            "messages": transcript.excluded.messages,
            "updated_at": transcript.excluded.updated_at,
        },
    )
    claim = dialect_insert(_claims).on_conflict_do_nothing(index_elements=[_claims.c.key])
    return save_transcript, claim


def _new_run(dialect: str) -> Executable:
    """Insert a room's first run, or nothing if the room already has a row."""
    dialect_insert: Any = postgresql.insert if dialect == "postgresql" else sqlite.insert
    keys = [_runs.c.room_id, _runs.c.channel_id]
    statement: Executable = dialect_insert(_runs).on_conflict_do_nothing(index_elements=keys)
    return statement


class SqlStore:
    """A `RequestStore` over one SQLAlchemy async engine (which the store owns and disposes)."""

    def __init__(self, engine: AsyncEngine, connect_args: Mapping[str, Any] | None = None) -> None:
        self._engine = engine
        self._writer = engine.execution_options(**{WRITE_OPTION: True})
        # SQLite: every call runs as one synchronous transaction in one thread of its own
        # (one hand-off per call instead of one per statement through aiosqlite); that thread
        # also queues this process's writers, which SQLite would serialise anyway.
        self._thread: ThreadPoolExecutor | None = None
        self._thread_engine: Engine | None = None
        if engine.dialect.name == "sqlite":
            self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hitl-sqlite")
            self._thread_engine = create_sqlite_thread_engine(engine.url, connect_args)
        self._save_transcript, self._claim = _upserts(engine.dialect.name)
        self._new_run = _new_run(engine.dialect.name)
        self._notify = engine.dialect.name == "postgresql"
        self._claims = 0
        self._in_flight: set[asyncio.Task[Any]] = set()

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        schema: str | None = None,
        connect_args: Mapping[str, Any] | None = None,
    ) -> SqlStore:
        """A store for `url`; `schema` (PostgreSQL only) becomes the connection's search path."""
        return cls(create_engine(url, schema=schema, connect_args=connect_args), connect_args)

    @property
    def engine(self) -> AsyncEngine:
        return self._engine

    @property
    def statement_engine(self) -> Engine:
        """The engine whose connections run the store's statements (to instrument them)."""
        return self._thread_engine or self._engine.sync_engine

    async def create_request(self, record: RequestRecord) -> None:
        """Insert the request with its `created` transition and audit rows."""
        await self._write(_create, record)

    async def settle(self, settlement: Settlement) -> bool:
        """Compare-and-set pending -> `settlement.status`; True only for the one settle that won."""
        if settlement.status is RequestStatus.PENDING:
            raise ValueError("a settle must leave 'pending'")
        return await self._write(_settle, settlement, self._notify)

    async def get_request(self, request_id: str) -> RequestRecord | None:
        row = await self._read(_first, _GET_REQUEST, {"request_id": request_id})
        return None if row is None else _record(row)

    async def list_pending(self) -> list[RequestRecord]:
        """Pending requests, oldest first."""
        return [_record(row) for row in await self._read(_all, _LIST_PENDING, {})]

    async def due_requests(self, now: datetime, limit: int = 500) -> list[RequestRecord]:
        """Pending requests whose `expires_at` is at or before `now`, earliest first."""
        rows = await self._read(_all, _DUE, {"now": now, "limit": limit})
        return [_record(row) for row in rows]

    async def next_deadline(self) -> datetime | None:
        """The earliest `expires_at` among pending requests: the first entry of an index range."""
        row = await self._read(_first, _NEXT_DEADLINE, {})
        return None if row is None else cast(datetime, row.expires_at)

    async def set_message_ref(self, request_id: str, surface: str, ref: dict[str, Any]) -> None:
        """Record where `surface` posted the request; raises KeyError for an unknown request."""
        await self._write(_set_message_ref, request_id, surface, ref)

    async def append_audit(self, entry: AuditEntry) -> None:
        """Append one audit line; the database assigns its id (`entry.id` is ignored)."""
        await self._write(_execute, _INSERT_AUDIT, _audit_values(entry))

    async def list_audit(
        self, *, request_id: str | None = None, limit: int = 100
    ) -> list[AuditEntry]:
        """The latest `limit` audit lines (of one request, if given), newest first."""
        query = select(_audit).order_by(_audit.c.id.desc()).limit(limit)
        if request_id is not None:
            query = query.where(_audit.c.request_id == request_id)
        return [_audit_entry(row) for row in await self._read(_all, query, {})]

    async def save_transcript(
        self, room_id: str, channel_id: str, messages: list[dict[str, Any]]
    ) -> None:
        """Replace the agent transcript of one room (an upsert, safe against concurrent saves)."""
        values = {
            "room_id": room_id,
            "channel_id": channel_id,
            "messages": messages,
            "updated_at": datetime.now(UTC),
        }
        await self._write(_execute, self._save_transcript, values)

    async def load_transcript(self, room_id: str, channel_id: str) -> list[dict[str, Any]]:
        """The saved transcript of one room, or [] if none was saved."""
        key = {"room_id": room_id, "channel_id": channel_id}
        row = await self._read(_first, _LOAD_TRANSCRIPT, key)
        return [] if row is None else cast(list[dict[str, Any]], row.messages)

    async def claim_once(self, key: str) -> bool:
        """True for the first caller of `key` across every worker sharing this database."""
        self._claims += 1
        prune = self._claims % CLAIM_PRUNE_EVERY == 0
        return await self._write(_claim, self._claim, key, datetime.now(UTC), prune)

    async def request_for_tool_call(self, tool_call_id: str) -> RequestRecord | None:
        row = await self._read(_first, _FOR_TOOL_CALL, {"tool_call_id": tool_call_id})
        return None if row is None else _record(row)

    async def pending_in_room(self, room_id: str) -> list[RequestRecord]:
        rows = await self._read(_all, _PENDING_IN_ROOM, {"room_id": room_id})
        return [_record(row) for row in rows]

    async def claim_run(
        self, room_id: str, channel_id: str, owner: str, actor_id: str | None, lease_until: datetime
    ) -> bool:
        """Take the room's run if it is idle, ours, or its lease lapsed; True if we hold it."""
        run = {
            "room_id": room_id,
            "channel_id": channel_id,
            "owner": owner,
            "actor_id": actor_id,
            "lease_until": lease_until,
            "active": True,
            "updated_at": datetime.now(UTC),
        }
        return await self._write(_take_run, self._new_run, run)

    async def renew_runs(self, owner: str, lease_until: datetime) -> int:
        values = {"b_owner": owner, "b_lease": lease_until}
        return await self._write(_count, _RENEW_RUNS, values)

    async def finish_run(self, room_id: str, channel_id: str, owner: str) -> None:
        values = {"b_room": room_id, "b_channel": channel_id, "b_owner": owner}
        await self._write(_execute, _FINISH_RUN, {**values, "b_now": datetime.now(UTC)})

    async def release_runs(self, owner: str, now: datetime) -> int:
        return await self._write(_count, _RELEASE_RUNS, {"b_owner": owner, "b_now": now})

    async def orphaned_runs(self, now: datetime, limit: int = 100) -> list[RunRecord]:
        rows = await self._read(_all, _ORPHANED_RUNS, {"now": now, "limit": limit})
        return [_run(row) for row in rows]

    async def listen_settled(
        self, callback: Callable[[str], None]
    ) -> Callable[[], Awaitable[None]]:
        """PostgreSQL: LISTEN on a connection of its own. SQLite: one process, nothing to hear."""
        if not self._notify:
            return _nothing_to_stop
        conn = await self._engine.connect()
        raw = await conn.get_raw_connection()
        driver: Any = raw.driver_connection

        def heard(_conn: object, _pid: int, _channel: str, payload: str) -> None:
            callback(payload)

        await driver.add_listener(SETTLED_CHANNEL, heard)

        async def stop() -> None:
            with contextlib.suppress(Exception):
                await driver.remove_listener(SETTLED_CHANNEL, heard)
            await conn.close()

        return stop

    async def current_revision(self) -> str | None:
        """The Alembic revision the database is at (None before the first migration)."""
        async with self._engine.connect() as conn:
            return await conn.run_sync(_revision_of)

    async def schema_revision_ok(self) -> bool:
        """True if the database is migrated to the newest revision this code knows."""
        return await self.current_revision() == head_revision()

    async def close(self) -> None:
        """Let calls in flight finish (their callers may be gone), then close the pool."""
        while self._in_flight:
            await asyncio.gather(*self._in_flight, return_exceptions=True)
        if self._thread is not None and self._thread_engine is not None:
            await asyncio.get_running_loop().run_in_executor(
                self._thread, self._thread_engine.dispose
            )
            self._thread.shutdown(wait=True)
            self._thread = None
        await self._engine.dispose()

    async def _write(
        self, body: Callable[Concatenate[Connection, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Run `body` in one writing transaction: committed if it returns, rolled back if not."""
        return await self._uncancellable(self._write_now(body, *args, **kwargs))

    async def _write_now(
        self, body: Callable[Concatenate[Connection, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        if self._thread is not None:
            call = functools.partial(self._in_thread, True, body, *args, **kwargs)
            return await asyncio.get_running_loop().run_in_executor(self._thread, call)
        async with self._writer.connect() as conn:
            return await conn.run_sync(_in_transaction, body, *args, **kwargs)

    async def _read(
        self, body: Callable[Concatenate[Connection, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        return await self._uncancellable(self._read_now(body, *args, **kwargs))

    async def _read_now(
        self, body: Callable[Concatenate[Connection, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        if self._thread is not None:
            call = functools.partial(self._in_thread, False, body, *args, **kwargs)
            return await asyncio.get_running_loop().run_in_executor(self._thread, call)
        async with self._engine.connect() as conn:
            return await conn.run_sync(body, *args, **kwargs)

    def _in_thread(
        self,
        writer: bool,
        body: Callable[Concatenate[Connection, P], T],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """SQLite's thread: one transaction, committed if `body` returns."""
        assert self._thread_engine is not None
        engine = self._thread_engine
        if writer:
            engine = engine.execution_options(**{WRITE_OPTION: True})
        with engine.connect() as conn, conn.begin():
            return body(conn, *args, **kwargs)

    async def _uncancellable(self, work: Coroutine[Any, Any, T]) -> T:
        """Run a database call to its end even if its caller is cancelled: cut mid-statement,
        a pooled connection is lost (and a transaction's outcome unknown). close() waits."""
        task = asyncio.ensure_future(work)
        self._in_flight.add(task)
        task.add_done_callback(self._in_flight.discard)
        return await asyncio.shield(task)


def _in_transaction(
    conn: Connection,
    body: Callable[Concatenate[Connection, P], T],
    /,
    *args: P.args,
    **kwargs: P.kwargs,
) -> T:
    with conn.begin():
        return body(conn, *args, **kwargs)


def _create(conn: Connection, record: RequestRecord) -> None:
    conn.execute(_INSERT_REQUEST, _row_values(record))
    conn.execute(_INSERT_TRANSITION, _created_transition(record))
    conn.execute(_INSERT_AUDIT, _created_audit(record))


def _settle(conn: Connection, settlement: Settlement, notify: bool) -> bool:
    won = conn.execute(_SETTLE, _settle_values(settlement))
    if won.rowcount != 1:
        return False
    conn.execute(_INSERT_TRANSITION, _settle_transition(settlement))
    conn.execute(_INSERT_AUDIT, _settle_audit(settlement))
    if notify:  # delivered at commit, to every worker listening: the waiter may be elsewhere
        conn.execute(_NOTIFY_SETTLED, {"channel": SETTLED_CHANNEL, "id": settlement.request_id})
    return True


def _take_run(conn: Connection, new_run: Executable, run: dict[str, Any]) -> bool:
    if conn.execute(new_run, run).rowcount:
        return True
    binds = {
        "b_room": run["room_id"],
        "b_channel": run["channel_id"],
        "b_owner": run["owner"],
        "b_actor": run["actor_id"],
        "b_lease": run["lease_until"],
        "b_now": run["updated_at"],
    }
    return bool(conn.execute(_TAKE_RUN, binds).rowcount)


def _set_message_ref(conn: Connection, request_id: str, surface: str, ref: dict[str, Any]) -> None:
    refs = conn.execute(_LOCK_MESSAGE_REFS, {"request_id": request_id}).scalar()
    if refs is None:
        raise KeyError(request_id)
    conn.execute(_SET_MESSAGE_REFS, {"request_id": request_id, "refs": {**refs, surface: ref}})


def _claim(conn: Connection, statement: Executable, key: str, now: datetime, prune: bool) -> bool:
    if conn.execute(statement, {"key": key, "claimed_at": now}).rowcount != 1:
        return False
    if prune:
        conn.execute(_PRUNE_CLAIMS, {"before": now - CLAIM_RETENTION})
    return True


def _execute(conn: Connection, statement: Executable, values: dict[str, Any]) -> None:
    conn.execute(statement, values)


def _count(conn: Connection, statement: Executable, values: dict[str, Any]) -> int:
    return int(conn.execute(statement, values).rowcount)


async def _nothing_to_stop() -> None:
    return None


def _run(row: Row[Any]) -> RunRecord:
    return RunRecord(
        room_id=row.room_id,
        channel_id=row.channel_id,
        actor_id=row.actor_id,
        owner=row.owner,
        lease_until=row.lease_until,
        active=bool(row.active),
    )


def _first(conn: Connection, query: Executable, values: dict[str, Any]) -> Row[Any] | None:
    return conn.execute(query, values).first()


def _all(conn: Connection, query: Executable, values: dict[str, Any]) -> list[Row[Any]]:
    return list(conn.execute(query, values))


def _revision_of(conn: Connection) -> str | None:
    return MigrationContext.configure(conn).get_current_revision()


def _row_values(record: RequestRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "tool_name": record.tool_name,
        "arguments": record.arguments,
        "room_id": record.room_id,
        "tool_call_id": record.tool_call_id,
        "channel_id": record.channel_id,
        "channel_type": record.channel_type,
        "actor_id": record.actor_id,
        "detached": record.detached,
        "status": record.status.value,
        "result": record.result,
        "reason": record.reason,
        "settled_by": record.settled_by,
        "settled_at": record.settled_at,
        "created_at": record.created_at,
        "expires_at": record.expires_at,
        "message_refs": record.message_refs,
    }


def _created_transition(record: RequestRecord) -> dict[str, Any]:
    return {
        "request_id": record.id,
        "from_status": None,
        "to_status": record.status.value,
        "at": record.created_at,
        "by": record.actor_id,
        "detail": {},
    }


def _created_audit(record: RequestRecord) -> dict[str, Any]:
    return {
        "at": record.created_at,
        "action": "request.created",
        "request_id": record.id,
        "actor_id": record.actor_id,
        "detail": {
            "tool_name": record.tool_name,
            "room_id": record.room_id,
            "channel_id": record.channel_id,
            "channel_type": record.channel_type,
            "detached": record.detached,
        },
    }


def _settle_values(settlement: Settlement) -> dict[str, Any]:
    return {
        "request_id": settlement.request_id,
        "new_status": settlement.status.value,
        "new_result": settlement.result,
        "new_reason": settlement.reason,
        "new_by": settlement.by,
        "new_at": settlement.at,
    }


def _settle_transition(settlement: Settlement) -> dict[str, Any]:
    detail = {} if settlement.reason is None else {"reason": settlement.reason}
    return {
        "request_id": settlement.request_id,
        "from_status": _PENDING,
        "to_status": settlement.status.value,
        "at": settlement.at,
        "by": settlement.by,
        "detail": detail,
    }


def _settle_audit(settlement: Settlement) -> dict[str, Any]:
    detail = {
        key: value
        for key, value in (("result", settlement.result), ("reason", settlement.reason))
        if value is not None
    }
    return {
        "at": settlement.at,
        "action": f"request.{settlement.status.value}",
        "request_id": settlement.request_id,
        "actor_id": settlement.by,
        "detail": detail,
    }


def _audit_values(entry: AuditEntry) -> dict[str, Any]:
    return {
        "at": entry.at,
        "action": entry.action,
        "request_id": entry.request_id,
        "actor_id": entry.actor_id,
        "detail": entry.detail,
    }


def _record(row: Row[Any]) -> RequestRecord:
    return RequestRecord(
        id=row.id,
        tool_name=row.tool_name,
        arguments=row.arguments,
        room_id=row.room_id,
        tool_call_id=row.tool_call_id,
        channel_id=row.channel_id,
        channel_type=row.channel_type,
        actor_id=row.actor_id,
        detached=row.detached,
        created_at=row.created_at,
        expires_at=row.expires_at,
        status=RequestStatus(row.status),
        result=row.result,
        reason=row.reason,
        settled_by=row.settled_by,
        settled_at=row.settled_at,
        message_refs=row.message_refs or {},
    )


def _audit_entry(row: Row[Any]) -> AuditEntry:
    return AuditEntry(
        action=row.action,
        at=row.at,
        request_id=row.request_id,
        actor_id=row.actor_id,
        detail=row.detail or {},
        id=row.id,
    )
