"""The audit log's filters and exports over 10,000 generated requests (18,000 rows, several
export pages), on SQLite and PostgreSQL: what `hitl-bridge audit export` and `list` stream
(bot/audit/export.py), checked row by row against what each request was made as; the chain
sealed over all of them verifies."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from datetime import datetime, timedelta

import pytest

from bot.audit.chain import seal_chain, verify_chain
from bot.audit.export import PAGE, audit_lines, export_audit
from bot.audit.query import AuditFilter
from bot.store import SqlStore
from tests.bot.store.generated import START, Generated, generate

pytestmark = pytest.mark.slow  # ten thousand requests

COUNT = 10_000
Row = tuple[str, str]  # (request id, action)


def rows_of(one: Generated) -> list[tuple[Row, datetime]]:
    """The audit rows request `one` was generated with, in the order they were written."""
    made = [((one.id, "request.created"), one.at)]
    if one.status != "pending":
        made.append(((one.id, f"request.{one.status}"), one.at + timedelta(seconds=30)))
    return made


def expected(
    keep: Callable[[Generated], bool], since: datetime | None = None, until: datetime | None = None
) -> list[Row]:
    return [
        row
        for n in range(COUNT)
        if keep(one := Generated(n))
        for row, at in rows_of(one)
        if (since is None or at >= since) and (until is None or at < until)
    ]


async def exported(store: SqlStore, wanted: AuditFilter, fmt: str = "jsonl") -> list[str]:
    chunks: list[str] = []
    count = await export_audit(store, wanted, fmt, chunks.append)
    text = "".join(chunks)
    lines = text.splitlines()
    assert count == len(lines) - (1 if fmt == "csv" else 0)
    return lines


def as_rows(lines: list[str]) -> list[Row]:
    return [(row["request_id"], row["action"]) for row in map(json.loads, lines)]


SINCE, UNTIL = START + timedelta(days=2), START + timedelta(days=5, hours=3)
Keep = Callable[[Generated], bool]
CASES: list[tuple[str, AuditFilter, Keep, datetime | None, datetime | None]] = [
    ("everything", AuditFilter(), lambda one: True, None, None),
    ("tool", AuditFilter(tool="deploy"), lambda one: one.tool == "deploy", None, None),
    ("room", AuditFilter(room="slack:C1:1.0"), lambda one: one.room == "slack:C1:1.0",
     None, None),
    ("actor", AuditFilter(actor="U04"), lambda one: one.actor == "U04", None, None),
    ("status", AuditFilter(status="rejected"), lambda one: one.status == "rejected", None, None),
    ("since-until", AuditFilter(since=SINCE, until=UNTIL), lambda one: True, SINCE, UNTIL),
    ("combined", AuditFilter(tool="deploy", status="cancelled", actor="U04", since=SINCE),
     lambda one: (one.tool, one.status, one.actor) == ("deploy", "cancelled", "U04"),
     SINCE, None),
]  # fmt: skip


@pytest.fixture
async def volume(store: SqlStore) -> SqlStore:
    await generate(store, COUNT)
    await seal_chain(store)
    return store


async def test_filtered_exports_of_ten_thousand_requests(volume: SqlStore) -> None:
    store = volume
    every = expected(lambda one: True)
    assert len(every) > 3 * PAGE  # several pages, each read after the last
    for name, wanted, keep, since, until in CASES:
        rows = as_rows(await exported(store, wanted))
        assert rows == expected(keep, since, until), name  # each once, oldest first
        assert rows, name

    text = "\n".join(await exported(store, AuditFilter(), "csv"))
    table = list(csv.DictReader(io.StringIO(text)))
    assert [(row["request_id"], row["action"]) for row in table] == every
    assert {row["tool"] for row in table} == {"deploy", "rollback", "requestApproval",
                                              "confirmAction"}  # fmt: skip
    assert [int(row["chain_seq"]) for row in table] == list(range(1, len(every) + 1))

    newest = [line async for line in audit_lines(store, AuditFilter(actor="U07"),
                                                newest_first=True, limit=30)]  # fmt: skip
    assert [(line.request_id, line.action) for line in newest] == list(
        reversed(expected(lambda one: one.actor == "U07"))
    )[:30]
    report = await verify_chain(store)
    assert report.intact and report.checked == len(every), report.problem
