"""`hitl-bridge tokens create --admin`: a token that may also sign in to the admin console."""

from __future__ import annotations

import asyncio

import pytest

from adapters.cli.command import main
from bot.doors.tokens import Tokens
from bot.store import open_store, upgrade
from bot.store.doors import DoorTables
from tests.adapters.cli.test_command import database

__all__ = ["database"]


def test_an_admin_token_is_made_with_admin(
    database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    asyncio.run(upgrade(database))
    assert main(["tokens", "create", "--name", "alice", "--admin"]) == 0
    made = capsys.readouterr().out
    assert made.startswith("admin token alice created") and "/admin" in made
    token = next(line.split()[-1] for line in made.splitlines() if "token:" in line)

    async def admin() -> str | None:
        store = await open_store(database, migrate=False)
        try:
            found = await Tokens(DoorTables(store)).check_admin(token)
            return found.name if found is not None else None
        finally:
            await store.close()

    assert asyncio.run(admin()) == "alice"
    assert main(["tokens", "list"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("live  admin")
