"""The reference for bench/store_throughput.py: the bare drivers sending the same transactions.

One lifecycle is two transactions, as the store's: (1) insert the request and its audit row;
(2) the compare-and-set update (the same condition as the store's, holders included) and its
audit row. The same schema (migrated by Alembic, every index there), the same durability
(SQLite: WAL, synchronous=NORMAL, BEGIN IMMEDIATE; PostgreSQL: the server's settings,
synchronous_commit as configured) and the same concurrency (K asyncio tasks). Values are
encoded as the store stores them (JSON text, SQLite's datetime text). What is left out is
everything a store does besides: no records, no pool, no statement building.

SQLite: one sqlite3 connection in one thread (asyncio cannot call sqlite3 without one), each
transaction one hand-off. PostgreSQL: asyncpg, one connection per task, held for the run,
prepared statements (asyncpg's cache), each transaction BEGIN, two statements, COMMIT.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg

ARGUMENTS = {"action": "deploy to production", "reason": "release 1.2.3"}
ROOM = "C123:1712345678.000100"

_CREATE_REQUEST = (
    "INSERT INTO requests (id, tool_name, arguments, room_id, tool_call_id, channel_id, "
    "channel_type, actor_id, detached, status, created_at, expires_at, message_refs, "
    "escalation_step) VALUES ({})"
)
_AUDIT = "INSERT INTO audit_log (at, action, request_id, actor_id, detail) VALUES ({})"
_SETTLE = (
    "UPDATE requests SET status = {0}, result = {1}, settled_by = {2}, settled_at = {3}, "
    "held_by = NULL WHERE id = {4} AND status = 'pending' AND (held_by IS NULL OR held_by = {5} "
    "OR NOT EXISTS (SELECT 1 FROM holders WHERE holders.worker_id = requests.held_by "
    "AND holders.alive_until >= {6}))"
)


def _marks(style: Callable[[int], str], count: int) -> str:
    return ", ".join(style(n) for n in range(1, count + 1))


def _created_detail(request_id: str, expires: datetime) -> dict[str, Any]:
    return {
        "tool_name": "requestApproval",
        "arguments": ARGUMENTS,
        "room_id": ROOM,
        "channel_id": "slack",
        "channel_type": "slack",
        "tool_call_id": f"toolu_{request_id}",
        "detached": False,
        "expires_at": expires.isoformat(),
    }


def _sqlite_time(at: datetime) -> str:
    """SQLAlchemy's SQLite DATETIME text for a UTC moment (what the store writes)."""
    return at.astimezone(UTC).replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds")


class BareSqlite:
    """sqlite3 on one thread: the two transactions of a lifecycle, each one hand-off."""

    def __init__(self, path: str) -> None:
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bare-sqlite")
        self._path = path
        self._conn: sqlite3.Connection | None = None
        self.statements = 0
        self._create = _CREATE_REQUEST.format(_marks(lambda _: "?", 14))
        self._audit = _AUDIT.format(_marks(lambda _: "?", 5))
        self._settle = _SETTLE.format(*["?"] * 7)

    async def open(self) -> None:
        await asyncio.get_running_loop().run_in_executor(self._thread, self._connect)

    def _connect(self) -> None:
        conn = sqlite3.connect(self._path, timeout=30.0, isolation_level=None)
        for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "foreign_keys=ON"):
            conn.execute(f"PRAGMA {pragma}")
        conn.set_trace_callback(self._count)
        self._conn = conn

    def _count(self, statement: str) -> None:
        if not statement.startswith(("BEGIN", "COMMIT")):
            self.statements += 1

    async def lifecycles(self, _task: int, ids: list[str]) -> None:
        """The lifecycles of `ids` in turn (every task shares the one connection's thread)."""
        loop = asyncio.get_running_loop()
        for request_id in ids:
            await loop.run_in_executor(self._thread, self._create_one, request_id)
            if not await loop.run_in_executor(self._thread, self._settle_one, request_id):
                raise RuntimeError(f"settle of {request_id} lost")

    def _create_one(self, request_id: str) -> None:
        assert self._conn is not None
        now = datetime.now(UTC)
        expires = now + timedelta(minutes=10)
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(self._create, (
            request_id, "requestApproval", json.dumps(ARGUMENTS), ROOM, f"toolu_{request_id}",
            "slack", "slack", "U123", 0, "pending", _sqlite_time(now), _sqlite_time(expires),
            "{}", 0,
        ))  # fmt: skip
        detail = json.dumps(_created_detail(request_id, expires))
        conn.execute(
            self._audit, (_sqlite_time(now), "request.created", request_id, "U123", detail)
        )
        conn.execute("COMMIT")

    def _settle_one(self, request_id: str) -> bool:
        assert self._conn is not None
        now = _sqlite_time(datetime.now(UTC))
        result = '{"approved": true}'
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        won = conn.execute(
            self._settle, ("resolved", result, "U123", now, request_id, None, now)
        ).rowcount
        if won == 1:
            detail = json.dumps({"result": result})
            conn.execute(self._audit, (now, "request.resolved", request_id, "U123", detail))
        conn.execute("COMMIT")
        return won == 1

    async def close(self) -> None:
        def close_connection() -> None:
            if self._conn is not None:
                self._conn.close()

        await asyncio.get_running_loop().run_in_executor(self._thread, close_connection)
        self._thread.shutdown(wait=True)


class BarePostgres:
    """asyncpg, one connection per task: the two transactions of a lifecycle."""

    def __init__(self, dsn: str, schema: str, tasks: int) -> None:
        self._dsn, self._schema, self._tasks = dsn, schema, tasks
        self._conns: list[asyncpg.Connection] = []
        self.statements = 0
        dollar = (
            _marks(lambda n: f"${n}", 14).replace("$3", "$3::jsonb").replace("$13", "$13::jsonb")
        )
        self._create = _CREATE_REQUEST.format(dollar)
        self._audit = _AUDIT.format("$1, $2, $3, $4, $5::jsonb")
        self._settle = _SETTLE.format(*(f"${n}" for n in range(1, 8)))

    async def open(self) -> None:
        settings = {"search_path": f'"{self._schema}"'}
        self._conns = [
            await asyncpg.connect(self._dsn, server_settings=settings) for _ in range(self._tasks)
        ]

    async def lifecycles(self, task: int, ids: list[str]) -> None:
        conn = self._conns[task]
        for request_id in ids:
            now = datetime.now(UTC)
            expires = now + timedelta(minutes=10)
            async with conn.transaction():
                await conn.execute(
                    self._create, request_id, "requestApproval", json.dumps(ARGUMENTS), ROOM,
                    f"toolu_{request_id}", "slack", "slack", "U123", False, "pending", now,
                    expires, "{}", 0,
                )  # fmt: skip
                detail = json.dumps(_created_detail(request_id, expires))
                await conn.execute(self._audit, now, "request.created", request_id, "U123", detail)
            self.statements += 2
            now = datetime.now(UTC)
            result = '{"approved": true}'
            async with conn.transaction():
                won = await conn.execute(
                    self._settle, "resolved", result, "U123", now, request_id, None, now
                )
                if won != "UPDATE 1":
                    raise RuntimeError(f"settle of {request_id} lost")
                detail = json.dumps({"result": result})
                await conn.execute(self._audit, now, "request.resolved", request_id, "U123", detail)
            self.statements += 2

    async def close(self) -> None:
        for conn in self._conns:
            await conn.close()
