"""Benchmark of the persisted store: create + settle lifecycles per second.

Run with `.venv/bin/python bench/store_throughput.py [--lifecycles N] [--tasks K] [--runs R]
[--postgres URL]`. PostgreSQL is measured when `--postgres` or $HITL_TEST_POSTGRES_URL is given
(in a throw-away schema). It prints figures and asserts nothing.

One lifecycle is what a real request costs the database: `create_request` (one transaction:
the request, its `created` transition and audit rows) then `settle` (one transaction: the
compare-and-set UPDATE, its transition and audit rows). Nothing is batched across lifecycles.
K tasks share the lifecycles, as concurrent conversations would; each run uses a fresh database,
and the median over the runs is reported because a small shared machine is noisy.

Beside the rate it prints this process's CPU time per lifecycle (driver threads included) and
the SQL statements sent per lifecycle (BEGIN and COMMIT are not statements here): when the CPU
time is close to the wall time per lifecycle, the client, not the database, is the limit.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from bot.records import RequestRecord, RequestStatus, Settlement
from bot.store import SqlStore, open_store
from bot.store.engine import async_url

TARGET = 2000.0  # lifecycles per second, per database


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


async def timed_run(store: SqlStore, count: int, tasks: int) -> Run:
    """`count` lifecycles spread over `tasks` tasks."""
    ids = [uuid.uuid4().hex for _ in range(count)]
    shares = [ids[i::tasks] for i in range(tasks)]
    sent = [0]

    def count_statement(*_: object) -> None:
        sent[0] += 1

    event.listen(store.statement_engine, "before_cursor_execute", count_statement)
    cpu, started = time.process_time(), time.perf_counter()
    await asyncio.gather(*(lifecycles(store, share) for share in shares))
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    event.remove(store.statement_engine, "before_cursor_execute", count_statement)
    return Run(count / wall, cpu / count * 1e6, sent[0] / count)


async def sqlite_run(count: int, tasks: int) -> Run:
    with tempfile.TemporaryDirectory() as directory:
        store = await open_store(f"sqlite+aiosqlite:///{Path(directory) / 'bench.db'}")
        try:
            await timed_run(store, 200, tasks)  # warm up connections and statement caches
            return await timed_run(store, count, tasks)
        finally:
            await store.close()


async def postgres_admin(url: str, statement: str) -> None:
    engine = create_async_engine(async_url(url), poolclass=NullPool, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as conn:
            await conn.execute(text(statement))
    finally:
        await engine.dispose()


async def postgres_run(url: str, count: int, tasks: int) -> Run:
    schema = f"bench_{uuid.uuid4().hex}"
    await postgres_admin(url, f'CREATE SCHEMA "{schema}"')
    try:
        store = await open_store(url, schema=schema)
        try:
            await timed_run(store, 200, tasks)
            return await timed_run(store, count, tasks)
        finally:
            await store.close()
    finally:
        await postgres_admin(url, f'DROP SCHEMA "{schema}" CASCADE')


def report(name: str, runs: list[Run]) -> None:
    median = statistics.median(run.rate for run in runs)
    rates = ", ".join(f"{run.rate:,.0f}" for run in runs)
    verdict = "meets" if median >= TARGET else "MISSES"
    print(f"{name:<11} {median:>7,.0f} lifecycles/s (runs: {rates}), {verdict} {TARGET:,.0f}/s")
    cpu = statistics.median(run.cpu_us for run in runs)
    statements = statistics.median(run.statements for run in runs)
    print(
        f"{'':<11} wall {1e6 / median:,.0f} us, client CPU {cpu:,.0f} us, "
        f"{statements:.1f} statements per lifecycle"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lifecycles", type=int, default=2000)
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--postgres", default=os.environ.get("HITL_TEST_POSTGRES_URL"))
    args = parser.parse_args()

    print(f"{args.lifecycles:,} create+settle lifecycles, {args.tasks} tasks, {args.runs} runs")
    report(
        "SQLite",
        [await sqlite_run(args.lifecycles, args.tasks) for _ in range(args.runs)],
    )
    if args.postgres:
        runs = range(args.runs)
        rates = [await postgres_run(args.postgres, args.lifecycles, args.tasks) for _ in runs]
        report("PostgreSQL", rates)
    else:
        print("PostgreSQL  skipped (no --postgres URL and no HITL_TEST_POSTGRES_URL)")


if __name__ == "__main__":
    asyncio.run(main())
