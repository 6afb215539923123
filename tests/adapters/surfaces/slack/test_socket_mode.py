"""Socket Mode through the real `hitl-bridge serve` against FakeSlack: a SLACK_APP_TOKEN Slack
refuses stops serve in one line (status 2), at start and at a reconnection; a transient failure
of `apps.connections.open` is retried until the connection opens."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.adapters.workers import START_TIMEOUT, WAIT, Cluster, Worker, cluster
from tests.fakes.slack_api import BOT_TOKEN

pytestmark = pytest.mark.subprocess  # `hitl-bridge serve` runs as worker processes

OPEN = "apps.connections.open"
REFUSALS = ["invalid_auth", "not_allowed_token_type", "missing_scope", "token_revoked",
            "account_inactive"]  # fmt: skip


@pytest.fixture
async def slack(tmp_path: Path) -> AsyncIterator[Cluster]:
    async with cluster(f"sqlite+aiosqlite:///{tmp_path / 'hitl.db'}", tmp_path) as running:
        yield running


async def exit_status(worker: Worker) -> int:
    async with asyncio.timeout(START_TIMEOUT):  # its start, then its stop
        return await worker.process.wait()


def assert_refused(line: str, code: str, token: str) -> None:
    assert line.startswith(f"hitl-bridge: Slack refused SLACK_APP_TOKEN ({code}): ")
    assert "xapp-…" in line and "connections:write" in line
    assert token not in line


@pytest.mark.parametrize("code", REFUSALS)
async def test_a_refused_app_token_stops_the_start_in_one_line(slack: Cluster, code: str) -> None:
    slack.slack.fail(OPEN, code)
    worker = await slack.spawn("refused", SLACK_APP_TOKEN=slack.slack.app_token)
    assert await exit_status(worker) == 2
    (line,) = worker.log().splitlines()
    assert_refused(line, code, slack.slack.app_token)
    assert len(slack.slack.calls_to(OPEN)) == 1  # asked once: no retry mends a refusal


async def test_the_bot_token_given_as_the_app_token_is_named(slack: Cluster) -> None:
    worker = await slack.spawn("bot-as-app", SLACK_APP_TOKEN=BOT_TOKEN)
    assert await exit_status(worker) == 2
    (line,) = worker.log().splitlines()
    assert_refused(line, "not_allowed_token_type", BOT_TOKEN)
    assert "a bot token" in line


@pytest.mark.parametrize("transient", ["503", "ratelimited"])
async def test_a_transient_failure_is_retried_until_it_connects(
    slack: Cluster, transient: str
) -> None:
    # More failures than the Web API client retries on its own: serve's backoff takes over.
    failures = 3 if transient == "503" else 4
    if transient == "503":
        slack.slack.fail(OPEN, "service_unavailable", times=failures, status=503)
    else:
        slack.slack.rate_limit(OPEN, times=failures, retry_after=1)
    worker = await slack.start_worker("patient", SLACK_APP_TOKEN=slack.slack.app_token)
    await slack.slack.wait_for(lambda: slack.slack.sockets, WAIT)
    assert len(slack.slack.calls_to(OPEN)) == failures + 1
    assert worker.alive
    assert "Traceback" not in worker.log()
    assert "Socket Mode: Slack answered" in worker.log()
    assert "; Slack (Socket Mode); doors: " in worker.log()  # the start line says how


async def test_a_refusal_at_a_reconnection_stops_serve_in_one_line(slack: Cluster) -> None:
    worker = await slack.start_worker("revoked", SLACK_APP_TOKEN=slack.slack.app_token)
    await slack.slack.wait_for(lambda: slack.slack.sockets, WAIT)
    slack.slack.fail(OPEN, "token_revoked")
    await slack.slack.drop_sockets()  # Slack closes the connection; the token is refused since
    assert await exit_status(worker) == 2
    log = worker.log()
    assert "Traceback" not in log
    assert_refused(log.splitlines()[-1], "token_revoked", slack.slack.app_token)
