"""A database that cannot take writes: the store says so with StoreUnavailableError (what the
core handles as "try again later"), its reads still work, and the write probe fails."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from bot.records import StoreUnavailableError
from bot.store import SqlStore, open_store, upgrade
from tests.bot.store.conftest import Database


@pytest.fixture
async def read_only(database: Database) -> AsyncIterator[SqlStore]:
    """A store on the migrated test database that may only read it: SQLite opened with
    `mode=ro` (root too), PostgreSQL with read-only transactions."""
    await upgrade(database.url, schema=database.schema)
    if database.dialect == "sqlite":
        path = database.url.removeprefix("sqlite+aiosqlite:///")
        store = await open_store(f"sqlite+aiosqlite:///file:{path}?mode=ro&uri=true", migrate=False)
    else:
        read_only_transactions = {"server_settings": {"default_transaction_read_only": "on"}}
        store = await open_store(
            database.url, migrate=False, schema=database.schema,
            connect_args=read_only_transactions,
        )  # fmt: skip
    try:
        yield store
    finally:
        await store.close()


async def test_writes_fail_as_unavailable_and_reads_work(read_only: SqlStore) -> None:
    assert await read_only.schema_revision_ok()
    assert await read_only.list_pending() == []
    for write in (
        read_only.probe_write("worker-1"),
        read_only.claim_once("slack:message:C1:1.0"),
        read_only.renew_runs("worker-1", datetime.now(UTC)),
    ):
        with pytest.raises(StoreUnavailableError) as raised:
            await write
        assert raised.value.__cause__ is not None  # the driver's error, for the logs


async def test_the_write_probe_takes_writes(store: SqlStore) -> None:
    await store.probe_write("worker-1")
    await store.probe_write(None)
