"""The `hitl-bridge` command's operator subcommands, run in-process on a real SQLite store."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from adapters.cli import main
from bot.records import RequestRecord, RequestStatus, Settlement
from bot.store import open_store

CLEAN = ("HITL_", "SLACK_", "ANTHROPIC_", "TEAMS_")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:

    for name in list(os.environ):
        if name.startswith(CLEAN):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)  # no stray .env is read
    url = f"sqlite+aiosqlite:///{tmp_path / 'ops.db'}"
    monkeypatch.setenv("HITL_DATABASE_URL", url)
    return url


async def seed(url: str) -> None:
    store = await open_store(url)
    now = datetime.now(UTC)
    for request_id, tool in (("req-open", "requestApproval"), ("req-done", "confirmAction")):
        await store.create_request(RequestRecord(
            id=request_id, tool_name=tool, arguments={}, room_id="slack:C1:1.0",
            tool_call_id=f"toolu_{request_id}", channel_id="slack", channel_type="ai",
            actor_id="U0ALICE", detached=False, created_at=now,
            expires_at=now + timedelta(minutes=5),
        ))  # fmt: skip
    done = Settlement(
        "req-done", RequestStatus.RESOLVED, now, result='{"confirmed":true}', by="U0B"
    )
    assert await store.settle(done)
    await store.close()


def test_pending_lists_only_what_waits(database: str, capsys: pytest.CaptureFixture[str]) -> None:
    asyncio.run(seed(database))
    assert main(["pending"]) == 0
    out = capsys.readouterr().out
    assert "req-open" in out and "requestApproval" in out and "U0ALICE" in out
    assert "req-done" not in out


def test_audit_shows_who_decided(database: str, capsys: pytest.CaptureFixture[str]) -> None:
    asyncio.run(seed(database))
    assert main(["audit", "--request", "req-done"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in lines] == ["request.resolved", "request.created"]
    assert "by U0B" in lines[0] and "confirmed" in lines[0]


def test_serve_names_the_missing_settings(
    database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve"]) == 2
    assert "SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET" in capsys.readouterr().err


@pytest.mark.parametrize("key", [None, ""], ids=["unset", "empty"])
def test_serve_without_a_model_refuses_in_one_line(
    database: str, tmp_path: Path, key: str | None
) -> None:
    """No ANTHROPIC_API_KEY: `serve` (the real command, in a process of its own) refuses to
    start rather than run the scripted demo model for a workspace by accident."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(CLEAN)}
    env |= {"HITL_DATABASE_URL": database, "HITL_PORT": "0", "PYTHONPATH": str(ROOT),
            "SLACK_BOT_TOKEN": "xoxb-test", "SLACK_SIGNING_SECRET": "secret"}  # fmt: skip
    if key is not None:
        env["ANTHROPIC_API_KEY"] = key
    done = subprocess.run(
        [sys.executable, "-m", "adapters.cli", "serve"],
        capture_output=True, text=True, env=env, cwd=tmp_path,
        timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line == (
        "hitl-bridge: hitl-bridge serve needs ANTHROPIC_API_KEY to be set "
        "(or HITL_MODEL=scripted for the scripted demo model)"
    )


def test_serve_refuses_a_database_behind_its_migrations(
    database: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "secret")
    monkeypatch.setenv("HITL_MODEL", "scripted")
    assert main(["serve"]) == 2  # never migrated
    assert "hitl-bridge db upgrade" in capsys.readouterr().err
    assert main(["db", "upgrade"]) == 0
