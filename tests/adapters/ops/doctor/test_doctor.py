"""`hitl-bridge doctor` against the fakes: all good passes; each fault is a failed line with
its fix; the command in a process of its own exits 1 on a failure, printing no secret."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from adapters.cli.doctor_command import diagnose
from adapters.ops.doctor.report import exit_status, lines
from adapters.ops.doctor.results import Result
from adapters.serve.settings import Settings
from adapters.surfaces.slack.doctor import BOT_SCOPES
from bot.store import upgrade
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.entra_login import FakeEntraLogin
from tests.fakes.slack_api import FakeSlack

ROOT = Path(__file__).resolve().parents[4]
KEY = "sk-ant-fake-key-0123456789"
ADMIN = "admin-token-0123456789abcdef"


@pytest.fixture
async def fakes() -> AsyncIterator[tuple[FakeSlack, FakeAnthropic, FakeEntraLogin]]:
    async with (
        FakeSlack() as slack,
        FakeAnthropic(api_key=KEY) as model,
        FakeEntraLogin("app-id", "teams-secret") as login,
    ):
        yield slack, model, login


@pytest.fixture
async def url(tmp_path: Path) -> str:
    url = f"sqlite+aiosqlite:///{tmp_path / 'hitl.db'}"
    await upgrade(url)
    return url


def settings(url: str, slack: FakeSlack, model: FakeAnthropic, **more: Any) -> Settings:
    values: dict[str, Any] = {
        "HITL_DATABASE_URL": url, "SLACK_BOT_TOKEN": slack.token,
        "SLACK_SIGNING_SECRET": "signing-secret-0123", "SLACK_API_URL": slack.base_url,
        "ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": model.base_url,
        "TEAMS_CLIENT_ID": "app-id", "TEAMS_CLIENT_SECRET": "teams-secret",
        "TEAMS_TENANT_ID": "tenant", "HITL_ADMIN_TOKEN": ADMIN, **more,
    }  # fmt: skip
    return Settings(_env_file=None, **values)


def by_check(results: list[Result]) -> dict[str, Result]:
    return {result.check: result for result in results}


def test_the_scopes_are_the_manifests() -> None:
    manifest = yaml.safe_load((ROOT / "manifest.yml").read_text())
    assert set(manifest["oauth_config"]["scopes"]["bot"]) == BOT_SCOPES


async def test_all_good_passes(
    fakes: tuple[FakeSlack, FakeAnthropic, FakeEntraLogin], url: str
) -> None:
    slack, model, login = fakes
    results = await diagnose(settings(url, slack, model), cloud=login.cloud)
    assert exit_status(results) == 0, results
    found = by_check(results)
    assert found["Slack scopes"].status == "ok"
    assert found["Slack Socket Mode"].status == "skipped"
    assert found["Teams credentials"].status == "ok"
    assert found["surfaces"].detail == "Slack and Teams set up"
    assert login.asked[0]["tenant"] == "tenant"


@pytest.mark.parametrize(
    ("fault", "check", "fix"),
    [
        ({"SLACK_BOT_TOKEN": "xoxb-revoked-token"}, "Slack bot token", "SLACK_BOT_TOKEN"),
        ({"TEAMS_CLIENT_SECRET": "wrong-secret"}, "Teams credentials", "client secret"),
        ({"ANTHROPIC_API_KEY": "sk-ant-wrong-key-99"}, "model", "ANTHROPIC_API_KEY"),
    ],
)
async def test_each_fault_fails_its_check_with_the_fix(
    fakes: tuple[FakeSlack, FakeAnthropic, FakeEntraLogin], url: str,
    fault: dict[str, str], check: str, fix: str,
) -> None:  # fmt: skip
    slack, model, login = fakes
    results = await diagnose(settings(url, slack, model, **fault), cloud=login.cloud)
    assert exit_status(results) == 1
    failed = [r for r in results if r.status == "failed"]
    assert [r.check for r in failed] == [check]
    assert fix in failed[0].fix
    secret = next(iter(fault.values()))
    assert all(secret not in r.detail for r in results)


async def test_a_missing_scope_is_named(
    fakes: tuple[FakeSlack, FakeAnthropic, FakeEntraLogin], url: str
) -> None:
    slack, model, login = fakes
    slack.scopes = tuple(sorted(BOT_SCOPES - {"usergroups:read"}))
    found = by_check(await diagnose(settings(url, slack, model), cloud=login.cloud))
    assert found["Slack scopes"].status == "failed"
    assert "usergroups:read" in found["Slack scopes"].detail


async def test_a_database_behind_its_migrations_fails(
    fakes: tuple[FakeSlack, FakeAnthropic, FakeEntraLogin], tmp_path: Path
) -> None:
    slack, model, login = fakes
    url = f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}"
    (tmp_path / "empty.db").touch()
    found = by_check(await diagnose(settings(url, slack, model), cloud=login.cloud))
    assert found["database"].status == "failed"
    assert "db upgrade" in found["database"].fix


@pytest.mark.subprocess
def test_the_command_exits_1_on_a_failure_and_prints_no_secret(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HITL_", "SLACK_", "TEAMS_",
           "ANTHROPIC_"))}  # fmt: skip
    env |= {"PYTHONPATH": str(ROOT), "HITL_ADMIN_TOKEN": ADMIN, "HITL_MODEL": "scripted",
            "HITL_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'none.db'}"}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "adapters.cli.command", "doctor"], capture_output=True, text=True,
        env=env, cwd=tmp_path, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith("✗ database: no SQLite database")
    assert ADMIN not in done.stdout and "admi…" in done.stdout


async def test_no_surface_fails_with_the_fix_not_skipped(
    fakes: tuple[FakeSlack, FakeAnthropic, FakeEntraLogin], url: str
) -> None:
    slack, model, login = fakes
    none = {"SLACK_BOT_TOKEN": None, "SLACK_SIGNING_SECRET": None, "TEAMS_CLIENT_ID": None,
            "TEAMS_CLIENT_SECRET": None, "TEAMS_TENANT_ID": None}  # fmt: skip
    results = await diagnose(settings(url, slack, model, **none), cloud=login.cloud)
    assert exit_status(results) == 1
    (shown,) = [line for line in lines(results) if line.startswith("✗ surfaces:")]
    assert shown == (
        "✗ surfaces: no surface configured (neither Slack nor Teams): `serve` refuses to start"
        " — fix: set SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET for Slack, or TEAMS_CLIENT_ID"
        " and TEAMS_CLIENT_SECRET for Teams (both sets: both); `hitl-bridge demo` needs neither"
    )
    slack_only = {**none, "SLACK_BOT_TOKEN": slack.token, "SLACK_SIGNING_SECRET": "sig-0123456"}
    found = by_check(await diagnose(settings(url, slack, model, **slack_only), cloud=login.cloud))
    assert (found["surfaces"].status, found["surfaces"].detail) == ("ok", "Slack set up")


async def test_a_bad_policy_file_fails_with_its_line(
    fakes: tuple[FakeSlack, FakeAnthropic, FakeEntraLogin], url: str, tmp_path: Path
) -> None:
    slack, model, login = fakes
    bad = tmp_path / "policy.yaml"
    bad.write_text("rules:\n  - match: {tool: deploy}\n    approvers: [nobody]\n")
    found = by_check(await diagnose(settings(url, slack, model, HITL_POLICY_FILE=str(bad)),
                                    cloud=login.cloud))  # fmt: skip
    assert found["policy file"].status == "failed"
    assert "policy.yaml" in found["policy file"].detail


@pytest.mark.subprocess
async def test_an_mcp_server_that_cannot_start_fails_its_line(
    fakes: tuple[FakeSlack, FakeAnthropic, FakeEntraLogin], url: str, tmp_path: Path
) -> None:
    slack, model, login = fakes
    agent = tmp_path / "agent.yaml"
    agent.write_text(
        f"tools:\n  - mcp:\n      command: [{sys.executable}, -c, 'raise SystemExit(3)']\n"
    )
    results = await diagnose(settings(url, slack, model, HITL_AGENT_FILE=str(agent)),
                             cloud=login.cloud)  # fmt: skip
    servers = [r for r in results if r.check.startswith("MCP server")]
    assert [r.status for r in servers] == ["failed"]
    assert "agent file" in servers[0].fix
    assert exit_status(results) == 1
