"""Benchmark: what one token's held long polls cost everyone else, through `hitl-bridge serve`.

Run with `.venv/bin/python bench/long_polls.py [--samples N] [--flood N]`. It prints figures
and asserts nothing. The service runs as in production (`python -m adapters.cli.command serve` in a
subprocess, on a SQLite file, the default caps: 100 long polls a token); this process runs
FakeSlack, FakeAnthropic and the clients, on loopback only.

Figures, each as p50 and p99 of `--samples` calls one at a time, beside the bare reference
measured in the same run with no poll held:
- `GET /healthz`, and another token's `GET /api/v1/requests` (a page of 50);
- with one token holding its cap of polls (`GET /api/v1/requests/{id}?wait=60`);
- the same while that token also tries `--flood` more polls at once (each refused: 429).
It also prints the service's open file descriptors in each phase.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402

from bench.api_latency import percentile  # noqa: E402
from bench.slack_ack_latency import start_service  # noqa: E402
from bot.doors.tokens import Tokens  # noqa: E402
from bot.store import open_store, upgrade  # noqa: E402
from bot.store.doors import DoorTables  # noqa: E402
from tests.fakes.anthropic_api import FakeAnthropic  # noqa: E402
from tests.fakes.slack_api import FakeSlack  # noqa: E402

CHANNEL = "C0BENCH001"
ACTOR = "U0ACTOR001"
CAP = 100  # HITL_LONG_POLLS_PER_TOKEN's default
WAIT = 60  # seconds each held poll asks to wait: longer than the measuring


async def timed(samples: int, call: Callable[[], Awaitable[None]]) -> tuple[float, float]:
    """p50 and p99 in ms of `samples` calls, one at a time."""
    took = []
    for _ in range(samples):
        started = time.perf_counter()
        await call()
        took.append((time.perf_counter() - started) * 1000)
    return percentile(took, 0.5), percentile(took, 0.99)


def descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


async def bench(samples: int, flood: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite+aiosqlite:///{Path(folder) / 'bench.db'}"
        await upgrade(url)
        store = await open_store(url)
        tokens = Tokens(DoorTables(store))
        holder, _ = await tokens.create("holder")
        other, _ = await tokens.create("other")
        await store.close()
        async with FakeSlack(users={ACTOR: "actor"}) as slack, FakeAnthropic() as model, \
                aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:  # fmt: skip
            slack.channels.add(CHANNEL)
            process, base = await start_service(url, slack, model, http)
            try:
                await measure(http, base, holder, other, process.pid, samples, flood)
            finally:
                process.terminate()
                await process.wait()


async def measure(
    http: aiohttp.ClientSession, base: str, holder: str, other: str, pid: int, samples: int,
    flood: int,
) -> None:  # fmt: skip
    as_holder = {"Authorization": f"Bearer {holder}"}
    as_other = {"Authorization": f"Bearer {other}"}
    body = {"tool": "requestApproval", "arguments": {"action": "Deploy", "reason": "Bench"},
            "to": f"slack:{CHANNEL}/{ACTOR}"}  # fmt: skip
    ids = []
    for headers in [as_holder] * 10 + [as_other] * 10:
        async with http.post(f"{base}/api/v1/requests", json=body, headers=headers) as r:
            assert r.status == 201, await r.text()
            ids.append((await r.json())["id"])

    async def health() -> None:
        async with http.get(f"{base}/healthz") as r:
            assert r.status == 200

    async def listed() -> None:
        async with http.get(f"{base}/api/v1/requests", headers=as_other) as r:
            assert r.status == 200

    async def poll(wait: float = WAIT) -> int:
        url = f"{base}/api/v1/requests/{ids[0]}?wait={wait}"
        async with http.get(url, headers=as_holder) as r:
            await r.read()
            return r.status

    await timed(50, health)  # warm-up
    await timed(50, listed)
    rows = [("bare (no poll held)", await timed(samples, health), await timed(samples, listed),
             descriptors(pid))]  # fmt: skip
    holding = [asyncio.create_task(poll()) for _ in range(CAP)]
    while await poll(0.001) != 429:  # noqa: ASYNC110  (the cap is held once one more is refused)
        await asyncio.sleep(0.01)
    rows.append((f"{CAP} polls held by one token", await timed(samples, health),
                 await timed(samples, listed), descriptors(pid)))  # fmt: skip
    flooding = [asyncio.create_task(poll()) for _ in range(flood)]
    during = await asyncio.gather(timed(samples, health), timed(samples, listed))
    refused = sum(1 for status in await asyncio.gather(*flooding) if status == 429)
    rows.append((f"+ {flood} more tried at once ({refused} refused)", *during, descriptors(pid)))
    for task in holding:
        task.cancel()
    await asyncio.gather(*holding, return_exceptions=True)

    print(f"{samples} calls each, one at a time (ms):")
    print(f"  {'':<42} {'/healthz p50':>12} {'p99':>7}   {'list p50':>8} {'p99':>7}   fds")
    for name, (h50, h99), (l50, l99), fds in rows:
        print(f"  {name:<42} {h50:12.2f} {h99:7.2f}   {l50:8.2f} {l99:7.2f}   {fds}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=300, help="calls per figure")
    parser.add_argument("--flood", type=int, default=2900, help="polls tried over the cap")
    args = parser.parse_args()
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    asyncio.run(bench(min(args.samples, 5000), min(args.flood, 5000)))


if __name__ == "__main__":
    main()
