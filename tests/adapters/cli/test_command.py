"""The `hitl-bridge` command's operator subcommands, on a real SQLite store: in-process, and as
the real command in a process of its own for what it prints (to stderr on a failure)."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from adapters.cli.command import main
from bot.doors.tokens import Tokens
from bot.gates.grants import digest
from bot.records import Grant, RequestRecord, RequestStatus, Settlement
from bot.store import open_store, upgrade
from bot.store.doors import DoorTables

pytestmark = pytest.mark.subprocess  # each command runs as a process

CLEAN = ("HITL_", "SLACK_", "ANTHROPIC_", "TEAMS_")
ROOT = Path(__file__).resolve().parents[3]
SCRIPT = Path(sys.executable).with_name("hitl-bridge")  # the installed console script
COMMAND = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "adapters.cli.command"]
POSTGRES_URL_ENV = "HITL_TEST_POSTGRES_URL"


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


async def seed_grants(url: str) -> None:
    store = await open_store(url)
    now = datetime.now(UTC)
    hour = timedelta(hours=1)
    for grant in (
        Grant("g-live", "slack:C1:1.0", "U0ALICE", "deploy", {"env": "staging",
              "token": digest("s3cret")}, now, now + hour, "U0BOB", request_id="req-1"),
        Grant("g-old", "slack:C1:1.0", "U0ALICE", "deploy", {}, now - 2 * hour, now - hour,
              "U0BOB"),
        Grant("g-odd", "slack:C2:\x1b[2J", "U0\u202eEVIL", "restart", {},
              now + timedelta(seconds=1), now + hour, None),
    ):  # fmt: skip
        await store.add_grant(grant)
    await store.close()


def test_grants_lists_the_live_ones(database: str, capsys: pytest.CaptureFixture[str]) -> None:
    asyncio.run(seed_grants(database))
    assert main(["grants", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ["g-odd", "g-live"]  # newest first
    live = lines[1]
    assert "deploy" in live and "for U0ALICE" in live and "room slack:C1:1.0" in live
    assert "env=staging, token=•••" in live and "granted by U0BOB" in live
    assert "sha256" not in live
    assert "\x1b" not in lines[0] and "\u202e" not in lines[0]  # escaped, never acted on
    assert "slack:C2:\\x1b[2J" in lines[0] and "U0\\u202eEVIL" in lines[0]

    assert main(["grants", "list", "--all"]) == 0
    every = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in every] == ["g-odd", "g-live", "g-old"]
    assert "expired" in every[2] and "every call" in every[2]


def test_grants_revoke_revokes_once_and_audits(
    database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    asyncio.run(seed_grants(database))
    assert main(["grants", "revoke", "g-live"]) == 0
    out = capsys.readouterr().out
    assert out == "revoked g-live: deploy for U0ALICE in room slack:C1:1.0\n"
    assert main(["grants", "list"]) == 0
    assert "g-live" not in capsys.readouterr().out

    assert main(["grants", "revoke", "g-live"]) == 1
    said = capsys.readouterr().err
    assert said == "hitl-bridge: cannot revoke: grant g-live was revoked already\n"
    assert main(["grants", "revoke", "g-old"]) == 1
    assert "g-old has expired already" in capsys.readouterr().err
    assert main(["grants", "revoke", "g-nope"]) == 1
    assert capsys.readouterr().err == "hitl-bridge: cannot revoke: no grant g-nope\n"

    assert main(["audit"]) == 0
    lines = capsys.readouterr().out.splitlines()
    (revoked,) = [line for line in lines if "grant.revoked" in line]
    assert "request req-1" in revoked and "by cli:" in revoked and "g-live" in revoked


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
        [sys.executable, "-m", "adapters.cli.command", "serve"],
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


# -- the real command in a process of its own ------------------------------------------------


def hitl(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`hitl-bridge *args` with only `env` of our variables, in `tmp_path` (no stray .env)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(CLEAN)}
    clean |= {"PYTHONPATH": str(ROOT), **env}
    return subprocess.run(
        [*COMMAND, *args], capture_output=True, text=True, env=clean, cwd=tmp_path,
        timeout=120, check=False,
    )  # fmt: skip


@pytest.fixture
def migrated(tmp_path: Path) -> str:
    url = f"sqlite+aiosqlite:///{tmp_path / 'hitl.db'}"
    asyncio.run(upgrade(url))
    return url


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A loopback port something else listens on."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        yield int(held.getsockname()[1])


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def serving(url: str, **env: str) -> dict[str, str]:
    """What `serve` needs for Slack and the scripted model, on the database at `url`."""
    return {"HITL_DATABASE_URL": url, "HITL_HOST": "127.0.0.1", "HITL_PORT": "0",
            "HITL_MODEL": "scripted", "SLACK_BOT_TOKEN": "xoxb-test",
            "SLACK_SIGNING_SECRET": "secret", **env}  # fmt: skip


def missing_postgres_database() -> str:
    """The test server's URL with a database that does not exist on it."""
    server = os.environ.get(POSTGRES_URL_ENV)
    if not server:
        pytest.skip(f"{POSTGRES_URL_ENV} is not set")
    parts = urlsplit(server)
    return urlunsplit(parts._replace(path="/no_such_db_hitl", query=""))


# Each case: the command, its environment, the exit status and what its one line must say.
Case = tuple[list[str], dict[str, str], int, list[str]]


def failing(case: str, tmp_path: Path, migrated: str, taken: int, closed: int) -> Case:
    nowhere = f"sqlite+aiosqlite:///{tmp_path / 'no' / 'such' / 'dir' / 'hitl.db'}"
    empty = f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}"
    cases: dict[str, Case] = {
        "sqlite-dir-missing-pending": (
            ["pending"], {"HITL_DATABASE_URL": nowhere}, 2,
            ["HITL_DATABASE_URL", "does not exist", "mkdir -p"],
        ),
        "sqlite-dir-missing-upgrade": (
            ["db", "upgrade"], {"HITL_DATABASE_URL": nowhere}, 2,
            ["HITL_DATABASE_URL", "does not exist", "mkdir -p"],
        ),
        "sqlite-dir-missing-serve": (
            ["serve"], serving(nowhere), 2, ["HITL_DATABASE_URL", "mkdir -p"],
        ),
        "unknown-scheme": (
            ["pending"], {"HITL_DATABASE_URL": "mysql://127.0.0.1/hitl"}, 2,
            ["HITL_DATABASE_URL", "sqlite+aiosqlite:///", "postgresql+asyncpg://"],
        ),
        "port-out-of-range": (
            ["serve"], serving(migrated, HITL_PORT="70000"), 2, ["HITL_PORT"],
        ),
        "port-not-a-number": (["serve"], serving(migrated, HITL_PORT="http"), 2, ["HITL_PORT"]),
        "port-in-use": (
            ["serve"], serving(migrated, HITL_PORT=str(taken)), 1,
            [f"port {taken}", "already in use", "HITL_PORT"],
        ),
        "slack-unreachable": (
            ["serve"], serving(migrated, SLACK_API_URL=f"http://127.0.0.1:{closed}/api/"), 1,
            ["cannot reach Slack", f"127.0.0.1:{closed}", "SLACK_API_URL"],
        ),
        "pending-unmigrated": (
            ["pending"], {"HITL_DATABASE_URL": empty}, 2, ["not migrated", "db upgrade"],
        ),
        "audit-unmigrated": (
            ["audit"], {"HITL_DATABASE_URL": empty}, 2, ["not migrated", "db upgrade"],
        ),
        "serve-unmigrated": (
            ["serve"], serving(empty), 2, ["migrations", "hitl-bridge db upgrade"],
        ),
        "usage": (["pendng"], {}, 2, ["invalid choice", "hitl-bridge --help"]),
        "agent-file-wrong": (
            ["serve", "--agent", str(agent_file(tmp_path / "wrong.yaml", "model: [a, b]\n"))],
            serving(migrated), 2, [f"{tmp_path / 'wrong.yaml'}:1: model: "],
        ),
        "policy-file-bomb": (
            ["serve"], serving(migrated, HITL_POLICY_FILE=str(agent_file(
                tmp_path / "bomb.yaml", BOMB))), 2,
            [f"{tmp_path / 'bomb.yaml'}:", "the policy file has aliases that expand to more"],
        ),
        "agent-file-bomb": (
            ["serve", "--agent", str(agent_file(tmp_path / "bomb.yaml", BOMB))], serving(migrated),
            2, [f"{tmp_path / 'bomb.yaml'}:", "the agent file has aliases that expand to more"],
        ),
        "policy-file-too-big": (
            ["serve"], serving(migrated, HITL_POLICY_FILE=str(agent_file(
                tmp_path / "big.yaml", "#" * 1_000_001))), 2,
            [f"{tmp_path / 'big.yaml'}: the policy file is larger than 1,000,000 bytes"],
        ),
        "log-level-unknown": (
            ["serve"], serving(migrated, HITL_LOG_LEVEL="loud"), 2,
            ["HITL_LOG_LEVEL", "DEBUG, INFO, WARNING, ERROR"],
        ),
        "log-format-unknown": (
            ["serve"], serving(migrated, HITL_LOG_FORMAT="xml"), 2,
            ["HITL_LOG_FORMAT", "must be one of text, json"],
        ),
        "mcp-server-fails": (
            ["serve"], serving(migrated, HITL_AGENT_FILE=str(agent_file(
                tmp_path / "fails.yaml", f"tools:\n  - mcp: {{command: {FAILING}, name: ops}}\n",
            ))), 1, ["MCP server `ops` did not start"],
        ),
    }  # fmt: skip
    if case == "postgres-database-missing":
        url = missing_postgres_database()
        return ["pending"], {"HITL_DATABASE_URL": url}, 2, ["no_such_db_hitl", "createdb"]
    return cases[case]


FAILING = "[python, -c, 'exit(3)']"  # an MCP server that exits at once
# A billion laughs: nine aliases of nine aliases ... of "lol", a billion nodes if written out.
BOMB = 'a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n' + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)


def agent_file(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


CASES = [
    "sqlite-dir-missing-pending", "sqlite-dir-missing-upgrade", "sqlite-dir-missing-serve",
    "postgres-database-missing", "unknown-scheme", "port-out-of-range", "port-not-a-number",
    "port-in-use", "slack-unreachable", "pending-unmigrated", "audit-unmigrated",
    "serve-unmigrated", "usage", "agent-file-wrong", "mcp-server-fails", "policy-file-bomb",
    "agent-file-bomb", "policy-file-too-big", "log-level-unknown",
    "log-format-unknown",
]  # fmt: skip


@pytest.mark.parametrize("case", CASES)
def test_a_failure_is_one_line_naming_cause_and_fix(
    case: str, tmp_path: Path, migrated: str, taken_port: int, closed_port: int
) -> None:
    args, env, status, says = failing(case, tmp_path, migrated, taken_port, closed_port)
    done = hitl(tmp_path, *args, **env)
    assert done.returncode == status, done.stderr
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith("hitl-bridge: ")
    for words in says:
        assert words in line


@pytest.mark.parametrize(
    ("case", "where"),
    [("sqlite-dir-missing-pending", "before"), ("postgres-database-missing", "before"),
     ("port-in-use", "after"), ("pending-unmigrated", "after")],
)  # fmt: skip
def test_debug_shows_the_traceback_too(
    case: str, where: str, tmp_path: Path, migrated: str, taken_port: int, closed_port: int
) -> None:
    args, env, status, says = failing(case, tmp_path, migrated, taken_port, closed_port)
    args = ["--debug", *args] if where == "before" else [*args, "--debug"]
    done = hitl(tmp_path, *args, **env)
    assert done.returncode == status, done.stderr
    assert "Traceback (most recent call last)" in done.stderr
    last = done.stderr.splitlines()[-1]
    assert last.startswith("hitl-bridge: ") and all(words in last for words in says)


def test_a_password_in_the_database_url_is_never_printed(tmp_path: Path) -> None:
    url = f"postgresql+asyncpg://hitl:hunter2@127.0.0.1:{_closed()}/hitl"
    done = hitl(tmp_path, "pending", HITL_DATABASE_URL=url)
    assert done.returncode == 1, done.stderr
    (line,) = done.stderr.splitlines()
    assert "cannot reach the database server" in line and "HITL_DATABASE_URL" in line
    assert "hunter2" not in line and "hitl:***@" in line


def _closed() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# -- what admins read cannot drive their terminal --------------------------------------------

SPOOF = "x\x1b[2J\nFORGED line\u202eevil"
SHOWN = "x\\x1b[2J\\nFORGED line\\u202eevil"  # as printed: escapes, on the same line


async def seed_spoofing(url: str) -> None:
    store = await open_store(url)
    now = datetime.now(UTC)
    for request_id in ("req-open", "req-done"):
        await store.create_request(RequestRecord(
            id=f"{request_id}-{SPOOF}", tool_name="requestApproval",
            arguments={"action": SPOOF, "reason": "r"}, room_id=f"room-{SPOOF}",
            tool_call_id=f"toolu_{request_id}", channel_id="slack", channel_type="ai",
            actor_id=f"U-{SPOOF}", detached=False, created_at=now,
            expires_at=now + timedelta(minutes=5),
        ))  # fmt: skip
    answer = f'{{"approved": true, "reason": "{SPOOF}"}}'
    done = Settlement(f"req-done-{SPOOF}", RequestStatus.RESOLVED, now, result=answer,
                      by=f"U-{SPOOF}")  # fmt: skip
    assert await store.settle(done)
    await store.close()


def test_pending_and_audit_print_what_they_were_given_escaped(
    tmp_path: Path, migrated: str
) -> None:
    asyncio.run(seed_spoofing(migrated))
    pending = hitl(tmp_path, "pending", HITL_DATABASE_URL=migrated)
    audit = hitl(tmp_path, "audit", HITL_DATABASE_URL=migrated)
    for done, rows in ((pending, 1), (audit, 3)):  # created twice, resolved once
        assert done.returncode == 0 and done.stderr == "", done.stderr
        lines = done.stdout.splitlines()
        assert len(lines) == rows, lines
        assert not any(c in done.stdout for c in "\x1b\u202e\r")
        for line in lines:
            assert "FORGED" in line and "\\x1b[2J" in line and "\\u202e" in line
    (row,) = pending.stdout.splitlines()
    assert f"req-open-{SHOWN}" in row and f"room room-{SHOWN}" in row and f"U-{SHOWN}" in row
    # The arguments as JSON (which escapes control characters its own way), then escaped.
    assert '{"action":"x\\u001b[2J\\nFORGED line\\u202eevil","reason":"r"}' in row
    resolved = audit.stdout.splitlines()[0]
    assert "request.resolved" in resolved and f"by U-{SHOWN}" in resolved


def test_tokens_are_made_once_listed_and_revoked(
    database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    asyncio.run(upgrade(database))
    assert main(["tokens", "create", "--name", "ci-agent"]) == 0
    made = capsys.readouterr().out.splitlines()
    token = next(line.split()[-1] for line in made if "token:" in line)
    secret = next(line.split()[-1] for line in made if "webhook secret:" in line)
    assert token.startswith("hitl_") and secret.startswith("whsec_")

    async def checked() -> str | None:
        store = await open_store(database, migrate=False)
        try:
            found = await Tokens(DoorTables(store)).check(token)
            return found.name if found is not None else None
        finally:
            await store.close()

    assert asyncio.run(checked()) == "ci-agent"
    assert main(["tokens", "create", "--name", "ci-agent"]) == 1
    assert "exists already" in capsys.readouterr().err
    assert main(["tokens", "list"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("ci-agent") and "live" in line and token not in line
    assert main(["tokens", "revoke", "ci-agent"]) == 0
    assert asyncio.run(checked()) is None
    assert main(["tokens", "revoke", "ci-agent"]) == 1
    assert capsys.readouterr().err.endswith("the token ci-agent was revoked already\n")
    assert main(["tokens", "create", "--name", "bad name"]) == 1
