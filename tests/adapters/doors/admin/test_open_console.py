"""The console as `serve` configures it from HITL_ADMIN_* (adapters/serve/settings.py)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from adapters.doors.admin.app import open_console
from adapters.serve.settings import Settings, settings_problem
from bot.store import SqlStore
from tests.adapters.doors.admin.conftest import ENV_TOKEN


@pytest.mark.parametrize("name", ["HITL_ADMIN_TOKEN", "HITL_ADMIN_SESSION_KEY"])
def test_a_short_admin_secret_is_refused_in_one_line(name: str) -> None:
    with pytest.raises(ValidationError) as raised:
        Settings(_env_file=None, **{name: "guessable"})  # type: ignore[arg-type]
    problem = settings_problem(raised.value)
    assert "at least 24 characters" in problem and "guessable" not in problem


def test_empty_is_unset() -> None:
    settings = Settings(_env_file=None, HITL_ADMIN_TOKEN=" ")
    assert settings.admin_token is None


async def test_the_environments_token_makes_everyone_sign_in(store: SqlStore) -> None:
    settings = Settings(
        _env_file=None, HITL_ADMIN_TOKEN=ENV_TOKEN,
        HITL_ADMIN_SESSION_KEY="k" * 32, HITL_ADMIN_COOKIE_SECURE=True,
    )  # fmt: skip
    console = open_console(settings, store)
    assert await console.access.configured()
    assert console.access.admin_token == ENV_TOKEN and console.access.cookie_secure is True
    assert not await open_console(Settings(_env_file=None), store).access.configured()
