"""Databases for the store tests: SQLite always, PostgreSQL when HITL_TEST_POSTGRES_URL is set.

Each PostgreSQL test gets a schema of its own (tables and Alembic's version table alike),
dropped afterwards, so tests never see each other's rows.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from bot.store import SqlStore, open_store
from bot.store.engine import async_url, create_engine

POSTGRES_URL_ENV = "HITL_TEST_POSTGRES_URL"


@dataclass(frozen=True)
class Database:
    dialect: str
    url: str
    schema: str | None = None


async def _admin(url: str, statement: str) -> None:
    engine = create_async_engine(async_url(url), poolclass=NullPool, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as conn:
            await conn.execute(text(statement))
    finally:
        await engine.dispose()


@pytest.fixture(params=["sqlite", "postgres"])
async def database(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Database]:
    if request.param == "sqlite":
        yield Database("sqlite", f"sqlite+aiosqlite:///{tmp_path / 'hitl.db'}")
        return
    url = os.environ.get(POSTGRES_URL_ENV)
    if not url:
        pytest.skip(f"{POSTGRES_URL_ENV} is not set")
    schema = f"t_{uuid.uuid4().hex}"
    await _admin(url, f'CREATE SCHEMA "{schema}"')
    try:
        yield Database("postgres", url, schema)
    finally:
        await _admin(url, f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture
async def engine(database: Database) -> AsyncIterator[AsyncEngine]:
    """An engine on the test database (and its schema), for looking at what migrations did."""
    opened = create_engine(database.url, schema=database.schema)
    try:
        yield opened
    finally:
        await opened.dispose()


@pytest.fixture
async def store(database: Database) -> AsyncIterator[SqlStore]:
    opened = await open_store(database.url, schema=database.schema)
    try:
        yield opened
    finally:
        await opened.close()


async def receive_one(
    store: SqlStore, key: str, surface: str, payload: dict[str, Any] | None
) -> bool:
    """Write down one interaction (bot/durable/inbox.py); False for a key received before."""
    (new,) = await store.receive(surface, [(key, payload)])
    return new
