"""Benchmark of the audit log: `audit export` of 1,000,000 rows, and `audit verify`.

Run with `.venv/bin/python bench/audit_export.py [--rows N] [--seal-rows M] [--postgres URL]`.
PostgreSQL is measured when `--postgres` or $HITL_TEST_POSTGRES_URL is given (in a throw-away
schema). It prints figures and asserts nothing.

The rows (half `request.created`, half `request.resolved`, with their requests) are written
sealed, in big batches (executemany on SQLite, COPY on PostgreSQL). Export and verify then run
in a child process of their own, so its peak memory (VmHWM, before and after) is
theirs alone: an export of 10,000 rows beside one of all the rows shows memory stays flat. The
sealer's rate is measured on M rows written unsealed, as the workers write them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import Connection, insert, text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from bot.audit.chain import seal_chain, verify_chain
from bot.audit.export import export_audit
from bot.audit.hashing import GENESIS, ChainRow, row_hash
from bot.audit.query import AuditFilter
from bot.store import SqlStore, open_store
from bot.store.engine import async_url
from bot.store.tables import audit, requests

BATCH = 20_000
START = datetime(2026, 1, 1, tzinfo=UTC)


def generated(count: int) -> Iterator[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """Batches of (request rows, sealed audit rows): two audit rows per request."""
    seq, prev = 0, GENESIS
    for first in range(0, count // 2, BATCH // 2):
        request_rows, audit_rows = [], []
        for n in range(first, min(first + BATCH // 2, count // 2)):
            at = START + timedelta(seconds=n)
            request_id = f"b-{n:07d}"
            tool, room = ("deploy", "rollback")[n % 2], f"slack:C{n % 7}:1.0"
            request_rows.append({
                "id": request_id, "tool_name": tool, "arguments": {"env": "prod", "n": n},
                "room_id": room, "tool_call_id": f"toolu_{n}", "channel_id": "slack",
                "channel_type": "ai", "actor_id": f"U{n % 50}", "detached": False,
                "status": "resolved", "result": '{"approved":true}', "reason": None,
                "settled_by": "U0BOB", "settled_at": at + timedelta(seconds=20),
                "created_at": at, "expires_at": None, "message_refs": {},
            })  # fmt: skip
            for action, when, actor, detail in (
                ("request.created", at, f"U{n % 50}",
                 {"tool_name": tool, "room_id": room, "arguments": {"env": "prod", "n": n}}),
                ("request.resolved", at + timedelta(seconds=20), "U0BOB",
                 {"result": '{"approved":true}'}),
            ):  # fmt: skip
                seq += 1
                row = ChainRow(seq, when, action, request_id, actor, detail)
                digest = row_hash(row, seq, prev)
                audit_rows.append({
                    "id": seq, "at": when, "action": action, "request_id": request_id,
                    "actor_id": actor, "detail": detail, "chain_seq": seq, "prev_hash": prev,
                    "hash": digest,
                })  # fmt: skip
                prev = digest
        yield request_rows, audit_rows


async def fill(store: SqlStore, count: int, schema: str | None) -> None:
    for request_rows, audit_rows in generated(count):
        if schema is None:

            def write(conn: Connection, r: Any = request_rows, a: Any = audit_rows) -> None:
                conn.execute(insert(requests), r)
                conn.execute(insert(audit), a)

            await store.write(write)
        else:
            await copy(store, schema, request_rows, audit_rows)
    if schema is not None:  # explicit ids: move the id sequence past them
        async with store.engine.begin() as conn:
            await conn.execute(text(
                "SELECT setval(pg_get_serial_sequence('audit_log', 'id'), max(id)) FROM audit_log"
            ))  # fmt: skip


async def copy(store: SqlStore, schema: str, *tables: list[dict[str, Any]]) -> None:
    async with store.engine.connect() as conn:
        raw = await conn.get_raw_connection()
        driver: Any = raw.driver_connection
        for name, rows in zip(("requests", "audit_log"), tables, strict=True):
            columns = list(rows[0])
            records = [
                tuple(json.dumps(v) if isinstance(v, dict) else v for v in row.values())
                for row in rows
            ]
            await driver.copy_records_to_table(
                name, records=records, columns=columns, schema_name=schema
            )


async def unsealed(store: SqlStore, count: int) -> None:
    rows = [{"at": START, "action": "request.cancelled", "request_id": f"u-{n}",
             "actor_id": None, "detail": {"reason": "bench"}} for n in range(count)]  # fmt: skip
    for first in range(0, count, BATCH):
        batch = rows[first : first + BATCH]

        def write(conn: Connection, rows: list[dict[str, Any]] = batch) -> None:
            conn.execute(insert(audit), rows)

        await store.write(write)


def maxrss_mib() -> float:
    """This process's peak resident memory (VmHWM: unlike getrusage's maxrss, it starts
    afresh at exec, so a child does not inherit the parent's peak)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def child(url: str, schema: str | None, what: str, limit: int) -> dict[str, float]:
    """One measurement in this (fresh) process: its duration and its peak memory growth."""
    store = SqlStore.from_url(url, schema=schema)
    try:
        before = maxrss_mib()
        started = time.perf_counter()
        if what == "verify":
            report = await verify_chain(store)
            assert report.intact, report.problem
            rows = report.checked
        else:
            wanted = AuditFilter(until=START + timedelta(seconds=limit // 2))
            rows = await export_audit(store, wanted, what, _discard)
        seconds = time.perf_counter() - started
        peak = maxrss_mib()
        return {"rows": rows, "seconds": seconds, "grew_mib": peak - before, "peak_mib": peak}
    finally:
        await store.close()


def _discard(text: str) -> None:
    """An export's output, encoded as a file would be, then dropped (to time ours alone)."""
    text.encode()


def measured(url: str, schema: str | None, what: str, limit: int) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", what, url, schema or "", str(limit)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return dict(json.loads(done.stdout))


async def bench(name: str, url: str, schema: str | None, rows: int, seal_rows: int) -> None:
    store = await open_store(url, schema=schema)
    try:
        started = time.perf_counter()
        await fill(store, rows, schema)
        made = time.perf_counter() - started
        print(f"{name}: {rows:,} rows written in {made:.1f} s ({rows / made:,.0f} rows/s)")
        for what, limit in (("csv", 10_000), ("csv", rows), ("jsonl", rows), ("verify", rows)):
            got = measured(url, schema, what, limit)
            label = "verify" if what == "verify" else f"export {what}"
            print(f"  {label:<13} {got['rows']:>9,.0f} rows  {got['rows'] / got['seconds']:>8,.0f}"
                  f" rows/s  peak RSS {got['peak_mib']:.0f} MiB (+{got['grew_mib']:.1f} MiB"
                  " while it ran)")  # fmt: skip
        await unsealed(store, seal_rows)
        started = time.perf_counter()
        sealed = await seal_chain(store)
        rate = sealed / (time.perf_counter() - started)
        print(f"  seal          {sealed:>9,} rows  {rate:>8,.0f} rows/s")
    finally:
        await store.close()


async def postgres_admin(url: str, statement: str) -> None:
    engine = create_async_engine(async_url(url), poolclass=NullPool, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as conn:
            await conn.execute(text(statement))
    finally:
        await engine.dispose()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--seal-rows", type=int, default=100_000)
    parser.add_argument("--postgres", default=os.environ.get("HITL_TEST_POSTGRES_URL"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite+aiosqlite:///{Path(folder) / 'audit.db'}"
        await bench("SQLite", url, None, args.rows, args.seal_rows)
    if not args.postgres:
        print("PostgreSQL skipped (no --postgres URL and no HITL_TEST_POSTGRES_URL)")
        return
    schema = f"bench_{uuid.uuid4().hex}"
    await postgres_admin(args.postgres, f'CREATE SCHEMA "{schema}"')
    try:
        await bench("PostgreSQL", args.postgres, schema, args.rows, args.seal_rows)
    finally:
        await postgres_admin(args.postgres, f'DROP SCHEMA "{schema}" CASCADE')


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        what, url, schema, limit = sys.argv[2:6]
        print(json.dumps(asyncio.run(child(url, schema or None, what, int(limit)))))
    else:
        asyncio.run(main())
