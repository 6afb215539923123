"""Run the Alembic migrations programmatically (what `hitl-bridge db upgrade` calls).

Alembic's command API is synchronous and our env.py starts its own event loop with
`asyncio.run`, so the commands run in a worker thread: that works whether or not the caller
is already inside a running loop. Alembic keeps the running command's context in a module
global, so commands in one process take turns.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import functools
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

# Alembic (a fifth of a second to import) only where a migration runs: `serve` and the
# commands that open the store check the revision, which head_revision reads by itself.
if TYPE_CHECKING:
    from alembic.config import Config

# The migrations ship inside the package (package data), so a plain, non-editable install
# finds them; the top-level alembic.ini points developers' `alembic` at the same folder.
ALEMBIC_DIR = Path(__file__).resolve().parent / "migrations"

_COMMAND_LOCK = threading.Lock()


def alembic_config(
    url: str | None = None,
    *,
    schema: str | None = None,
    connect_args: Mapping[str, Any] | None = None,
) -> Config:
    """An Alembic config without an ini file (so it leaves the application's logging alone)."""
    from alembic.config import Config

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
) -> list[str]:
    """Migrate the database at `url` up to `revision` (the newest by default); the revisions
    applied, oldest first ([] when it was there already)."""
    from alembic import command  # here: `serve` checks the revision, it never migrates

    config = alembic_config(url, schema=schema, connect_args=connect_args)
    applied: list[str] = []
    config.attributes["applied"] = applied  # filled by alembic/env.py, a migration at a time
    await asyncio.to_thread(_run_command, command.upgrade, config, revision)
    return applied


async def downgrade(
    url: str,
    revision: str,
    *,
    schema: str | None = None,
    connect_args: Mapping[str, Any] | None = None,
) -> None:
    """Migrate the database at `url` down to `revision` ("base" removes every table)."""
    from alembic import command

    config = alembic_config(url, schema=schema, connect_args=connect_args)
    await asyncio.to_thread(_run_command, command.downgrade, config, revision)


@functools.cache
def head_revision() -> str | None:
    """The newest revision in migrations/versions: the one no other revises (read from each
    file's `revision` and `down_revision` assignments; tests/bot/store/test_migrate.py holds
    it equal to Alembic's own `get_current_head`)."""
    revisions = dict(_revisions(ALEMBIC_DIR / "versions"))
    revised = {down for downs in revisions.values() for down in downs}
    heads = sorted(set(revisions) - revised)
    if len(heads) > 1:
        raise RuntimeError(f"migrations/versions has several heads: {', '.join(heads)}")
    return heads[0] if heads else None


def _revisions(folder: Path) -> Iterator[tuple[str, tuple[str, ...]]]:
    """(revision, the revisions it revises) of each migration file in `folder`."""
    for path in sorted(folder.glob("*.py")):
        values = dict(_constants(ast.parse(path.read_text(), str(path))))
        revision, down = values.get("revision"), values.get("down_revision")
        if isinstance(revision, str):
            yield revision, (down,) if isinstance(down, str) else tuple(down or ())


def _constants(module: ast.Module) -> Iterator[tuple[str, Any]]:
    """The module's top-level `name = <literal>` and `name: type = <literal>` assignments."""
    for node in module.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            name, value = node.target.id, node.value
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            name, value = node.targets[0].id, node.value
        else:
            continue
        with contextlib.suppress(ValueError):
            yield name, ast.literal_eval(value) if value is not None else None


def _run_command(run: Callable[[Config, str], None], config: Config, revision: str) -> None:
    with _COMMAND_LOCK:
        run(config, revision)
