"""`SqlStore`: the `RequestStore` the core talks to, on SQLite (aiosqlite) or PostgreSQL (asyncpg).

Every public method is one transaction. A settle is a single compare-and-set UPDATE; its
transition and audit rows are written in the same transaction only when it won, so exactly one
settle of a request ever leaves a trace, whichever process or task raced for it. The SQL lives
beside its tables: request_rows.py, holds.py, run_rows.py and journal.py; this module runs it.

Throughput notes: statements are built once at import (building and cache-keying a statement per
call cost more than running it), and each transaction body runs as one synchronous function via
`run_sync`, so its statements go back to back instead of each paying an await round trip through
SQLAlchemy's async layer.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any, Concatenate, ParamSpec, TypeVar, cast

from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.records import (
    AuditEntry,
    Decision,
    GateRun,
    Grant,
    InboxEntry,
    RequestRecord,
    RequestStatus,
    RunRecord,
    Settlement,
    StoreClosedError,
    StoreUnavailableError,
)
from bot.store import gate_rows, holds, inbox_rows, journal, request_rows, run_rows
from bot.store.engine import WRITE_OPTION, create_engine, create_sqlite_thread_engine
from bot.store.migrate import head_revision
from bot.store.outages import first_line, unavailable
from bot.store.request_rows import SETTLED_CHANNEL, record_of
from bot.store.tables import count, every, execute, first

P = ParamSpec("P")
T = TypeVar("T")

__all__ = ["SETTLED_CHANNEL", "SqlStore"]


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
        dialect = engine.dialect.name
        if dialect == "sqlite":
            self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hitl-sqlite")
            self._thread_engine = create_sqlite_thread_engine(engine.url, connect_args)
        self._save_transcript, self._claim = journal.upserts(dialect)
        self._new_run = run_rows.new_run(dialect)
        self._heartbeat = holds.heartbeat_upsert(dialect)
        self._receive = inbox_rows.insert_new(dialect)
        self._claim_run, self._add_grant = gate_rows.inserts(dialect)
        self._notify = dialect == "postgresql"
        # Argument keys whose values audit rows never keep (bot/redaction.py), set at startup.
        self.audit_redact: frozenset[str] = frozenset()
        self._claims = 0
        self._beats = 0
        self._closed = False
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

    # -- requests ---------------------------------------------------------------------------

    async def create_request(self, record: RequestRecord, *, holder: str | None = None) -> None:
        """Insert the request with its `created` transition and audit rows; `holder` is the
        worker deciding its settles (bot/human_input/holding.py), if any."""
        await self._write(request_rows.create, record, holder, self.audit_redact)

    async def settle(self, settlement: Settlement) -> bool:
        """Compare-and-set pending -> `settlement.status`; True only for the one settle that won.
        A request held by a live worker other than `settlement.worker` does not match."""
        if settlement.status is RequestStatus.PENDING:
            raise ValueError("a settle must leave 'pending'")
        return await self._write(
            request_rows.settle, settlement, self._notify, datetime.now(UTC), self.audit_redact
        )

    async def get_request(self, request_id: str) -> RequestRecord | None:
        row = await self._read(first, request_rows.GET_REQUEST, {"request_id": request_id})
        return None if row is None else record_of(row)

    async def list_pending(self) -> list[RequestRecord]:
        """Pending requests, oldest first."""
        return [record_of(row) for row in await self._read(every, request_rows.LIST_PENDING, {})]

    async def decided_since(self, since: datetime, limit: int = 500) -> list[RequestRecord]:
        rows = await self._read(every, request_rows.DECIDED, {"since": since, "limit": limit})
        return [record_of(row) for row in rows]

    async def due_requests(self, now: datetime, limit: int = 500) -> list[RequestRecord]:
        """Pending requests whose `expires_at` is at or before `now`, earliest first."""
        rows = await self._read(every, request_rows.DUE, {"now": now, "limit": limit})
        return [record_of(row) for row in rows]

    async def next_deadline(self) -> datetime | None:
        """The earliest `expires_at` among pending requests: the first entry of an index range."""
        row = await self._read(first, request_rows.NEXT_DEADLINE, {})
        return None if row is None else cast(datetime, row.expires_at)

    async def set_message_ref(self, request_id: str, surface: str, ref: dict[str, Any]) -> None:
        """Record where `surface` posted the request; raises KeyError for an unknown request."""
        await self._write(request_rows.set_message_ref, request_id, surface, ref)

    async def request_for_tool_call(self, tool_call_id: str) -> RequestRecord | None:
        row = await self._read(first, request_rows.FOR_TOOL_CALL, {"tool_call_id": tool_call_id})
        return None if row is None else record_of(row)

    async def pending_in_room(self, room_id: str) -> list[RequestRecord]:
        rows = await self._read(every, request_rows.PENDING_IN_ROOM, {"room_id": room_id})
        return [record_of(row) for row in rows]

    # -- holds and proposals (bot/human_input/holding.py) ------------------------------------

    async def propose(self, settlement: Settlement) -> bool | None:
        """Settle, or hand the settle to the live worker holding the request (None)."""
        if settlement.proposal is None:
            raise ValueError("a proposal needs an id")
        now = datetime.now(UTC)
        return await self._write(holds.propose, settlement, self._notify, now, self.audit_redact)

    async def decision(self, settlement: Settlement) -> Decision:
        return await self._write(holds.decision, settlement, datetime.now(UTC))

    async def proposals(self, request_id: str) -> list[Settlement] | None:
        return await self._read(holds.waiting_proposals, request_id)

    async def hold(self, request_id: str, worker: str) -> bool:
        return await self._write(holds.hold, request_id, worker, datetime.now(UTC))

    async def unhold(self, request_id: str, worker: str) -> None:
        await self._write(execute, holds.UNHOLD, {"request_id": request_id, "worker": worker})

    async def beat(self, worker: str, alive_until: datetime) -> list[str]:
        """Refresh `worker`'s heartbeat; its held pending requests with proposals waiting."""
        if self._closed:
            raise StoreClosedError("the store is closed")
        self._beats += 1
        prune = None
        if self._beats % holds.PRUNE_EVERY == 0:
            prune = datetime.now(UTC) - holds.HOLDER_RETENTION
        return await self._write(holds.beat, self._heartbeat, worker, alive_until, prune)

    # -- audit, transcripts, claims -----------------------------------------------------------

    async def append_audit(self, entry: AuditEntry) -> None:
        """Append one audit line; the database assigns its id (`entry.id` is ignored)."""
        values = journal.audit_values(entry, self.audit_redact)
        await self._write(execute, journal.INSERT_AUDIT, values)

    async def list_audit(
        self, *, request_id: str | None = None, actor_id: str | None = None,
        tool: str | None = None, since: datetime | None = None, limit: int = 100,
    ) -> list[AuditEntry]:  # fmt: skip
        """The latest `limit` audit lines that match (journal.AuditFilter), newest first."""
        where = journal.AuditFilter(request_id, actor_id, tool, since)
        rows = await self._read(every, journal.list_audit_query(where, limit), {})
        return [journal.audit_entry(row) for row in rows]

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
        await self._write(execute, self._save_transcript, values)

    async def load_transcript(self, room_id: str, channel_id: str) -> list[dict[str, Any]]:
        """The saved transcript of one room, or [] if none was saved."""
        key = {"room_id": room_id, "channel_id": channel_id}
        row = await self._read(first, journal.LOAD_TRANSCRIPT, key)
        return [] if row is None else cast(list[dict[str, Any]], row.messages)

    async def probe_write(self, by: str | None = None) -> None:
        """Rewrite the one `health` row in a writing transaction: returns if the database takes
        writes right now, raises (StoreUnavailableError, typically) if not. Cheap enough for a
        readiness check every second."""
        await self._write(journal.touch_health, datetime.now(UTC), by)

    async def claim_once(self, key: str) -> bool:
        """True for the first caller of `key` across every worker sharing this database."""
        self._claims += 1
        prune = self._claims % journal.CLAIM_PRUNE_EVERY == 0
        return await self._write(journal.claim, self._claim, key, datetime.now(UTC), prune)

    # -- the inbox (bot/inbox.py) -------------------------------------------------------------

    async def receive(
        self, surface: str, interactions: Sequence[tuple[str, dict[str, Any] | None]]
    ) -> list[bool]:
        """Insert each (key, payload) in one transaction; False for a key there already."""
        if not interactions:
            return []
        now = datetime.now(UTC)
        rows = list(interactions)
        return await self._write(inbox_rows.receive, self._receive, surface, rows, now)

    async def mark_applied(self, keys: Sequence[str]) -> list[str]:
        """Mark `keys` applied; returns those this call marked (the claim of a left-over row)."""
        if not keys:
            return []
        return await self._write(inbox_rows.mark_applied, list(keys), datetime.now(UTC))

    async def unapplied(
        self, surface: str, received_before: datetime, limit: int = 100
    ) -> list[InboxEntry]:
        return await self._read(inbox_rows.unapplied, surface, received_before, limit)

    async def prune_inbox(self, applied_before: datetime) -> int:
        return await self._write(count, inbox_rows.PRUNE, {"before": applied_before})

    # -- approval gates and grants (bot/tools/gates.py, grants.py) ----------------------------

    async def claim_gate_run(self, run: GateRun) -> GateRun | None:
        """Claim `run` (the first insert of its key wins): None if this call claimed it, else
        the run as claimed before (and maybe finished)."""
        return await self._write(gate_rows.claim_run, self._claim_run, run)

    async def gate_run(self, key: str) -> GateRun | None:
        return await self._read(gate_rows.get_run, key)

    async def renew_gate_run(self, key: str, worker: str, lease_until: datetime) -> None:
        values = {"b_key": key, "b_worker": worker, "b_until": lease_until}
        await self._write(execute, gate_rows.RENEW_RUN, values)

    async def finish_gate_run(self, run: GateRun, *, actor_id: str | None = None) -> bool:
        """Record a finished run, the outcome line on its request and its audit line, at once;
        False if it was not `run.worker`'s unfinished claim (nothing is written)."""
        return await self._write(gate_rows.finish_run, run, actor_id)

    async def add_grant(self, grant: Grant) -> Grant:
        """Insert `grant` with its audit line (the one its approval made, if there is one)."""
        return await self._write(gate_rows.add_grant, self._add_grant, grant, self.audit_redact)

    async def live_grants(
        self, room_id: str, actor_id: str | None, tool_name: str, now: datetime
    ) -> list[Grant]:
        return await self._read(gate_rows.live_grants, room_id, actor_id, tool_name, now)

    async def list_grants(
        self, *, room_prefix: str | None = None, live_at: datetime | None = None, limit: int = 100
    ) -> list[Grant]:
        return await self._read(gate_rows.list_grants, room_prefix, live_at, limit)

    async def get_grant(self, grant_id: str) -> Grant | None:
        return await self._read(gate_rows.get_grant, grant_id)

    async def revoke_grant(self, grant_id: str, by: str | None, at: datetime) -> Grant | None:
        """Revoke a live grant, with its audit line; None if no live grant has that id."""
        return await self._write(gate_rows.revoke_grant, grant_id, by, at, self.audit_redact)

    # -- runs ---------------------------------------------------------------------------------

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
        return await self._write(run_rows.take_run, self._new_run, run)

    async def renew_runs(self, owner: str, lease_until: datetime) -> int:
        values = {"b_owner": owner, "b_lease": lease_until}
        return await self._write(count, run_rows.RENEW_RUNS, values)

    async def finish_run(self, room_id: str, channel_id: str, owner: str) -> None:
        values = {"b_room": room_id, "b_channel": channel_id, "b_owner": owner}
        await self._write(execute, run_rows.FINISH_RUN, {**values, "b_now": datetime.now(UTC)})

    async def release_runs(self, owner: str, now: datetime) -> int:
        return await self._write(count, run_rows.RELEASE_RUNS, {"b_owner": owner, "b_now": now})

    async def orphaned_runs(self, now: datetime, limit: int = 100) -> list[RunRecord]:
        rows = await self._read(every, run_rows.ORPHANED_RUNS, {"now": now, "limit": limit})
        return [run_rows.run_of(row) for row in rows]

    # -- notifications, schema, lifetime ------------------------------------------------------

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
        self._closed = True
        while self._in_flight:
            await asyncio.gather(*self._in_flight, return_exceptions=True)
        if self._thread is not None and self._thread_engine is not None:
            await asyncio.get_running_loop().run_in_executor(
                self._thread, self._thread_engine.dispose
            )
            self._thread.shutdown(wait=True)
            self._thread = None
        await self._engine.dispose()

    # -- transactions -------------------------------------------------------------------------

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

    # The stores beside this one (bot/store/doors.py, webhooks.py) run their *_rows SQL here.
    write = _write
    read = _read

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
        try:
            return await asyncio.shield(task)
        except (DBAPIError, OSError) as err:
            if not unavailable(err):
                raise
            raise StoreUnavailableError(first_line(err)) from err


def _in_transaction(
    conn: Connection,
    body: Callable[Concatenate[Connection, P], T],
    /,
    *args: P.args,
    **kwargs: P.kwargs,
) -> T:
    with conn.begin():
        return body(conn, *args, **kwargs)


async def _nothing_to_stop() -> None:
    return None


def _revision_of(conn: Connection) -> str | None:
    return MigrationContext.configure(conn).get_current_revision()
