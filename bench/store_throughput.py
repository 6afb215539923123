"""Benchmark of the persisted store: create + settle lifecycles per second, beside the bare driver.

Run with `.venv/bin/python bench/store_throughput.py [--lifecycles N] [--tasks K] [--runs R]
[--postgres URL] [--processes P]`. PostgreSQL is measured when `--postgres` or
$HITL_TEST_POSTGRES_URL is given (in throw-away schemas). It prints figures and asserts nothing.

One lifecycle is what a real request costs the database: `create_request` (one transaction:
the request and its audit row) then `settle` (one transaction: the compare-and-set UPDATE and
its audit row). K tasks share the lifecycles, as concurrent conversations would. Each run
measures, on fresh databases of the same schema, first the bare driver sending the same two
transactions per lifecycle (bench/bare_driver.py: what the database itself allows on this
disk, with the same durability and concurrency), then the store; the medians over the runs are
reported with their ratio, because a small shared machine is noisy.

Beside each rate: this process's CPU time per lifecycle (driver threads included), the SQL
statements sent per lifecycle (BEGIN, COMMIT and savepoints are not counted) and the commits
per lifecycle (where concurrent lifecycles share one, fewer than two). `--processes 2` also
runs the store in two processes at once on one PostgreSQL database, as two workers would.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from bench.bare_driver import BarePostgres, BareSqlite
from bot.records import RequestRecord, RequestStatus, Settlement
from bot.store import SqlStore, open_store, upgrade
from bot.store.engine import async_url

TARGET = 2000.0  # lifecycles per second, per database
WARMUP = 200


def make_record(request_id: str) -> RequestRecord:
    now = datetime.now(UTC)
    return RequestRecord(
        id=request_id,
        tool_name="requestApproval",
        arguments={"action": "deploy to production", "reason": "release 1.2.3"},
        room_id="C123:1712345678.000100",
        tool_call_id=f"toolu_{request_id}",
        channel_id="slack",
        channel_type="slack",
        actor_id="U123",
        detached=False,
        created_at=now,
        expires_at=now + timedelta(minutes=10),
    )


async def lifecycles(store: SqlStore, ids: list[str]) -> None:
    for request_id in ids:
        await store.create_request(make_record(request_id))
        settlement = Settlement(
            request_id, RequestStatus.RESOLVED, datetime.now(UTC), '{"approved": true}', by="U123"
        )
        if not await store.settle(settlement):
            raise RuntimeError(f"settle of {request_id} lost")


@dataclass(frozen=True)
class Run:
    rate: float  # lifecycles per second
    cpu_us: float  # CPU time of this process per lifecycle
    statements: float  # statements sent per lifecycle
    commits: float  # transactions committed per lifecycle


Shares = Callable[[list[list[str]]], Awaitable[None]]


async def timed(count: int, tasks: int, run: Shares, sent: Callable[[], tuple[int, int]]) -> Run:
    """`count` lifecycles spread over `tasks` tasks by `run`; `sent` counts (statements,
    commits) so far."""
    ids = [uuid.uuid4().hex for _ in range(count)]
    shares = [ids[i::tasks] for i in range(tasks)]
    statements, commits = sent()
    cpu, started = time.process_time(), time.perf_counter()
    await run(shares)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    statements_after, commits_after = sent()
    return Run(
        count / wall,
        cpu / count * 1e6,
        (statements_after - statements) / count,
        (commits_after - commits) / count,
    )


async def store_run(store: SqlStore, count: int, tasks: int) -> Run:
    counted = [0, 0]

    def seen(statement: str) -> None:
        word = statement.lstrip()[:8].upper()
        if word.startswith("COMMIT"):
            counted[1] += 1
        elif not word.startswith(("BEGIN", "SAVEPOIN", "RELEASE", "ROLLBACK")):
            counted[0] += 1

    async def run(shares: list[list[str]]) -> None:
        await asyncio.gather(*(lifecycles(store, share) for share in shares))

    unwatch = store.watch(seen)
    try:
        await timed(WARMUP, tasks, run, lambda: (counted[0], counted[1]))
        return await timed(count, tasks, run, lambda: (counted[0], counted[1]))
    finally:
        unwatch()


async def bare_run(bare: BareSqlite | BarePostgres, count: int, tasks: int) -> Run:
    """The bare driver's lifecycles, `tasks` at a time: two commits each, never shared."""
    await bare.open()

    async def run(shares: list[list[str]]) -> None:
        await asyncio.gather(*(bare.lifecycles(n, share) for n, share in enumerate(shares)))

    try:
        await timed(WARMUP, tasks, run, lambda: (bare.statements, 0))
        result = await timed(count, tasks, run, lambda: (bare.statements, 0))
        return Run(result.rate, result.cpu_us, result.statements, 2.0)
    finally:
        await bare.close()


async def sqlite_runs(count: int, tasks: int) -> tuple[Run, Run]:
    with tempfile.TemporaryDirectory() as directory:
        bare_path, ours_path = Path(directory) / "bare.db", Path(directory) / "ours.db"
        await upgrade(f"sqlite:///{bare_path}")
        bare = await bare_run(BareSqlite(str(bare_path)), count, tasks)
        store = await open_store(f"sqlite:///{ours_path}")
        try:
            return bare, await store_run(store, count, tasks)
        finally:
            await store.close()


async def postgres_admin(url: str, statement: str) -> None:
    engine = create_async_engine(async_url(url), poolclass=NullPool, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as conn:
            await conn.execute(text(statement))
    finally:
        await engine.dispose()


@asynccontextmanager
async def postgres_schema(url: str) -> AsyncIterator[str]:
    schema = f"bench_{uuid.uuid4().hex}"
    await postgres_admin(url, f'CREATE SCHEMA "{schema}"')
    try:
        await upgrade(url, schema=schema)
        yield schema
    finally:
        await postgres_admin(url, f'DROP SCHEMA "{schema}" CASCADE')


def plain_dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


async def postgres_runs(url: str, count: int, tasks: int) -> tuple[Run, Run]:
    async with postgres_schema(url) as schema:
        bare = await bare_run(BarePostgres(plain_dsn(url), schema, tasks), count, tasks)
    async with postgres_schema(url) as schema:
        store = await open_store(url, schema=schema, migrate=False)
        try:
            return bare, await store_run(store, count, tasks)
        finally:
            await store.close()


def _worker_process(url: str, schema: str, count: int, tasks: int, barrier: Any, out: Any) -> None:
    """One process: warm up, wait for the others, then `count` lifecycles; reports when its
    timed part started and ended (wall clock, shared by the processes)."""

    async def go() -> tuple[float, float]:
        store = await open_store(url, schema=schema, migrate=False)
        try:
            ids = [uuid.uuid4().hex for _ in range(WARMUP)]
            await asyncio.gather(*(lifecycles(store, ids[i::tasks]) for i in range(tasks)))
            ids = [uuid.uuid4().hex for _ in range(count)]
            await asyncio.to_thread(barrier.wait)
            started = time.time()
            await asyncio.gather(*(lifecycles(store, ids[i::tasks]) for i in range(tasks)))
            return started, time.time()
        finally:
            await store.close()

    out.put(asyncio.run(go()))


async def postgres_processes_run(url: str, count: int, tasks: int, processes: int) -> float:
    """The store in `processes` processes at once on one database: lifecycles per second, all
    of them over the span from the first process's start to the last one's end."""
    async with postgres_schema(url) as schema:
        context = multiprocessing.get_context("spawn")
        barrier, out = context.Barrier(processes), context.Queue()
        share = count // processes
        workers = [
            context.Process(target=_worker_process, args=(url, schema, share, tasks, barrier, out))
            for _ in range(processes)
        ]
        for worker in workers:
            worker.start()
        spans: list[tuple[float, float]] = [await asyncio.to_thread(out.get) for _ in workers]
        for worker in workers:
            worker.join()
        first, last = min(span[0] for span in spans), max(span[1] for span in spans)
        return share * processes / (last - first)


def line(name: str, runs: list[Run]) -> float:
    median = statistics.median(run.rate for run in runs)
    rates = ", ".join(f"{run.rate:,.0f}" for run in runs)
    cpu = statistics.median(run.cpu_us for run in runs)
    statements = statistics.median(run.statements for run in runs)
    commits = statistics.median(run.commits for run in runs)
    print(
        f"  {name:<12} {median:>7,.0f} lifecycles/s (runs: {rates}); client CPU {cpu:,.0f} us, "
        f"{statements:.1f} statements and {commits:.2f} commits per lifecycle"
    )
    return median


def report(database: str, pairs: list[tuple[Run, Run]]) -> None:
    print(database)
    bare = line("bare driver", [pair[0] for pair in pairs])
    ours = line("hitl-bridge", [pair[1] for pair in pairs])
    ratios = ", ".join(f"{pair[1].rate / pair[0].rate:.2f}" for pair in pairs)
    verdict = "meets" if ours >= TARGET else "misses"
    print(
        f"  ratio {ours / bare:.2f} of the bare driver (per run: {ratios}); "
        f"{verdict} the {TARGET:,.0f}/s goal"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lifecycles", type=int, default=2000)
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--processes", type=int, default=2, help="PostgreSQL; 1 skips it")
    parser.add_argument("--postgres", default=os.environ.get("HITL_TEST_POSTGRES_URL"))
    parser.add_argument("--only", choices=["sqlite", "postgres"])
    args = parser.parse_args()

    n, k = args.lifecycles, args.tasks
    print(f"{n:,} create+settle lifecycles, {k} tasks, {args.runs} runs (median)")
    if args.only != "postgres":
        report("SQLite", [await sqlite_runs(n, k) for _ in range(args.runs)])
    if args.only == "sqlite":
        return
    if not args.postgres:
        print("PostgreSQL  skipped (no --postgres URL and no HITL_TEST_POSTGRES_URL)")
        return
    report("PostgreSQL", [await postgres_runs(args.postgres, n, k) for _ in range(args.runs)])
    if args.processes > 1:
        rates = [
            await postgres_processes_run(args.postgres, n, k, args.processes)
            for _ in range(args.runs)
        ]
        print(
            f"  {args.processes} processes, {k} tasks each: "
            f"{statistics.median(rates):,.0f} lifecycles/s in all (runs: "
            + ", ".join(f"{rate:,.0f}" for rate in rates)
            + ")"
        )


if __name__ == "__main__":
    asyncio.run(main())
