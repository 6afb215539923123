"""Migration 0012 (requests' escalation) up and down on both dialects (its own module: the
migrations' module is near its size limit)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncEngine

from bot.records import Vote
from bot.store import downgrade, open_store, upgrade
from bot.store.escalations import EscalationTables
from bot.store.votes import VoteTables
from tests.bot.store.conftest import Database
from tests.bot.store.test_migrations import (
    add_request,
    request_columns,
    row_count,
    schema_differences,
)

ESCALATION_COLUMNS = {"escalation_step", "next_escalation_at"}


async def test_0012_escalation_up_and_down(database: Database, engine: AsyncEngine) -> None:
    """0012 adds how far a request's escalation went and when its next step is due; its
    downgrade takes exactly them away, keeping the requests and their votes."""
    await upgrade(database.url, "0010", schema=database.schema)
    assert not ESCALATION_COLUMNS & await request_columns(engine)
    await add_request(engine, "r1")
    await upgrade(database.url, "0012", schema=database.schema)
    assert await request_columns(engine) >= ESCALATION_COLUMNS
    store = await open_store(database.url, migrate=False, schema=database.schema)
    try:
        record = await store.get_request("r1")  # written before: no step fired, none due
        assert record is not None
        assert (record.escalation_step, record.next_escalation_at) == (0, None)
        tables = EscalationTables(store)
        soon = datetime.now(UTC) + timedelta(minutes=5)
        assert await tables.advance("r1", (0, 1), soon)
        assert not await tables.advance("r1", (0, 1), soon)  # fired already
        assert await tables.next_deadline() == soon
        assert await VoteTables(store).cast(Vote("r1", "bob", True, "d1", datetime.now(UTC)))
    finally:
        await store.close()
    await downgrade(database.url, "0010", schema=database.schema)
    assert not ESCALATION_COLUMNS & await request_columns(engine)
    assert await row_count(engine, "requests") == 1
    assert await row_count(engine, "votes") == 1
    await upgrade(database.url, schema=database.schema)
    async with engine.connect() as conn:
        assert await conn.run_sync(schema_differences) == []
