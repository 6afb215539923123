"""`hitl-bridge --version` and `hitl-bridge db upgrade`, as the real command in a process of
its own: what they print."""

from __future__ import annotations

import asyncio
import subprocess
from importlib.metadata import version
from pathlib import Path

import pytest

from bot.store.migrate import alembic_config, downgrade, head_revision
from tests.adapters.cli.test_command import COMMAND, hitl

pytestmark = pytest.mark.subprocess  # each command runs as a process


def test_version_prints_the_installed_package_s(tmp_path: Path) -> None:
    done = subprocess.run([*COMMAND, "--version"], capture_output=True, text=True, cwd=tmp_path,
                          timeout=60, check=False)  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (
        0, f"hitl-bridge {version('hitl-bridge')}\n", ""
    )  # fmt: skip


def test_db_upgrade_says_what_it_applied(tmp_path: Path) -> None:
    from alembic.script import ScriptDirectory

    scripts = ScriptDirectory.from_config(alembic_config())
    every = [script.revision for script in reversed(list(scripts.walk_revisions()))]
    head = head_revision()
    assert every[-1] == head
    url = f"sqlite+aiosqlite:///{tmp_path / 'hitl.db'}"
    shown = f"database at {url}: "
    done = hitl(tmp_path, "db", "upgrade", HITL_DATABASE_URL=url)
    assert done.stdout == f"{shown}applied {len(every)} migrations: {every[0]} … {head}\n"
    done = hitl(tmp_path, "db", "upgrade", HITL_DATABASE_URL=url)
    assert done.stdout == f"{shown}already at {head}, nothing to apply\n"
    asyncio.run(downgrade(url, every[-3]))
    done = hitl(tmp_path, "db", "upgrade", HITL_DATABASE_URL=url)
    assert done.stdout == f"{shown}applied 2 migrations: {every[-2]}, {head}\n"
