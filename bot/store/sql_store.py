"""`SqlStore`: the `RequestStore` the core talks to, on SQLite or PostgreSQL (asyncpg).

Every public method is one transaction. A settle is a single compare-and-set UPDATE; its audit
row is written in the same transaction only when it won, so exactly one settle of a request
ever leaves a trace, whichever process or task raced for it. The SQL lives beside its tables
(request_rows.py, holds.py, run_rows.py, journal.py, ...); this module runs it.

How it runs (bench/store_throughput.py has the figures): bot/store/executor.py. The hottest calls
(create, settle, propose, get) run statements compiled once on the raw driver connection
(bot/store/prepared.py): on PostgreSQL one statement each, their steps data-modifying CTEs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Concatenate, ParamSpec, TypeVar, cast

from sqlalchemy import Connection, inspect, text
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.audit.hashing import ChainRow
from bot.audit.query import AuditFilter, AuditLine
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
)
from bot.store import (
    audit_rows,
    chain_rows,
    gate_rows,
    holds,
    inbox_rows,
    journal,
    request_rows,
    run_rows,
)
from bot.store.engine import create_engine
from bot.store.executor import Executor
from bot.store.migrate import head_revision
from bot.store.pg_groups import Group
from bot.store.pg_listener import Listener
from bot.store.prepared import fetch
from bot.store.request_rows import SETTLED_CHANNEL, record_of
from bot.store.tables import count, every, execute, first

P = ParamSpec("P")
T = TypeVar("T")

__all__ = ["SETTLED_CHANNEL", "SqlStore"]


class SqlStore:
    """A `RequestStore` over one SQLAlchemy async engine (which the store owns and disposes)."""

    def __init__(self, engine: AsyncEngine, connect_args: Mapping[str, Any] | None = None) -> None:
        self._engine = engine
        self._executor = Executor(engine, connect_args)
        self._pg = self._executor.postgres
        if self._pg:
            rows = request_rows
            self._creates = Group(rows.CREATE_ONE, rows.CREATE_MANY, "id", rows.CREATE_ARRAYS)
            self._settles = Group(
                rows.SETTLE_ONE, rows.SETTLE_MANY, "request_id", rows.SETTLE_ARRAYS, ("now",)
            )
        dialect = engine.dialect.name
        self._save_transcript, self._claim = journal.upserts(dialect)
        self._new_run = run_rows.new_run(dialect)
        self._heartbeat = holds.heartbeat_upsert(dialect)
        self._receive = inbox_rows.insert_new(dialect)
        self._claim_run, self._add_grant = gate_rows.inserts(dialect)
        # Argument keys whose values audit rows never keep (bot/audit/redaction.py), set at startup.
        self.audit_redact: frozenset[str] = frozenset()
        self._claims = 0
        self._beats = 0

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

    def watch(self, seen: Callable[[str], None]) -> Callable[[], None]:
        """Call `seen` with the SQL of every statement this store sends from now on
        (Executor.watch); returns what stops it."""
        return self._executor.watch(seen)

    def watch_outages(self, seen: Callable[[str], None]) -> Callable[[], None]:
        """Call `seen` with each call that failed as an outage (Executor.watch_outages)."""
        return self._executor.watch_outages(seen)

    # -- requests ---------------------------------------------------------------------------

    async def create_request(self, record: RequestRecord, *, holder: str | None = None) -> None:
        """Insert the request with its `created` transition and audit rows; `holder` is the
        worker deciding its settles (bot/human_input/holding.py), if any."""
        values = request_rows.created_values(record, holder, self.audit_redact)
        if self._pg:
            await self._executor.grouped(self._creates, values)
        else:
            await self._executor.write(
                request_rows.create, self._executor.bound(values, request_rows.CREATED)
            )

    async def settle(self, settlement: Settlement) -> bool:
        """Compare-and-set pending -> `settlement.status`; True only for the one settle that won.
        A request held by a live worker other than `settlement.worker` does not match."""
        if settlement.status is RequestStatus.PENDING:
            raise ValueError("a settle must leave 'pending'")
        values = request_rows.settle_values(settlement, datetime.now(UTC), self.audit_redact)
        if self._pg:
            return bool(await self._executor.grouped(self._settles, values))
        return await self._executor.write(
            request_rows.settle, self._executor.bound(values, request_rows.SETTLED)
        )

    async def get_request(self, request_id: str) -> RequestRecord | None:
        key = {"request_id": request_id}
        if self._pg:
            rows = await self._executor.one(request_rows.GET_REQUEST, key)
        else:
            rows = await self._executor.read(fetch, request_rows.GET_REQUEST, key)
        return record_of(rows[0]) if rows else None

    async def list_pending(self) -> list[RequestRecord]:
        """Pending requests, oldest first."""
        return [
            record_of(row)
            for row in await self._executor.read(every, request_rows.LIST_PENDING, {})
        ]

    async def decided_since(self, since: datetime, limit: int = 500) -> list[RequestRecord]:
        rows = await self._executor.read(
            every, request_rows.DECIDED, {"since": since, "limit": limit}
        )
        return [record_of(row) for row in rows]

    async def due_requests(self, now: datetime, limit: int = 500) -> list[RequestRecord]:
        """Pending requests whose `expires_at` is at or before `now`, earliest first."""
        rows = await self._executor.read(every, request_rows.DUE, {"now": now, "limit": limit})
        return [record_of(row) for row in rows]

    async def next_deadline(self) -> datetime | None:
        """The earliest `expires_at` among pending requests: the first entry of an index range."""
        row = await self._executor.read(first, request_rows.NEXT_DEADLINE, {})
        return None if row is None else cast(datetime, row.expires_at)

    async def set_message_ref(self, request_id: str, surface: str, ref: dict[str, Any]) -> None:
        """Record where `surface` posted the request; raises KeyError for an unknown request."""
        values = request_rows.message_ref_values(request_id, surface, ref)
        if not self._pg:
            await self._executor.write(request_rows.set_message_ref, values)
        elif not await self._executor.one(request_rows.SET_MESSAGE_REF_ONE, values):
            raise KeyError(request_id)

    async def request_for_tool_call(self, tool_call_id: str) -> RequestRecord | None:
        row = await self._executor.read(
            first, request_rows.FOR_TOOL_CALL, {"tool_call_id": tool_call_id}
        )
        return None if row is None else record_of(row)

    async def pending_in_room(self, room_id: str) -> list[RequestRecord]:
        rows = await self._executor.read(every, request_rows.PENDING_IN_ROOM, {"room_id": room_id})
        return [record_of(row) for row in rows]

    # -- holds and proposals (bot/human_input/holding.py) ------------------------------------

    async def propose(self, settlement: Settlement) -> bool | None:
        """Settle, or hand the settle to the live worker holding the request (None)."""
        if settlement.proposal is None:
            raise ValueError("a proposal needs an id")
        values = request_rows.settle_values(settlement, datetime.now(UTC), self.audit_redact)
        if not self._pg:
            return await self._executor.write(
                holds.propose, self._executor.bound(values, holds.PROPOSED)
            )
        rows = await self._executor.one(holds.PROPOSE_ONE, values)
        if not rows:  # neither settled nor handed over: it was settled already
            return False
        return True if rows[0]["won"] else None

    async def decision(self, settlement: Settlement) -> Decision:
        if not self._pg:
            return await self._executor.write(holds.decision, settlement, datetime.now(UTC))
        values = {"request_id": settlement.request_id, "proposal": settlement.proposal}
        rows = await self._executor.one(holds.DECISION_ONE, {**values, "now": datetime.now(UTC)})
        return holds.decided(rows[0] if rows else None, settlement.proposal)

    async def proposals(self, request_id: str) -> list[Settlement] | None:
        if not self._pg:
            return await self._executor.read(holds.waiting_proposals, request_id)
        rows = await self._executor.one(holds.STATUS_AND_PROPOSALS, {"request_id": request_id})
        return holds.proposals_of(rows)

    async def hold(self, request_id: str, worker: str) -> bool:
        return await self._executor.write_alone(holds.hold, request_id, worker, datetime.now(UTC))

    async def unhold(self, request_id: str, worker: str) -> None:
        await self._executor.write_alone(
            execute, holds.UNHOLD, {"request_id": request_id, "worker": worker}
        )

    async def beat(self, worker: str, alive_until: datetime) -> list[str]:
        """Refresh `worker`'s heartbeat; its held pending requests with proposals waiting."""
        self._executor.check_open()
        self._beats += 1
        prune = None
        if self._beats % holds.PRUNE_EVERY == 0:
            prune = datetime.now(UTC) - holds.HOLDER_RETENTION
        return await self._executor.write_alone(
            holds.beat, self._heartbeat, worker, alive_until, prune
        )

    # -- audit, transcripts, claims -----------------------------------------------------------

    async def append_audit(self, entry: AuditEntry) -> None:
        """Append one audit line; the database assigns its id (`entry.id` is ignored)."""
        values = journal.audit_values(entry, self.audit_redact)
        await self._executor.write_alone(execute, journal.INSERT_AUDIT, values)

    async def list_audit(
        self, *, request_id: str | None = None, actor_id: str | None = None,
        tool: str | None = None, since: datetime | None = None, limit: int = 100,
    ) -> list[AuditEntry]:  # fmt: skip
        """The latest `limit` audit lines that match (journal.AuditSearch), newest first."""
        where = journal.AuditSearch(request_id, actor_id, tool, since)
        rows = await self._executor.read(every, journal.list_audit_query(where, limit), {})
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
        if self._pg:  # on the held connections: it is on the way from an answer to the model
            await self._executor.one(self._save_transcript, values)
        else:
            await self._executor.write_alone(execute, self._save_transcript, values)

    async def load_transcript(self, room_id: str, channel_id: str) -> list[dict[str, Any]]:
        """The saved transcript of one room, or [] if none was saved."""
        key = {"room_id": room_id, "channel_id": channel_id}
        if self._pg:
            rows = await self._executor.one(journal.LOAD_TRANSCRIPT, key)
        else:
            rows = await self._executor.read(fetch, journal.LOAD_TRANSCRIPT, key)
        return cast(list[dict[str, Any]], rows[0]["messages"]) if rows else []

    async def probe_write(self, by: str | None = None) -> None:
        """Rewrite the one `health` row in a writing transaction: returns if the database takes
        writes right now, raises (StoreUnavailableError, typically) if not. Cheap enough for a
        readiness check every second."""
        await self._executor.write_alone(journal.touch_health, datetime.now(UTC), by)

    async def claim_once(self, key: str) -> bool:
        """True for the first caller of `key` across every worker sharing this database."""
        self._claims += 1
        prune = self._claims % journal.CLAIM_PRUNE_EVERY == 0
        return await self._executor.write_alone(
            journal.claim, self._claim, key, datetime.now(UTC), prune
        )

    # -- the inbox (bot/durable/inbox.py)
    # -------------------------------------------------------------

    async def receive(
        self, surface: str, interactions: Sequence[tuple[str, dict[str, Any] | None]]
    ) -> list[bool]:
        """Insert each (key, payload) in one transaction; False for a key there already."""
        if not interactions:
            return []
        now = datetime.now(UTC)
        rows = list(interactions)
        if not self._pg:
            return await self._executor.write_alone(
                inbox_rows.receive, self._receive, surface, rows, now
            )
        arrived = inbox_rows.arrivals(surface, rows, now)
        arrays = {f"{key}s": [row[key] for row in arrived] for key in inbox_rows.INBOX_KEYS}
        new = await self._executor.one(inbox_rows.RECEIVE_MANY, arrays)
        return inbox_rows.firsts(rows, {row["key"] for row in new})

    async def mark_applied(self, keys: Sequence[str]) -> list[str]:
        """Mark `keys` applied; returns those this call marked (the claim of a left-over row)."""
        if not keys:
            return []
        return await self._executor.write_alone(
            inbox_rows.mark_applied, list(keys), datetime.now(UTC)
        )

    async def unapplied(
        self, surface: str, received_before: datetime, limit: int = 100
    ) -> list[InboxEntry]:
        return await self._executor.read(inbox_rows.unapplied, surface, received_before, limit)

    async def prune_inbox(self, applied_before: datetime) -> int:
        return await self._executor.write_alone(count, inbox_rows.PRUNE, {"before": applied_before})

    # -- approval gates and grants (bot/gates/gate.py, grants.py) ----------------------------

    async def claim_gate_run(self, run: GateRun) -> GateRun | None:
        """Claim `run` (the first insert of its key wins): None if this call claimed it, else
        the run as claimed before (and maybe finished)."""
        return await self._executor.write(gate_rows.claim_run, self._claim_run, run)

    async def gate_run(self, key: str) -> GateRun | None:
        return await self._executor.read(gate_rows.get_run, key)

    async def renew_gate_run(self, key: str, worker: str, lease_until: datetime) -> None:
        values = {"b_key": key, "b_worker": worker, "b_until": lease_until}
        await self._executor.write_alone(execute, gate_rows.RENEW_RUN, values)

    async def finish_gate_run(self, run: GateRun, *, actor_id: str | None = None) -> bool:
        """Record a finished run, the outcome line on its request and its audit line, at once;
        False if it was not `run.worker`'s unfinished claim (nothing is written)."""
        return await self._executor.write(gate_rows.finish_run, run, actor_id)

    async def add_grant(self, grant: Grant) -> Grant:
        """Insert `grant` with its audit line (the one its approval made, if there is one)."""
        return await self._executor.write(
            gate_rows.add_grant, self._add_grant, grant, self.audit_redact
        )

    async def live_grants(
        self, room_id: str, actor_id: str | None, tool_name: str, now: datetime
    ) -> list[Grant]:
        return await self._executor.read(gate_rows.live_grants, room_id, actor_id, tool_name, now)

    async def list_grants(
        self, *, room_prefix: str | None = None, live_at: datetime | None = None, limit: int = 100
    ) -> list[Grant]:
        return await self._executor.read(gate_rows.list_grants, room_prefix, live_at, limit)

    async def get_grant(self, grant_id: str) -> Grant | None:
        return await self._executor.read(gate_rows.get_grant, grant_id)

    async def revoke_grant(self, grant_id: str, by: str | None, at: datetime) -> Grant | None:
        """Revoke a live grant, with its audit line; None if no live grant has that id."""
        return await self._executor.write(
            gate_rows.revoke_grant, grant_id, by, at, self.audit_redact
        )

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
        return await self._executor.write_alone(run_rows.take_run, self._new_run, run)

    async def renew_runs(self, owner: str, lease_until: datetime) -> int:
        values = {"b_owner": owner, "b_lease": lease_until}
        return await self._executor.write_alone(count, run_rows.RENEW_RUNS, values)

    async def finish_run(self, room_id: str, channel_id: str, owner: str) -> None:
        values = {"b_room": room_id, "b_channel": channel_id, "b_owner": owner}
        await self._executor.write_alone(
            execute, run_rows.FINISH_RUN, {**values, "b_now": datetime.now(UTC)}
        )

    async def release_runs(self, owner: str, now: datetime) -> int:
        return await self._executor.write_alone(
            count, run_rows.RELEASE_RUNS, {"b_owner": owner, "b_now": now}
        )

    async def seize_run(
        self, room_id: str, channel_id: str, owner: str, lease_until: datetime
    ) -> bool:
        values = {"b_room": room_id, "b_channel": channel_id, "b_owner": owner,
                  "b_lease": lease_until, "b_now": datetime.now(UTC)}  # fmt: skip
        return bool(await self._executor.write_alone(count, run_rows.SEIZE_RUN, values))

    async def orphaned_runs(self, now: datetime, limit: int = 100) -> list[RunRecord]:
        rows = await self._executor.read(
            every, run_rows.ORPHANED_RUNS, {"now": now, "limit": limit}
        )
        return [run_rows.run_of(row) for row in rows]

    async def active_run(self, room_id: str, channel_id: str) -> RunRecord | None:
        values = {"b_room": room_id, "b_channel": channel_id}
        rows = await self._executor.read(every, run_rows.ACTIVE_RUN, values)
        return run_rows.run_of(rows[0]) if rows else None

    async def active_runs(self, room_prefix: str, channel_id: str) -> list[RunRecord]:
        values = {"b_like": run_rows.like_prefix(room_prefix), "b_channel": channel_id}
        rows = await self._executor.read(every, run_rows.ACTIVE_RUNS_UNDER, values)
        return [run_rows.run_of(row) for row in rows]

    async def ask_stop(self, room_id: str, channel_id: str, by: str, reason: str) -> bool:
        """Ask the room's active run to stop (its owner acts on it); False if none is active."""
        values = {"b_room": room_id, "b_channel": channel_id, "b_by": by, "b_reason": reason}
        return bool(await self._executor.write_alone(count, run_rows.ASK_STOP, values))

    async def stops_asked(self, owner: str) -> list[RunRecord]:
        rows = await self._executor.read(every, run_rows.STOPS_ASKED, {"b_owner": owner})
        return [run_rows.run_of(row) for row in rows]

    # -- the audit chain and its pages (bot.audit.chain.ChainStore, bot.audit.export.AuditPages)

    async def seal_audit(self) -> int:
        """Seal every audit row written so far into the chain, in batches (each its own
        transaction, short enough not to hold the chain's lock long); how many."""
        if not await self.read(chain_rows.any_unsealed):
            return 0
        total = 0
        while True:
            sealed = await self.write(chain_rows.seal)
            total += sealed
            if sealed < chain_rows.SEAL_BATCH:
                return total

    async def sealed_after(self, after: int, limit: int) -> list[ChainRow]:
        """Up to `limit` sealed rows after chain place `after`, in chain order."""
        return await self.read(chain_rows.sealed_after, after, limit)

    async def audit_page(
        self, wanted: AuditFilter, after: int | None, newest_first: bool, limit: int
    ) -> list[AuditLine]:
        """Up to `limit` rows `wanted` matches, after row id `after` in the order asked."""
        return await self.read(audit_rows.page, wanted, after, newest_first, limit)

    # -- notifications, schema, lifetime ------------------------------------------------------

    async def listen_settled(
        self, callback: Callable[[str], None]
    ) -> Callable[[], Awaitable[None]]:
        """PostgreSQL: LISTEN on a connection of its own, made again if lost (pg_listener.py).
        SQLite: one process, nothing to hear."""
        if not self._pg:
            return _nothing_to_stop
        return await Listener(self._engine, SETTLED_CHANNEL, callback).start()

    async def current_revision(self) -> str | None:
        """The Alembic revision the database is at (None before the first migration)."""
        async with self._engine.connect() as conn:
            return await conn.run_sync(_revision_of)

    async def schema_revision_ok(self) -> bool:
        """True if the database is migrated to the newest revision this code knows."""
        return await self.current_revision() == head_revision()

    async def close(self) -> None:
        """Let calls in flight finish (their callers may be gone), then close the pool."""
        await self._executor.close()
        await self._engine.dispose()

    # The stores beside this one (bot/store/doors.py, webhooks.py) run their *_rows SQL here.
    async def write(
        self, body: Callable[Concatenate[Connection, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Run `body` in one writing transaction: committed if it returns, rolled back if not."""
        return await self._executor.write(body, *args, **kwargs)

    async def read(
        self, body: Callable[Concatenate[Connection, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        return await self._executor.read(body, *args, **kwargs)


async def _nothing_to_stop() -> None:
    return None


def _revision_of(conn: Connection) -> str | None:
    """The revision Alembic wrote in its version table (in the connection's schema), None
    before the first migration. Read by hand: Alembic's MigrationContext, which reads it the
    same way, costs every command that opens the store a tenth of a second to import."""
    if not inspect(conn).has_table("alembic_version"):
        return None
    versions = conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    if len(versions) > 1:
        raise RuntimeError(f"the database has several revisions: {', '.join(versions)}")
    return versions[0] if versions else None
