"""Soak: two `hitl-bridge serve` workers on one PostgreSQL database, behind the HTTP API and the
fake Slack, under a steady mix of requests for a set time, one worker killed and started again
half-way through.

Run with `.venv/bin/python bench/soak.py [--minutes 10] [--agents 6] [--postgres URL]` (URL
defaults to $HITL_TEST_POSTGRES_URL; a database of its own is made on that server and dropped
afterwards). It prints figures and asserts nothing.

Each agent, in a loop until the time is up: creates a request (with an idempotency key, so a
create retried on the other worker after a kill is made once) on either worker, and means it
to end one way: approved by a click, declined through the Decline modal, expired (a 3 s
deadline), or cancelled by the agent. The person (this process) clicks on either worker; the
agent long-polls either worker until it settles. A request is *lost* if it has not settled
the way it was meant to within a minute; *settled twice* if the audit log holds two settles of
it. Printed: requests done and by outcome, lost, settled twice, p50/p99 of create → settled at
the client, each worker's memory (RSS) and open sockets at its start and at the end, and the
database's connections.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402
from sqlalchemy import bindparam, text  # noqa: E402

from bot.doors.tokens import Tokens  # noqa: E402
from bot.store.doors import DoorTables  # noqa: E402
from tests.adapters.workers import (  # noqa: E402
    ALICE,
    CHANNEL,
    POSTGRES_URL_ENV,
    SECRET,
    Cluster,
    Worker,
    cluster,
    postgres_database,
)
from tests.fakes.slack_signing import (  # noqa: E402
    block_actions_payload,
    post_signed,
    view_submission_payload,
)

TO = f"slack:{CHANNEL}/{ALICE}"
OUTCOMES = {"answered": 55, "declined": 20, "expired": 10, "cancelled": 15}  # weights
SETTLES = ("request.resolved", "request.rejected", "request.timed_out", "request.cancelled",
           "request.undeliverable")  # fmt: skip
PATIENCE = 60.0  # seconds a request has to settle as meant before it counts as lost


@dataclass
class Tally:
    done: Counter[str] = field(default_factory=Counter)
    lost: list[str] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    retried: int = 0  # calls sent again to the other worker (the first one's was down)


class Soak:
    def __init__(self, c: Cluster, http: aiohttp.ClientSession, tokens: list[str]) -> None:
        self.c, self.http, self.tokens = c, http, tokens
        self.workers: list[Worker] = []
        self.tally = Tally()
        self.acting: set[asyncio.Task[None]] = set()  # the person's clicks under way

    def alive(self) -> list[Worker]:
        return [w for w in self.workers if w.alive and w.url] or self.workers

    async def call(self, method: str, path: str, token: str, **kwargs: Any) -> dict[str, Any]:
        """An API call to a worker picked at random; sent to another while one is down."""
        headers = {"Authorization": f"Bearer {token}"}
        for attempt in range(20):
            worker = random.choice(self.alive())
            try:
                async with self.http.request(method, f"{worker.url}/api/v1{path}",
                                             headers=headers, **kwargs) as response:  # fmt: skip
                    if response.status < 500 and response.status != 429:
                        body: dict[str, Any] = await response.json()
                        return body
            except (TimeoutError, aiohttp.ClientError):
                pass
            self.tally.retried += 1
            await asyncio.sleep(0.2 * (attempt + 1))
        raise RuntimeError(f"{method} {path}: no worker answered")

    async def slack(self, payload: dict[str, Any]) -> None:
        """A signed Slack payload to a worker that acks it."""
        for attempt in range(20):
            worker = random.choice(self.alive())
            with contextlib.suppress(aiohttp.ClientError, asyncio.TimeoutError):
                response = await post_signed(self.http, worker.events_url, payload, SECRET)
                if response.status == 200:
                    return
            self.tally.retried += 1
            await asyncio.sleep(0.2 * (attempt + 1))
        raise RuntimeError("no worker took the Slack payload")

    async def message(self, request_id: str) -> dict[str, Any] | None:
        """The request's Slack message, once posted (None if it settled first)."""
        for _ in range(int(PATIENCE / 0.05)):
            record = await self.c.store.get_request(request_id)
            if record is not None and "slack" in record.message_refs:
                ref = record.message_refs["slack"]
                return self.c.slack.message(ref["channel"], ref["ts"])
            await asyncio.sleep(0.05)
        return None

    async def person(self, request_id: str, outcome: str) -> None:
        message = await self.message(request_id)
        if message is None:
            return
        trigger = self.c.slack.new_trigger_id()
        action = "hitl_approve" if outcome == "answered" else "hitl_decline"
        await self.slack(block_actions_payload(message=message, channel_id=CHANNEL,
                                               action_id=action, user_id=ALICE,
                                               trigger_id=trigger))  # fmt: skip
        if outcome == "declined":
            view: dict[str, Any] = await self.c.slack.wait_for(
                lambda: self._modal(request_id), PATIENCE
            )
            await self.slack(view_submission_payload(
                view=view, user_id=ALICE, values={"reason": {"reason": "not now"}}))  # fmt: skip

    def _modal(self, request_id: str) -> dict[str, Any]:
        """The Decline modal opened for the request, or {} while it is not (yet) open."""
        views = self.c.slack.views.values()
        return next((v for v in views if v.get("private_metadata") == request_id), {})

    async def one(self, token: str) -> None:
        outcome = random.choices(list(OUTCOMES), weights=list(OUTCOMES.values()))[0]
        body = {"tool": "requestApproval", "to": TO, "idempotency_key": uuid.uuid4().hex,
                "arguments": {"action": "Deploy the soak", "reason": outcome},
                "timeout_seconds": 3 if outcome == "expired" else 120}  # fmt: skip
        started = time.perf_counter()
        made = await self.call("POST", "/requests", token, json=body)
        request_id = made["id"]
        self.tally.ids.append(request_id)
        if outcome == "cancelled":
            await self.call("DELETE", f"/requests/{request_id}", token)
        elif outcome != "expired":
            acting = asyncio.create_task(self.person(request_id, outcome))
            self.acting.add(acting)
            acting.add_done_callback(self.acting.discard)
        deadline = started + PATIENCE
        status = "pending"
        while status == "pending" and time.perf_counter() < deadline:
            got = await self.call("GET", f"/requests/{request_id}", token, params={"wait": 20})
            status = got["status"]
        if status != outcome:
            self.tally.lost.append(f"{request_id}: meant {outcome}, {status}")
            return
        self.tally.latencies.append((time.perf_counter() - started) * 1000)
        self.tally.done[outcome] += 1

    async def agent(self, token: str, until: float) -> None:
        while time.monotonic() < until:
            try:
                await self.one(token)
            except RuntimeError as err:
                self.tally.lost.append(str(err))


def memory(worker: Worker) -> tuple[float, int]:
    """The worker's RSS (MiB) and open sockets, from /proc."""
    with contextlib.suppress(OSError):
        status = Path(f"/proc/{worker.pid}/status").read_text()
        rss = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS"))
        fds = Path(f"/proc/{worker.pid}/fd")
        sockets = sum(1 for fd in fds.iterdir() if os.readlink(fd).startswith("socket:"))
        return rss / 1024, sockets
    return 0.0, 0


async def twice(c: Cluster) -> int:
    """Requests whose audit log holds more than one settle."""
    query = text("SELECT request_id FROM audit_log WHERE action IN :settles "
                 "GROUP BY request_id HAVING count(*) > 1").bindparams(
        bindparam("settles", expanding=True))  # fmt: skip
    async with c.store.engine.connect() as conn:
        return len((await conn.execute(query, {"settles": list(SETTLES)})).all())


async def connections(c: Cluster) -> int:
    async with c.store.engine.connect() as conn:
        query = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
        return int((await conn.execute(text(query))).scalar_one())


async def run(server: str, minutes: float, agents: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        async with postgres_database(server) as db_url, cluster(db_url, Path(folder)) as c:
            c.slack.channels.add(CHANNEL)
            tokens = [(await Tokens(DoorTables(c.store)).create(f"soak-{i}"))[0]
                      for i in range(agents)]  # fmt: skip
            timeout = aiohttp.ClientTimeout(total=40)
            async with aiohttp.ClientSession(timeout=timeout) as http:
                soak = Soak(c, http, tokens)
                settings = {"HITL_LEASE_SECONDS": "10", "HITL_TIMEOUT_SECONDS": "120"}
                soak.workers = [await c.start_worker("a", **settings),
                                await c.start_worker("b", **settings)]  # fmt: skip
                await asyncio.sleep(2)  # settled in: their pools and caches filled
                start = {w.name: memory(w) for w in soak.workers}
                until = time.monotonic() + minutes * 60
                killing = asyncio.create_task(kill_and_restart(soak, minutes * 30, settings))
                await asyncio.gather(*(soak.agent(t, until) for t in tokens))
                await killing
                end = {w.name: memory(w) for w in soak.workers if w.alive}
                report(soak.tally, start, end, await twice(c), await connections(c), minutes)
            for worker in c.workers:
                await c.kill(worker)
            c.workers.clear()  # their logs are long: not printed


async def kill_and_restart(soak: Soak, after: float, settings: dict[str, str]) -> None:
    await asyncio.sleep(after)
    victim = soak.workers[1]
    await soak.c.kill(victim)
    print(f"killed worker b (pid {victim.pid}) at {after:.0f} s", flush=True)
    await asyncio.sleep(2)
    soak.workers[1] = await soak.c.start_worker("b2", **settings)
    print("started worker b2", flush=True)


def report(tally: Tally, start: dict[str, Any], end: dict[str, Any], twice: int,
           connections: int, minutes: float) -> None:  # fmt: skip
    done = sum(tally.done.values())
    print(f"soak of {minutes:g} min: {done} requests settled as meant "
          f"({', '.join(f'{k} {v}' for k, v in sorted(tally.done.items()))})")  # fmt: skip
    print(f"  lost {len(tally.lost)}   settled twice {twice}   calls retried elsewhere "
          f"{tally.retried}")  # fmt: skip
    for line in tally.lost[:10]:
        print(f"    lost: {line}")
    if tally.latencies:
        ordered = sorted(tally.latencies)
        p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
        print(f"  create → settled at the client: p50 {statistics.median(ordered):.0f} ms   "
              f"p99 {p99:.0f} ms (expiries wait out their 3 s)")  # fmt: skip
    for name, (rss, sockets) in {**start}.items():
        print(f"  worker {name} at start: {rss:.0f} MiB, {sockets} sockets")
    for name, (rss, sockets) in end.items():
        print(f"  worker {name} at the end: {rss:.0f} MiB, {sockets} sockets")
    print(f"  database connections at the end: {connections}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--agents", type=int, default=6)
    parser.add_argument("--postgres", default=os.environ.get(POSTGRES_URL_ENV))
    args = parser.parse_args()
    if not args.postgres:
        sys.exit(f"bench/soak.py needs PostgreSQL: --postgres URL or {POSTGRES_URL_ENV}")
    asyncio.run(run(args.postgres, args.minutes, args.agents))


if __name__ == "__main__":
    main()
