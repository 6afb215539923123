"""Benchmark: one create → click → answer round trip through each Python client, beside bare
httpx making the same two requests (`POST /api/v1/requests`, then `GET ...?wait=60`).

Run with `.venv/bin/python bench/client_round_trip.py [--rounds N]`. It prints figures and
asserts nothing. The service runs as `hitl-bridge serve` in a subprocess (SQLite); this process
runs the fake Slack and a person who clicks Approve the moment each request's message is
posted. The three ways take turns round by round, so the machine's noise falls on each alike;
each figure is the time from the create's send until the answer is read.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402
import httpx  # noqa: E402

from bench.api_latency import ACTOR, APPROVAL, CHANNEL, posted, print_medians, served  # noqa: E402
from bench.slack_ack_latency import SECRET  # noqa: E402
from hitl_client import HitlClient, SyncHitlClient  # noqa: E402
from tests.fakes.slack_api import FakeSlack  # noqa: E402
from tests.fakes.slack_signing import block_actions_payload, post_signed  # noqa: E402

TO = f"slack:{CHANNEL}/{ACTOR}"
Round = Callable[[], Awaitable[None]]


class Person:
    """Clicks Approve on the `n`-th request's message as soon as it is posted."""

    def __init__(self, slack: FakeSlack, http: aiohttp.ClientSession, base: str) -> None:
        self.slack, self.http, self.base, self.count = slack, http, base, 0

    async def approve_next(self) -> None:
        self.count += 1
        message = await posted(self.slack, self.count)
        payload = block_actions_payload(message=message, channel_id=CHANNEL,
                                        action_id="hitl_approve", user_id=ACTOR)  # fmt: skip
        await post_signed(self.http, f"{self.base}/slack/events", payload, SECRET)


def ways(base: str, token: str, bare: httpx.AsyncClient, hitl: HitlClient,
         sync: SyncHitlClient) -> dict[str, Round]:  # fmt: skip
    headers = {"Authorization": f"Bearer {token}"}
    body = {"tool": "requestApproval", "arguments": APPROVAL, "to": TO}

    async def by_httpx() -> None:
        made = (await bare.post(f"{base}/api/v1/requests", json=body, headers=headers)).json()
        url = f"{base}/api/v1/requests/{made['id']}"
        answer = (await bare.get(url, params={"wait": 60}, headers=headers)).json()
        assert answer["status"] == "answered", answer

    async def by_client() -> None:
        assert (await hitl.request_approval(APPROVAL["action"], APPROVAL["reason"], TO)).approved

    async def by_sync_client() -> None:
        asked = asyncio.to_thread(sync.request_approval, APPROVAL["action"], APPROVAL["reason"], TO)
        assert (await asked).approved

    return {"bare httpx": by_httpx, "HitlClient": by_client, "SyncHitlClient": by_sync_client}


async def measure(rounds: int, base: str, token: str, person: Person) -> dict[str, list[float]]:
    async with httpx.AsyncClient(timeout=70) as bare, HitlClient(base, token) as hitl:
        with SyncHitlClient(base, token) as sync:
            chosen = ways(base, token, bare, hitl, sync)
            times: dict[str, list[float]] = {name: [] for name in chosen}
            for n in range(rounds + 3):  # the first three rounds warm up
                for name, way in chosen.items():
                    started = time.perf_counter()
                    await asyncio.gather(way(), person.approve_next())
                    if n >= 3:
                        times[name].append((time.perf_counter() - started) * 1000)
    return times


async def bench(rounds: int) -> None:
    async with served() as s:
        times = await measure(rounds, s.base, s.token, Person(s.slack, s.http, s.base))
    print_medians(f"create → click → answer read, {rounds} rounds each, in turns:", times,
                  "bare httpx")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=100, help="rounds per client")
    asyncio.run(bench(parser.parse_args().rounds))


if __name__ == "__main__":
    main()
