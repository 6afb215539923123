"""bot/store/engine.py's `shown_url`: a database URL as it may be printed or logged."""

from __future__ import annotations

import pytest

from bot.store.engine import shown_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql+asyncpg://hitl:hunter2@db:5432/hitl", "postgresql+asyncpg://hitl:***@db:5432/hitl"),
        ("postgresql://hitl:hun%40ter2@db/hitl?ssl=require", "postgresql://hitl:***@db/hitl?ssl=require"),
        ("postgresql://db/hitl?user=hitl&password=hunter2", "postgresql://db/hitl?password=%2A%2A%2A&user=hitl"),
        ("postgresql://hitl:hun@ter2@db/hitl", "postgresql://***@db/hitl"),  # an @ unescaped
        ("postgresql://hitl@db/hitl", "postgresql://hitl@db/hitl"),
        ("sqlite+aiosqlite:////var/lib/hitl/hitl.db", "sqlite+aiosqlite:////var/lib/hitl/hitl.db"),
        ("no-scheme", "no-scheme"),  # SQLAlchemy cannot read it: shown as it is
    ],
)  # fmt: skip
def test_the_password_is_never_shown(url: str, shown: str) -> None:
    assert shown_url(url) == shown
    assert "hunter2" not in shown
