"""Benchmark: the HTTP API door, end to end through `hitl-bridge serve` and the fake Slack.

Run with `.venv/bin/python bench/api_latency.py [--requests N] [--rate R]`. It prints figures
and asserts nothing. The service runs as in production (`python -m adapters.cli.command serve` in a
subprocess, on a SQLite file); this process runs FakeSlack, FakeAnthropic and the client.

Figures:
- create → click → long-poll return: `POST /api/v1/requests`, then a long poll on the request
  (`GET ...?wait=60`) while a signed Slack click answers it the moment its message is posted;
  the time from the click's send until the long poll returns the answer (the bridge's part of
  a person's answer reaching the agent), and the whole round from the create's send;
- creates per second: `POST /api/v1/requests` from 8 concurrent clients (each request posted
  to FakeSlack), against the bare floor of the same server: `GET /healthz` from 8 clients.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402

from bench.slack_ack_latency import SECRET, start_service  # noqa: E402
from bot.doors.tokens import Tokens  # noqa: E402
from bot.store import open_store, upgrade  # noqa: E402
from bot.store.doors import DoorTables  # noqa: E402
from tests.fakes.anthropic_api import FakeAnthropic  # noqa: E402
from tests.fakes.slack_api import FakeSlack  # noqa: E402
from tests.fakes.slack_signing import block_actions_payload, post_signed  # noqa: E402

CHANNEL = "C0BENCH001"
ACTOR = "U0ACTOR001"
APPROVAL = {"action": "Deploy v2", "reason": "Benchmark"}
CLIENTS = 8


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def print_medians(title: str, times: Mapping[str, list[float]], reference: str) -> None:
    """Each way's median and p99 in ms, and its ratio to `reference`'s median."""
    floor = statistics.median(times[reference])
    width = max(len(name) for name in times)
    print(title)
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:<{width}} median {median:7.2f} ms   p99 {percentile(values, 0.99):7.2f} ms"
              f"   ratio to {reference} {median / floor:.2f}")  # fmt: skip


@dataclass(frozen=True)
class Served:
    """`serve` running (at `base`) around the fakes, and a door token for it."""

    slack: FakeSlack
    model: FakeAnthropic
    http: aiohttp.ClientSession
    base: str
    token: str


@contextlib.asynccontextmanager
async def served() -> AsyncIterator[Served]:
    """`hitl-bridge serve` in a process on a fresh SQLite file, with FakeSlack (the bench's
    channel and actor), FakeAnthropic and a door token; stopped at the end."""
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite+aiosqlite:///{Path(folder) / 'bench.db'}"
        await upgrade(url)
        store = await open_store(url)
        token, _ = await Tokens(DoorTables(store)).create("bench")
        await store.close()
        async with FakeSlack(users={ACTOR: "actor"}) as slack, FakeAnthropic() as model, \
                aiohttp.ClientSession() as http:  # fmt: skip
            slack.channels.add(CHANNEL)
            process, base = await start_service(url, slack, model, http)
            try:
                yield Served(slack, model, http, base, token)
            finally:
                process.terminate()
                await process.wait()


async def posted(slack: FakeSlack, count: int) -> dict[str, Any]:
    """The `count`-th message posted (a request's), once there."""
    calls = await slack.wait_for_call("chat.postMessage", count, timeout=30)
    ts = None
    for _ in range(3000):
        ts = next((m["ts"] for m in slack.messages(CHANNEL)[count - 1 : count]), None)
        if ts is not None:
            break
        await asyncio.sleep(0.001)
    assert calls and ts is not None
    return slack.message(CHANNEL, ts)


async def one_round(
    http: aiohttp.ClientSession, base: str, token: str, slack: FakeSlack, n: int
) -> tuple[float, float]:
    """(click → poll returned, create sent → poll returned), in ms."""
    headers = {"Authorization": f"Bearer {token}"}
    body = {"tool": "requestApproval", "arguments": APPROVAL, "to": f"slack:{CHANNEL}/{ACTOR}"}
    started = time.perf_counter()
    async with http.post(f"{base}/api/v1/requests", json=body, headers=headers) as response:
        made = await response.json()
        assert response.status == 201, made

    async def poll() -> dict[str, Any]:
        url = f"{base}/api/v1/requests/{made['id']}?wait=60"
        async with http.get(url, headers=headers) as answer:
            result: dict[str, Any] = await answer.json()
            return result

    polling = asyncio.create_task(poll())
    message = await posted(slack, n)
    await asyncio.sleep(0.005)  # the poll is waiting by now
    clicked = time.perf_counter()
    payload = block_actions_payload(message=message, channel_id=CHANNEL,
                                    action_id="hitl_approve", user_id=ACTOR)  # fmt: skip
    await post_signed(http, f"{base}/slack/events", payload, SECRET)
    answered = await polling
    done = time.perf_counter()
    assert answered["status"] == "answered", answered
    return (done - clicked) * 1000, (done - started) * 1000


async def rate_of(count: int, call: Any) -> float:
    """Calls per second of `call()` from CLIENTS concurrent clients, `count` in all."""
    left = iter(range(count))

    async def client() -> None:
        for _ in left:
            await call()

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(CLIENTS)))
    return count / (time.perf_counter() - started)


async def bench(rounds: int, creates: int) -> None:
    async with served() as s:
        await measure(s.http, s.base, s.token, s.slack, rounds, creates)


async def measure(
    http: aiohttp.ClientSession, base: str, token: str, slack: FakeSlack, rounds: int,
    creates: int,
) -> None:  # fmt: skip
    for n in range(1, 6):  # warm-up: imports, pools, first statements
        await one_round(http, base, token, slack, n)
    clicks, wholes = [], []
    for n in range(6, 6 + rounds):
        click_ms, whole_ms = await one_round(http, base, token, slack, n)
        clicks.append(click_ms)
        wholes.append(whole_ms)
    print(f"create → click → long-poll return, {rounds} rounds (one at a time):")
    for name, values in (("click → poll returned", clicks), ("create → poll returned", wholes)):
        print(f"  {name:<24} median {statistics.median(values):6.2f} ms   "
              f"p99 {percentile(values, 0.99):6.2f} ms")  # fmt: skip
    headers = {"Authorization": f"Bearer {token}"}
    body = {"tool": "requestApproval", "arguments": APPROVAL, "to": f"slack:{CHANNEL}"}

    async def create() -> None:
        async with http.post(f"{base}/api/v1/requests", json=body, headers=headers) as r:
            assert r.status == 201, await r.text()

    async def health() -> None:
        async with http.get(f"{base}/healthz") as r:
            assert r.status == 200

    floor = await rate_of(creates, health)
    ours = await rate_of(creates, create)
    print(f"creates through the API, {CLIENTS} clients, {creates} requests:")
    print(f"  POST /api/v1/requests  {ours:7.0f} /s")
    print(f"  GET /healthz (floor)   {floor:7.0f} /s   ratio {ours / floor:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200, help="create→click→poll rounds")
    parser.add_argument("--creates", type=int, default=1000, help="requests for the rate")
    args = parser.parse_args()
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    asyncio.run(bench(args.rounds, args.creates))


if __name__ == "__main__":
    main()
