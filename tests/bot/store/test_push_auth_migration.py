"""Migration 0022 (A2A push configs' authentication) up and down on both dialects (its own
module: the migrations' module is over its size limit)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from sqlalchemy import inspect
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.store import downgrade, open_store, upgrade
from bot.store.push_configs import PushConfig, PushConfigTables
from bot.store.webhooks import Added, WebhookDelivery, WebhookTables
from tests.bot.store.conftest import Database
from tests.bot.store.test_migrations import row_count, schema_differences


def columns(conn: Connection, table: str) -> set[str]:
    return {str(column["name"]) for column in inspect(conn).get_columns(table)}


async def test_0022_push_authentication_up_and_down(
    database: Database, engine: AsyncEngine
) -> None:
    """0022 adds a push config's scheme and credentials and a delivery's Authorization; the
    downgrade drops them and keeps the rows."""
    await upgrade(database.url, "0022", schema=database.schema)
    store = await open_store(database.url, migrate=False, schema=database.schema)
    now = datetime.now(UTC)
    try:
        config = PushConfig("r1", "c1", "ci", "https://example.com/a2a", None, now,
                            auth_scheme="Bearer", auth_credentials="abc")  # fmt: skip
        configs = PushConfigTables(store)
        assert await configs.put(config, cap=2)
        assert await configs.of_request("r1") == [config]
        assert config.authorization == "Bearer abc"
        changed = dataclasses.replace(config, auth_scheme="Basic", auth_credentials="Ym9iOng=")
        assert await configs.put(changed, cap=2)  # the same id: its credentials replaced
        assert await configs.of_request("r1") == [changed]
        delivery = WebhookDelivery("d1", "r1", "ci", config.url, "{}", 0, now, now,
                                   push_config="c1", push_authorization="Bearer abc")  # fmt: skip
        tables = WebhookTables(store)
        assert await tables.add(delivery) is Added.ADDED
        found = await tables.delivery("r1", "c1")
        assert found is not None and found.push_authorization == "Bearer abc"
    finally:
        await store.close()
    await downgrade(database.url, "0021", schema=database.schema)
    async with engine.connect() as conn:
        assert "auth_scheme" not in await conn.run_sync(columns, "push_configs")
        assert "push_authorization" not in await conn.run_sync(columns, "webhook_deliveries")
    assert await row_count(engine, "push_configs") == 1
    assert await row_count(engine, "webhook_deliveries") == 1
    await upgrade(database.url, schema=database.schema)
    async with engine.connect() as conn:
        assert await conn.run_sync(schema_differences) == []
