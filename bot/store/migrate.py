"""Run the Alembic migrations programmatically (what `hitl-bridge db upgrade` calls).

Alembic's command API is synchronous and our env.py starts its own event loop with
`asyncio.run`, so the commands run in a worker thread: that works whether or not the caller
is already inside a running loop. Alembic keeps the running command's context in a module
global, so commands in one process take turns.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory

# alembic/ sits at the repository root, beside the `bot` package.
ALEMBIC_DIR = Path(__file__).resolve().parents[2] / "alembic"

_COMMAND_LOCK = threading.Lock()


def alembic_config(
    url: str | None = None,
    *,
    schema: str | None = None,
    connect_args: Mapping[str, Any] | None = None,
) -> Config:
    """An Alembic config without an ini file (so it leaves the application's logging alone)."""
    config = Config()
    config.set_main_option("script_location", str(ALEMBIC_DIR))
    if url is not None:
        # Config values are interpolated: a percent-encoded password must not be read as one.
        config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    config.attributes["schema"] = schema
    config.attributes["connect_args"] = dict(connect_args or {})
    return config


async def upgrade(
    url: str,
    revision: str = "head",
    *,
    schema: str | None = None,
    connect_args: Mapping[str, Any] | None = None,
) -> None:
    """Migrate the database at `url` up to `revision` (the newest by default)."""
    config = alembic_config(url, schema=schema, connect_args=connect_args)
    await asyncio.to_thread(_run_command, command.upgrade, config, revision)


async def downgrade(
    url: str,
    revision: str,
    *,
    schema: str | None = None,
    connect_args: Mapping[str, Any] | None = None,
) -> None:
    """Migrate the database at `url` down to `revision` ("base" removes every table)."""
    config = alembic_config(url, schema=schema, connect_args=connect_args)
    await asyncio.to_thread(_run_command, command.downgrade, config, revision)


def head_revision() -> str | None:
    """The newest revision in alembic/versions."""
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def _run_command(run: Callable[[Config, str], None], config: Config, revision: str) -> None:
    with _COMMAND_LOCK:
        run(config, revision)
