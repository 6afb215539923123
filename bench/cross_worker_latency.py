"""Benchmark: a click acked on one worker, the answer reaching the model on another.

Run with `.venv/bin/python bench/cross_worker_latency.py [--postgres URL] [--requests N]`
(URL defaults to $HITL_TEST_POSTGRES_URL; the script makes a database of its own on that
server and drops it afterwards). It prints figures and asserts nothing.

Two workers, A and B: `python -m adapters.cli.command serve` processes on one PostgreSQL database,
with FakeSlack and FakeAnthropic served by this process (tests/adapters/workers.py). Each
request's lifecycle, one after another, each in a thread of its own:

1. a mention is delivered to A; the scripted model calls `requestApproval`; A posts the
   request and waits (its waiter is in A's memory);
2. the actor's Approve click is delivered to B, which acks, settles the request in the store
   (compare-and-set, audit, NOTIFY) and edits the message;
3. A hears the NOTIFY, wakes its waiter, saves the transcript and calls the model with the
   tool_result; the model answers, A posts the reply and ends the run.

Latency: from the moment this process has B's HTTP response to the click (the ack) to the
moment FakeAnthropic (in this process, same clock: time.perf_counter) receives the request
carrying that click's tool_result. Warm-up lifecycles are left out. Beside it, measured in the
same run from this process with nothing else running: a bare asyncpg round trip, a bare NOTIFY
between two connections, and the bare SDK sending A's last model request again; the path's
floor is the sum over what it does (5 round trips, a NOTIFY, the model call).

Database round trips: a second phase runs fresh workers whose database URL points at a relay
in this process (one per worker), which reads the PostgreSQL frontend protocol on its way to
the server and counts every Sync and simple Query message: each is one exchange in which the
worker waits for the server (a round trip). It also names what each exchange executed (from
the Parse/Bind/Query messages). Background work (lease renewals, the adoption loop, the
deadline scheduler) is counted over an idle period and subtracted. The relay adds its own
delay, so no latency is measured in that phase.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import statistics
import struct
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import anthropic  # noqa: E402
import asyncpg  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402

from tests.adapters.workers import (  # noqa: E402
    POSTGRES_URL_ENV,
    Cluster,
    Worker,
    api_key,
    cluster,
    eventually,
    postgres_database,
)
from tests.fakes.anthropic_api import Turn, reply_text, reply_tool_use  # noqa: E402

DONE = "Deployed."
WARMUP = 5
IDLE_SECONDS = 5.0
LEASE_SECONDS = 10  # the production default: renewals every 3.3 s, adoption checks every 5 s


# -- the model ------------------------------------------------------------------------------------


class Model:
    """Scripts FakeAnthropic: every mention asks for approval (a new tool_use id each time);
    every answer gets a short reply. Notes when each tool_result arrives."""

    def __init__(self) -> None:
        self.arrived: dict[str, float] = {}
        self.resent: list[float] | None = None  # set: every request is a reference, timed here
        self._ids = itertools.count(1)

    def __call__(self, body: dict[str, Any]) -> Turn:
        now = time.perf_counter()
        if self.resent is not None:
            self.resent.append(now)
            return reply_text(DONE)
        last = body["messages"][-1]["content"]
        results = (
            [b for b in last if b.get("type") == "tool_result"] if isinstance(last, list) else []
        )
        for result in results:
            self.arrived.setdefault(result["tool_use_id"], now)
        if results:
            return reply_text(DONE)
        tool_use_id = f"toolu_bench_{next(self._ids):05d}"
        return reply_tool_use(
            "requestApproval", {"action": "Deploy", "reason": "Bench"}, id=tool_use_id
        )


# -- counting round trips: a PostgreSQL protocol relay ---------------------------------------------

_SSL_REQUEST, _GSSENC_REQUEST = 80877103, 80877104


class CountingRelay:
    """Relays TCP to PostgreSQL and reads what the client sends: round trips (Sync, Query) and
    the statements executed, by kind."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.round_trips = 0
        self.statements: Counter[str] = Counter()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    def snapshot(self) -> tuple[int, Counter[str]]:
        return self.round_trips, Counter(self.statements)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_connection(self.host, self.port)
        pumps = [
            asyncio.create_task(self._from_client(reader, upstream_writer)),
            asyncio.create_task(_copy(upstream_reader, writer)),
        ]
        self._tasks.update(pumps)
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pump in pumps:
                pump.cancel()
                self._tasks.discard(pump)
            await asyncio.gather(*pumps, return_exceptions=True)
            for w in (writer, upstream_writer):
                w.close()
                with contextlib.suppress(Exception):
                    await w.wait_closed()

    async def _from_client(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        prepared: dict[bytes, str] = {}
        bound = ""
        while True:  # untyped start-up messages: SSLRequest (answered 'N' here), then Startup
            head = await reader.readexactly(8)
            length, code = struct.unpack("!ii", head)
            body = await reader.readexactly(length - 8)
            writer.write(head + body)
            await writer.drain()
            if code not in (_SSL_REQUEST, _GSSENC_REQUEST):
                break
        while True:
            head = await reader.readexactly(5)
            kind, length = head[:1], struct.unpack("!i", head[1:])[0]
            body = await reader.readexactly(length - 4)
            writer.write(head + body)
            if kind == b"P":  # Parse: statement name, query
                name, query = body.split(b"\0")[:2]
                prepared[name] = _kind(query.decode(errors="replace"))
            elif kind == b"B":  # Bind: portal, statement name
                bound = prepared.get(body.split(b"\0")[1], "?")
            elif kind == b"E":  # Execute the bound statement
                self.statements[bound] += 1
            elif kind == b"Q":  # a simple query (BEGIN, COMMIT, ROLLBACK, LISTEN …)
                self.statements[_kind(body.rstrip(b"\0").decode(errors="replace"))] += 1
                self.round_trips += 1
            elif kind == b"S":  # Sync: the client now waits for ReadyForQuery
                self.round_trips += 1
            await writer.drain()


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while data := await reader.read(65536):
        writer.write(data)
        await writer.drain()


def _kind(query: str) -> str:
    """A statement, named by what it does and to which table."""
    words = query.replace("\n", " ").split()
    if not words or words[0] == ";":
        return "ping (;)"
    verb = words[0].upper().rstrip(";")
    if "pg_notify" in query:
        return "SELECT pg_notify"
    lowered = [w.strip('"(,').lower() for w in words]
    for marker in ("from", "into", "update"):
        if marker in lowered[:-1] and verb in ("SELECT", "INSERT", "UPDATE", "DELETE"):
            table = lowered[lowered.index(marker) + 1]
            return f"{verb} {table}"
    return " ".join(words[:2]).upper().rstrip(";") if verb == "BEGIN" else verb


# -- one lifecycle ---------------------------------------------------------------------------------


async def lifecycle(c: Cluster, model: Model, a: Worker, b: Worker, n: int) -> float:
    """Mention on A, click on B, wait for the reply and the run's end; returns the latency (s)
    from B's ack to the tool_result arriving at the model."""
    thread = await c.mention(a, f"deploy {n}")
    message, record = await thread.posted()
    await c.click(b, message, "hitl_approve")
    acked = time.perf_counter()
    await thread.reply(DONE)
    await eventually(lambda: c.finished(thread.room_id), f"run {n} finished")
    return model.arrived[record.tool_call_id] - acked


async def start_pair(
    c: Cluster, a_url: str | None = None, b_url: str | None = None
) -> tuple[Worker, Worker]:
    def settings(url: str | None) -> dict[str, Any]:
        extra: dict[str, Any] = {"HITL_LEASE_SECONDS": LEASE_SECONDS, "HITL_TIMEOUT_SECONDS": 600}
        return extra | ({"HITL_DATABASE_URL": url} if url else {})

    a = await c.start_worker("a", **settings(a_url))
    b = await c.start_worker("b", **settings(b_url))
    return a, b


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


async def measure_latency(server: str, requests: int, folder: Path) -> None:
    async with postgres_database(server) as url, cluster(url, folder) as c:
        model = Model()
        c.model.script(*[model] * (2 * (requests + WARMUP) + 10))
        a, b = await start_pair(c)
        latencies = [await lifecycle(c, model, a, b, n) for n in range(requests + WARMUP)]
        measured = [1000 * x for x in latencies[WARMUP:]]
        print(f"click acked on B -> tool_result at the model from A, {len(measured)} requests "
              f"(after {WARMUP} warm-up):")  # fmt: skip
        median, p90 = statistics.median(measured), percentile(measured, 0.9)
        p99, low, high = percentile(measured, 0.99), min(measured), max(measured)
        print(f"  median {median:6.2f} ms   p90 {p90:6.2f} ms   p99 {p99:6.2f} ms"
              f"   min {low:6.2f} ms   max {high:6.2f} ms")  # fmt: skip
        for worker in (a, b):
            await c.terminate(worker, 30)
        await report_floor(url, c, model, median)


# -- the physical references: what the path's round trips and the model call cost alone ----------

# The path from B's ack to the model's request, as built: B reads the request and writes its
# proposal (which NOTIFYs A); A reads the proposal, writes the settle, saves the transcript,
# then calls the model.
PATH_ROUND_TRIPS = 5
REFERENCE_SAMPLES = 200


async def report_floor(url: str, c: Cluster, model: Model, ours: float) -> None:
    """Beside our median, in the same run: a bare asyncpg round trip, a bare NOTIFY from one
    connection to another, and the bare SDK sending A's last model request again; their sum
    over the path is what the path would cost with nothing else to do."""
    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    round_trip, notify = await bare_round_trip(dsn), await bare_notify(dsn)
    sdk = await bare_sdk(c, model)
    floor = PATH_ROUND_TRIPS * round_trip + notify + sdk
    print("the same path's physical references, measured now (medians of"
          f" {REFERENCE_SAMPLES}):")  # fmt: skip
    print(f"  asyncpg round trip {round_trip:5.2f} ms; NOTIFY to a listening connection"
          f" {notify:5.2f} ms;\n  the anthropic SDK sending A's last request"
          f" {sdk:5.2f} ms")  # fmt: skip
    print(f"  floor: {PATH_ROUND_TRIPS} round trips + a NOTIFY + the SDK = {floor:5.2f} ms;"
          f" ours {ours:5.2f} ms = {ours / floor:4.2f} x the floor")  # fmt: skip


async def bare_round_trip(dsn: str) -> float:
    conn = await asyncpg.connect(dsn)
    try:
        statement = await conn.prepare("SELECT 1")
        samples = []
        for _ in range(REFERENCE_SAMPLES):
            started = time.perf_counter()
            await statement.fetchval()
            samples.append(time.perf_counter() - started)
        return 1000 * statistics.median(samples)
    finally:
        await conn.close()


async def bare_notify(dsn: str) -> float:
    sender, listener = await asyncpg.connect(dsn), await asyncpg.connect(dsn)
    heard: asyncio.Queue[float] = asyncio.Queue()
    try:
        await listener.add_listener("bench", lambda *_: heard.put_nowait(time.perf_counter()))
        samples = []
        for _ in range(REFERENCE_SAMPLES):
            started = time.perf_counter()
            await sender.execute("SELECT pg_notify('bench', 'x')")
            samples.append(await asyncio.wait_for(heard.get(), 5) - started)
        return 1000 * statistics.median(samples)
    finally:
        await sender.close()
        await listener.close()


async def bare_sdk(c: Cluster, model: Model) -> float:
    """A's last request to the model (the one carrying a tool_result), sent again by the SDK
    from this process: from the call to FakeAnthropic's handler having it."""
    body = dict(c.model.requests[-2].body)  # the last is the reply to DONE's turn
    body.pop("stream", None)
    arrived: list[float] = []
    model.resent = arrived
    c.model.script(*[model] * REFERENCE_SAMPLES)
    client = anthropic.AsyncAnthropic(api_key=api_key("a"), base_url=c.model.base_url)
    samples: list[float] = []
    try:
        for _ in range(REFERENCE_SAMPLES):
            started = time.perf_counter()
            async with client.messages.stream(**body) as stream:
                await stream.get_final_message()
            samples.append(arrived[-1] - started)
        return 1000 * statistics.median(samples)
    finally:
        await client.close()


async def count_round_trips(server: str, requests: int, folder: Path) -> None:
    async with postgres_database(server) as url, cluster(url, folder) as c:
        target = make_url(url)
        relays = {
            name: CountingRelay(target.host or "127.0.0.1", target.port or 5432) for name in "ab"
        }
        via = {name: target.set(port=await relay.start()).render_as_string(hide_password=False)
               for name, relay in relays.items()}  # fmt: skip
        try:
            model = Model()
            c.model.script(*[model] * (2 * (requests + WARMUP) + 10))
            a, b = await start_pair(c, via["a"], via["b"])
            for n in range(WARMUP):
                await lifecycle(c, model, a, b, n)
            before = {name: relay.snapshot() for name, relay in relays.items()}
            started = time.monotonic()
            for n in range(WARMUP, WARMUP + requests):
                await lifecycle(c, model, a, b, n)
            busy = time.monotonic() - started
            after = {name: relay.snapshot() for name, relay in relays.items()}
            await asyncio.sleep(IDLE_SECONDS)
            idle = {name: relay.snapshot() for name, relay in relays.items()}
            report_round_trips(requests, busy, before, after, idle)
            for worker in (a, b):
                await c.terminate(worker, 30)
        finally:
            for relay in relays.values():
                await relay.close()


Snapshot = tuple[int, Counter[str]]


def report_round_trips(
    requests: int, busy: float, before: dict[str, Snapshot], after: dict[str, Snapshot],
    idle: dict[str, Snapshot],
) -> None:  # fmt: skip
    print(f"\ndatabase round trips per request lifecycle ({requests} lifecycles, counted on"
          " the wire by a PostgreSQL protocol relay: Sync + simple Query messages):")  # fmt: skip
    total = 0.0
    for name, role in (("a", "A (mention, wait, resume)"), ("b", "B (click)")):
        # What the worker does on its own (adoption checks, the deadline scheduler, lease
        # renewals of runs it holds) is measured while idle and taken out at that rate.
        share = busy / IDLE_SECONDS
        background = idle[name][0] - after[name][0]
        own = (after[name][0] - before[name][0]) - background * share
        total += own
        rate = background / IDLE_SECONDS
        print(f"  worker {role}: {own / requests:5.1f}  (background: {rate:.2f}/s, taken out)")
        quiet = idle[name][1] - after[name][1]
        statements = after[name][1] - before[name][1]
        per = {kind: (count - quiet[kind] * share) / requests for kind, count in statements.items()}
        shown = ", ".join(
            f"{kind} {count:.1f}" for kind, count in sorted(per.items(), key=lambda kv: -kv[1])
            if count >= 0.05
        )  # fmt: skip
        print(f"    transactions {per.get('BEGIN', 0.0):.1f}; statements: {shown}")
    print(f"  both workers: {total / requests:5.1f}")


async def main_async(server: str, requests: int, count_requests: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        await measure_latency(server, requests, Path(folder))
        if count_requests:
            await count_round_trips(server, count_requests, Path(folder))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--postgres", default=os.environ.get(POSTGRES_URL_ENV))
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--count-requests", type=int, default=20, help="0 skips the counting phase")
    args = parser.parse_args()
    if not args.postgres:
        parser.error(f"needs --postgres URL or ${POSTGRES_URL_ENV}")
    asyncio.run(main_async(args.postgres, args.requests, args.count_requests))


if __name__ == "__main__":
    main()
