"""No pre-ping (issue 14): on PostgreSQL a connection the server closed while it sat idle is
found by the error it raises before sending, replaced, and the call run once more, on every
way a call reaches the database (bot/store/executor.py): the held connections and the engine's pool.

The server closes them here as it does on a restart or an idle timeout: every backend of the
store's connections is terminated (`pg_terminate_backend`) while the store is idle."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from bot.records import AuditEntry, RequestRecord, RequestStatus, Settlement
from bot.store import SqlStore, open_store
from bot.store.engine import async_url
from tests.bot.store.conftest import Database

WAIT_MS = 5000  # bound for the server to end a backend; only a broken test reaches it


@dataclass(frozen=True)
class Tagged:
    """A store whose connections carry an application name of their own."""

    store: SqlStore
    url: str
    name: str


@pytest.fixture
async def tagged(database: Database) -> AsyncIterator[Tagged]:
    if database.dialect != "postgres":
        pytest.skip("SQLite has no server to close a connection")
    name = f"hitl-dead-{uuid.uuid4().hex[:12]}"
    store = await open_store(
        database.url, schema=database.schema,
        connect_args={"server_settings": {"application_name": name}},
    )  # fmt: skip
    try:
        yield Tagged(store, database.url, name)
    finally:
        await store.close()


async def terminate_backends(url: str, name: str) -> int:
    """End every server backend of connections named `name`, waiting for each to be gone
    (PostgreSQL 14's timeout argument); how many there were."""
    engine = create_async_engine(async_url(url), poolclass=NullPool, isolation_level="AUTOCOMMIT")
    terminate = (
        "SELECT pg_terminate_backend(pid, :wait_ms) FROM pg_stat_activity"
        " WHERE application_name = :name"
    )
    try:
        async with engine.connect() as conn:
            rows = await conn.execute(text(terminate), {"name": name, "wait_ms": WAIT_MS})
            ended = [bool(row[0]) for row in rows]
        assert all(ended), "a backend outlived its termination"
        return len(ended)
    finally:
        await engine.dispose()


def record(request_id: str) -> RequestRecord:
    now = datetime.now(UTC)
    return RequestRecord(
        id=request_id, tool_name="deploy", arguments={"env": "prod"}, actor_id="alice",
        created_at=now, expires_at=now + timedelta(minutes=5),
    )  # fmt: skip


async def every_kind_of_call(store: SqlStore, request_id: str) -> None:
    """A call of each way to the database: the held connections (a grouped create and settle, a
    fetch), a pooled read in autocommit, a pooled one-statement write, a pooled transaction."""
    await store.create_request(record(request_id))
    assert (await store.get_request(request_id)) is not None
    assert [r.id for r in await store.list_pending() if r.id == request_id] == [request_id]
    await store.append_audit(AuditEntry("test.note", datetime.now(UTC), request_id))
    await store.save_transcript("room-1", "slack", [{"role": "user", "content": request_id}])
    assert await store.claim_run("room-1", "slack", "worker-1", "alice", datetime.now(UTC))
    settled = Settlement(request_id, RequestStatus.RESOLVED, datetime.now(UTC), '"ok"', by="bob")
    assert await store.settle(settled)


async def test_connections_the_server_closed_while_idle_are_replaced(tagged: Tagged) -> None:
    store = tagged.store
    await every_kind_of_call(store, "r-before")
    assert await terminate_backends(tagged.url, tagged.name) >= 2  # the held ones' and the pool's
    await asyncio.sleep(0.05)  # the event loop reads each connection's end, as it would idle

    await every_kind_of_call(store, "r-after")  # no error: each call found a fresh connection

    after = await store.get_request("r-after")
    assert after is not None and after.status is RequestStatus.RESOLVED
    assert await store.load_transcript("room-1", "slack") == [
        {"role": "user", "content": "r-after"}
    ]


async def test_a_second_restart_is_survived_too(tagged: Tagged) -> None:
    """The replaced connections are as good as the first: closing them again is survived."""
    store = tagged.store
    for round_ in range(3):
        await every_kind_of_call(store, f"r-{round_}")
        await terminate_backends(tagged.url, tagged.name)
        await asyncio.sleep(0.05)
    pending = await store.list_pending()
    assert [r.id for r in pending if r.id.startswith("r-")] == []
