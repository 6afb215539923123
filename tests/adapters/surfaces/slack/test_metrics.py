"""`/metrics` of the real service (Server.start with FakeSlack and FakeAnthropic), scraped over
HTTP on its own port after a request is asked, clicked and answered; parsed with
prometheus_client's own parser. And the database gauges read at most once per interval."""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from adapters.ops.metrics import DeploymentCollector
from adapters.serve.settings import Settings
from bot.store.gauges import DeploymentCounts
from tests.adapters.surfaces.slack.conftest import ALICE, Env, StartEnv, has_actions
from tests.adapters.surfaces.slack.test_e2e import finish, start_turn

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parsed(text: str) -> Samples:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


async def scrape(env: Env) -> Samples:
    url = env.server.metrics_url
    assert url is not None and url.startswith("http://127.0.0.1:")
    async with env.http.get(url) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain; version=")
        return parsed(await response.text())


async def metered(start_env: StartEnv, **settings: Any) -> Env:
    return await start_env(HITL_METRICS_ADDRESS="127.0.0.1:0", **settings)


async def test_a_request_asked_clicked_and_answered_moves_the_counters(
    start_env: StartEnv,
) -> None:
    env = await metered(start_env)
    env.slack.rate_limit("chat.postMessage", retry_after=0)  # the SDK retries it: counted
    before = await scrape(env)
    assert value(before, "hitl_store_up") == 1.0
    assert value(before, "hitl_requests_pending", surface="slack") == 0.0

    thread, message = await start_turn(
        env, "requestApproval", {"action": "Deploy v2", "reason": "Release day"}
    )
    asked = await scrape(env)  # read again: the first scrape's database read is still kept
    created = {"tool": "requestApproval", "door": "agent", "surface": "slack"}
    assert value(asked, "hitl_requests_created_total", **created) == 1.0
    assert value(asked, "hitl_slack_api_calls_total", method="chat.postMessage",
                 outcome="rate_limited") == 1.0  # fmt: skip
    assert value(asked, "hitl_slack_api_calls_total", method="chat.postMessage",
                 outcome="ok") >= 1.0  # fmt: skip

    await env.click(message, "hitl_approve", user=ALICE)
    await finish(env, thread, message, f"Answered by <@{ALICE}>")
    done = await scrape(env)
    assert value(done, "hitl_requests_settled_total", outcome="answered") == 1.0
    assert value(done, "hitl_request_decision_seconds_count", outcome="answered") == 1.0
    assert value(done, "hitl_interactions_acked_total", surface="slack") >= 2.0  # mention, click
    assert value(done, "hitl_interaction_ack_seconds_count", surface="slack") >= 2.0
    assert value(done, "hitl_model_calls_total", model="claude-sonnet-4-6", outcome="ok") == 2.0
    assert value(done, "hitl_model_call_seconds_count", model="claude-sonnet-4-6") == 2.0
    assert value(done, "hitl_slack_api_calls_total", method="chat.update", outcome="ok") >= 1.0
    assert (
        value(done, "hitl_run_leases_held") == 0.0 and value(done, "hitl_runs_adopted_total") == 0
    )
    assert value(done, "hitl_long_polls_open") == 0.0
    assert value(done, "hitl_store_unavailable_total") == 0.0


async def test_the_public_port_never_serves_metrics(start_env: StartEnv) -> None:
    env = await metered(start_env)
    async with env.http.get(f"{env.server.url}/metrics") as response:
        assert response.status == 404
    assert env.server.metrics_url is not None
    assert env.server.metrics_url.rsplit(":", 1)[1] != env.server.url.rsplit(":", 1)[1]
    assert f"metrics {env.server.metrics_url}" in env.server.serving_line()


async def test_without_an_address_no_metrics_are_served(env: Env) -> None:
    assert env.server.metrics_url is None and env.server.service.metrics is None
    async with env.http.get(f"{env.server.url}/metrics") as response:
        assert response.status == 404


async def test_pending_counts_the_whole_database_read_once_per_interval(
    start_env: StartEnv,
) -> None:
    """Every SELECT of the gauges' query the store sends is counted: three scrapes in one
    interval read the database once, whatever else they show."""
    env = await metered(start_env, HITL_METRICS_DATABASE_SECONDS=3600)
    statements: list[str] = []
    stop = env.store.watch(lambda sql: statements.append(sql) if "AS surface" in sql else None)
    try:
        _, message = await start_turn(
            env, "requestApproval", {"action": "Deploy v2", "reason": "Release day"}
        )
        assert has_actions(message)
        scrapes = [await scrape(env) for _ in range(3)]
    finally:
        stop()
    assert len(statements) == 1
    assert all(value(s, "hitl_requests_pending", surface="slack") == 1.0 for s in scrapes)
    assert value(scrapes[0], "hitl_requests_pending", surface="teams") == 0.0
    assert value(scrapes[0], "hitl_webhook_backlog") == 0.0


async def test_the_collector_reads_again_only_once_its_interval_passed() -> None:
    reads: list[int] = []
    now = [100.0]

    async def read() -> DeploymentCounts:
        reads.append(1)
        return DeploymentCounts({"slack": len(reads)}, 0)

    collector = DeploymentCollector(read, every=15.0, clock=lambda: now[0])
    await asyncio.gather(*(collector.refresh() for _ in range(5)))  # concurrent scrapes share
    now[0] += 14.9
    await collector.refresh()
    assert len(reads) == 1
    now[0] += 0.1
    await collector.refresh()
    assert len(reads) == 2
    pending = next(m for m in collector.collect() if m.name == "hitl_requests_pending")
    assert [s.value for s in pending.samples] == [2]


async def test_a_failed_read_says_the_store_is_down_and_keeps_the_interval() -> None:
    reads: list[int] = []

    async def read() -> DeploymentCounts:
        reads.append(1)
        raise OSError("connection refused")

    collector = DeploymentCollector(read, every=15.0, clock=lambda: 0.0)
    await collector.refresh()
    await collector.refresh()
    assert len(reads) == 1
    up = next(m for m in collector.collect() if m.name == "hitl_store_up")
    assert [s.value for s in up.samples] == [0]


@pytest.mark.parametrize(
    ("given", "listen"),
    [("9464", ("127.0.0.1", 9464)), (":9464", ("127.0.0.1", 9464)),
     ("0.0.0.0:9464", ("0.0.0.0", 9464)), ("[::1]:9464", ("::1", 9464)), ("", None)],
)  # fmt: skip
def test_the_address_reads_as_host_and_port(given: str, listen: tuple[str, int] | None) -> None:
    settings = Settings(_env_file=None, HITL_METRICS_ADDRESS=given)
    assert settings.metrics_listen == listen


@pytest.mark.parametrize("bad", ["localhost", "127.0.0.1:http", "1.2.3.4:70000"])
def test_a_bad_address_is_one_clear_error(bad: str) -> None:
    from pydantic import ValidationError

    from adapters.serve.settings import settings_problem

    with pytest.raises(ValidationError) as err:
        Settings(_env_file=None, HITL_METRICS_ADDRESS=bad)
    assert settings_problem(err.value) == (
        "bad configuration: HITL_METRICS_ADDRESS: must be PORT or HOST:PORT "
        "(for example 127.0.0.1:9464)"
    )


@pytest.mark.parametrize("database_seconds", [15.0, 1e-9], ids=["cached", "read-each-time"])
async def test_the_median_scrape(start_env: StartEnv, database_seconds: float) -> None:
    """Not a speed assertion: prints the median time of a /metrics GET (the docs' figure),
    with the database read kept and read at every scrape."""
    env = await metered(start_env, HITL_METRICS_DATABASE_SECONDS=database_seconds)
    url = env.server.metrics_url
    assert url is not None
    times = []
    async with aiohttp.ClientSession() as http:
        for _ in range(50):
            started = time.perf_counter()
            async with http.get(url) as response:
                await response.read()
            times.append(time.perf_counter() - started)
    assert env.server.service.metrics is not None
    reads = env.server.service.metrics.deployment.reads
    assert reads == (1 if database_seconds > 1 else 50)
    print(f"median /metrics GET ({reads} database reads): {statistics.median(times) * 1e3:.2f} ms")


async def test_a_metrics_port_in_use_stops_the_start_with_one_line(start_env: StartEnv) -> None:
    from adapters.serve.startup import StartupError

    taken = await metered(start_env)
    assert taken.server.metrics_url is not None
    port = taken.server.metrics_url.rsplit(":", 1)[1].removesuffix("/metrics")
    with pytest.raises(StartupError) as err:
        await start_env(HITL_METRICS_ADDRESS=f"127.0.0.1:{port}")
    assert str(err.value) == (
        f"port {port} on 127.0.0.1 is already in use: stop what listens there "
        "or set HITL_METRICS_ADDRESS to a free port"
    )
