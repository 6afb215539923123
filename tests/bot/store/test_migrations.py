"""Every migration runs up and down on both dialects, and the result matches bot.store.schema."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection, inspect, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.records import RequestRecord, RequestStatus, Settlement
from bot.store import downgrade, head_revision, open_store, upgrade
from bot.store.engine import create_engine
from bot.store.schema import metadata
from tests.bot.store.conftest import Database

REPO_ROOT = Path(__file__).resolve().parents[3]
TABLES = {
    "requests", "transitions", "audit_log", "transcripts", "claims", "runs", "holders", "proposals",
    "health",
}  # fmt: skip
HOLD_TABLES = {"holders", "proposals"}
HOLD_COLUMNS = {"held_by", "settled_proposal"}


@pytest.fixture
async def engine(database: Database) -> AsyncIterator[AsyncEngine]:
    """An engine on the test database (and its schema), for looking at what migrations did."""
    opened = create_engine(database.url, schema=database.schema)
    try:
        yield opened
    finally:
        await opened.dispose()


async def table_names(engine: AsyncEngine) -> set[str]:
    async with engine.connect() as conn:
        return set(await conn.run_sync(lambda sync: inspect(sync).get_table_names()))


def schema_differences(conn: Connection) -> list[object]:
    return list(compare_metadata(MigrationContext.configure(conn), metadata))


async def test_upgrade_downgrade_upgrade(database: Database, engine: AsyncEngine) -> None:
    await upgrade(database.url, schema=database.schema)
    assert await table_names(engine) == {*TABLES, "alembic_version"}

    await downgrade(database.url, "base", schema=database.schema)
    assert await table_names(engine) == {"alembic_version"}

    await upgrade(database.url, schema=database.schema)
    assert await table_names(engine) == {*TABLES, "alembic_version"}


async def request_columns(engine: AsyncEngine) -> set[str]:
    async with engine.connect() as conn:
        columns = await conn.run_sync(lambda sync: inspect(sync).get_columns("requests"))
    return {column["name"] for column in columns}


async def test_0003_holds_up_and_down(database: Database, engine: AsyncEngine) -> None:
    """0003 adds the holds (requests.held_by, settled_proposal; holders; proposals), and its
    downgrade takes exactly them away, keeping the requests written meanwhile."""
    await upgrade(database.url, "0002", schema=database.schema)
    assert await table_names(engine) == {*TABLES - HOLD_TABLES - {"health"}, "alembic_version"}
    assert not HOLD_COLUMNS & await request_columns(engine)

    await upgrade(database.url, "0003", schema=database.schema)
    assert await table_names(engine) == {*TABLES - {"health"}, "alembic_version"}
    assert await request_columns(engine) >= HOLD_COLUMNS
    store = await open_store(database.url, migrate=False, schema=database.schema)
    try:
        await store.create_request(
            RequestRecord(id="r1", tool_name="t", arguments={}), holder="worker-1"
        )
        await store.beat("worker-1", datetime.now(UTC) + timedelta(minutes=1))
    finally:
        await store.close()

    await downgrade(database.url, "0002", schema=database.schema)
    assert await table_names(engine) == {*TABLES - HOLD_TABLES - {"health"}, "alembic_version"}
    assert not HOLD_COLUMNS & await request_columns(engine)
    async with engine.connect() as conn:
        assert (await conn.execute(text("SELECT id FROM requests"))).scalars().all() == ["r1"]

    await upgrade(database.url, schema=database.schema)
    async with engine.connect() as conn:
        assert await conn.run_sync(schema_differences) == []


async def test_0004_undeliverable_up_and_down(database: Database, engine: AsyncEngine) -> None:
    """0004 lets a request settle as undeliverable; the table is rebuilt on SQLite without
    losing a row of it or of the tables referring to it (transitions, proposals). Its downgrade
    reads undeliverable requests as withdrawn, keeping their reason."""
    await upgrade(database.url, "0003", schema=database.schema)
    store = await open_store(database.url, migrate=False, schema=database.schema)
    try:
        for request_id in ("r1", "r2"):
            await store.create_request(RequestRecord(id=request_id, tool_name="t", arguments={}))
        with pytest.raises(IntegrityError):  # the status is not allowed yet
            await store.settle(Settlement("r1", RequestStatus.UNDELIVERABLE, datetime.now(UTC)))
    finally:
        await store.close()

    await upgrade(database.url, "0004", schema=database.schema)
    store = await open_store(database.url, migrate=False, schema=database.schema)
    try:
        undelivered = Settlement(
            "r1", RequestStatus.UNDELIVERABLE, datetime.now(UTC), reason="channel_not_found"
        )
        assert await store.settle(undelivered)
        record = await store.get_request("r1")
        assert record is not None and record.status is RequestStatus.UNDELIVERABLE
    finally:
        await store.close()
    assert await row_count(engine, "requests") == 2
    assert await row_count(engine, "transitions") == 3  # two created, one settled

    await downgrade(database.url, "0003", schema=database.schema)
    async with engine.connect() as conn:
        rows = (await conn.execute(text("SELECT id, status, reason FROM requests"))).all()
    assert sorted(tuple(row) for row in rows) == [
        ("r1", "cancelled", "channel_not_found"),
        ("r2", "pending", None),
    ]
    assert await row_count(engine, "transitions") == 3

    await upgrade(database.url, schema=database.schema)
    async with engine.connect() as conn:
        assert await conn.run_sync(schema_differences) == []


async def test_0005_health_up_and_down(database: Database, engine: AsyncEngine) -> None:
    """0005 adds the one-row table the readiness check writes; its downgrade takes it away."""
    await upgrade(database.url, "0004", schema=database.schema)
    assert "health" not in await table_names(engine)
    await upgrade(database.url, "0005", schema=database.schema)
    assert await row_count(engine, "health") == 1
    store = await open_store(database.url, migrate=False, schema=database.schema)
    try:
        await store.probe_write("worker-1")
        await store.probe_write("worker-2")
    finally:
        await store.close()
    async with engine.connect() as conn:
        rows = (await conn.execute(text("SELECT id, checked_by FROM health"))).all()
    assert [tuple(row) for row in rows] == [(1, "worker-2")]

    await downgrade(database.url, "0004", schema=database.schema)
    assert "health" not in await table_names(engine)
    await upgrade(database.url, schema=database.schema)
    async with engine.connect() as conn:
        assert await conn.run_sync(schema_differences) == []


async def row_count(engine: AsyncEngine, table: str) -> int:
    async with engine.connect() as conn:
        return int((await conn.execute(text(f"SELECT count(*) FROM {table}"))).scalar_one())


async def test_head_matches_the_schema_module(database: Database, engine: AsyncEngine) -> None:
    await upgrade(database.url, schema=database.schema)
    async with engine.connect() as conn:
        assert await conn.run_sync(schema_differences) == []


async def test_open_store_migrates_once(database: Database) -> None:
    for _ in range(2):
        store = await open_store(database.url, schema=database.schema)
        try:
            assert await store.current_revision() == head_revision()
        finally:
            await store.close()


UPGRADE_SCRIPT = """
import asyncio, sys
from bot.store import upgrade
asyncio.run(upgrade(sys.argv[1], schema=sys.argv[2] or None))
"""


async def upgrade_in_subprocess(database: Database) -> int:
    args = [database.url, database.schema or ""]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", UPGRADE_SCRIPT, *args, env=env
    )
    return await process.wait()


async def test_concurrent_upgrades_from_processes(database: Database, engine: AsyncEngine) -> None:
    # Workers starting at once each run the upgrade; one migrates, the others wait for it
    # (advisory lock on PostgreSQL, write lock on SQLite) and then find the schema at head.
    exit_codes = await asyncio.gather(*(upgrade_in_subprocess(database) for _ in range(3)))
    assert exit_codes == [0, 0, 0]
    assert await table_names(engine) == {*TABLES, "alembic_version"}


async def test_concurrent_upgrades_in_one_process(database: Database, engine: AsyncEngine) -> None:
    await asyncio.gather(*(upgrade(database.url, schema=database.schema) for _ in range(4)))
    assert await table_names(engine) == {*TABLES, "alembic_version"}


async def test_open_store_without_migrate_leaves_the_database_alone(
    database: Database, engine: AsyncEngine
) -> None:
    store = await open_store(database.url, migrate=False, schema=database.schema)
    try:
        assert await store.current_revision() is None
        assert not await store.schema_revision_ok()
    finally:
        await store.close()
    assert await table_names(engine) == set()
