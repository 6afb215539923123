"""Migration 0013: tokens get an `admin` flag; an admin token may sign in to the console."""

from __future__ import annotations

from sqlalchemy import inspect, text
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.doors.tokens import Tokens
from bot.store import downgrade, open_store, upgrade
from bot.store.doors import DoorTables
from tests.bot.store.conftest import Database
from tests.bot.store.test_migrations import schema_differences


async def token_columns(engine: AsyncEngine) -> set[str]:
    async with engine.connect() as conn:
        columns = await conn.run_sync(lambda sync: inspect(sync).get_columns("api_tokens"))
    return {column["name"] for column in columns}


async def test_0013_adds_the_admin_flag_and_takes_it_away(
    database: Database, engine: AsyncEngine
) -> None:
    await upgrade(database.url, "0010", schema=database.schema)
    async with engine.begin() as conn:  # a token made before 0013
        await conn.execute(
            text(
                "INSERT INTO api_tokens (name, token_hash, webhook_secret, created_at) "
                "VALUES ('old', 'h-old', 'whsec_x', CURRENT_TIMESTAMP)"
            )
        )
    await upgrade(database.url, "0013", schema=database.schema)
    assert "admin" in await token_columns(engine)
    store = await open_store(database.url, migrate=False, schema=database.schema)
    try:
        tables = DoorTables(store)
        old = await tables.token_named("old")
        assert old is not None and not old.admin  # tokens made before are not admins
        assert not await tables.has_admin_token()
    finally:
        await store.close()
    await downgrade(database.url, "0010", schema=database.schema)
    assert "admin" not in await token_columns(engine)
    await upgrade(database.url, schema=database.schema)
    async with engine.connect() as conn:
        assert await conn.run_sync(schema_differences) == []


async def test_an_admin_token_signs_in_a_plain_one_does_not(database: Database) -> None:
    store = await open_store(database.url, schema=database.schema)
    try:
        tokens = Tokens(DoorTables(store))
        plain, _ = await tokens.create("ci")
        assert not await tokens.has_admin()
        admin, made = await tokens.create("alice", admin=True)
        assert made.admin and await tokens.has_admin()
        assert await tokens.check(plain) is not None  # a door token still
        assert await tokens.check_admin(plain) is None
        signed = await tokens.check_admin(admin)
        assert signed is not None and signed.name == "alice"
        assert [t.admin for t in await tokens.list()] == [False, True]
        await tokens.revoke("alice")
        assert await tokens.check_admin(admin) is None
        assert not await tokens.has_admin()
    finally:
        await store.close()
