"""Streaming the audit log out: pages of rows (the store's `audit_page`) written as CSV or JSON
lines as they come, so an export of any size holds one page in memory."""

from __future__ import annotations

import asyncio
import csv
import io
import json
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

from bot.audit.query import AuditFilter, AuditLine

FORMATS = ("csv", "jsonl")
PAGE = 5000
COLUMNS = ("id", "chain_seq", "at", "action", "request_id", "actor_id", "tool", "room",
           "status", "detail", "prev_hash", "hash")  # fmt: skip
# A spreadsheet runs a cell starting with one of these as a formula: CSV cells get a quote.
_FORMULA_START = frozenset("=+-@\t\r")


class AuditPages(Protocol):
    """What an export asks of the store (SqlStore has it)."""

    async def audit_page(
        self, wanted: AuditFilter, after: int | None, newest_first: bool, limit: int
    ) -> list[AuditLine]:
        """Up to `limit` rows `wanted` matches, after row id `after` in the order asked."""
        ...


async def audit_lines(
    store: AuditPages,
    wanted: AuditFilter,
    *,
    newest_first: bool = False,
    limit: int | None = None,
    page: int = PAGE,
) -> AsyncIterator[AuditLine]:
    """Every row `wanted` matches (up to `limit`), oldest first unless `newest_first`. The
    next page is read while this one is consumed (the database works while we write)."""

    def read(after: int | None, left: int | None) -> asyncio.Future[list[AuditLine]]:
        size = page if left is None else min(page, left)
        return asyncio.ensure_future(store.audit_page(wanted, after, newest_first, size))

    left = limit
    if left is not None and left <= 0:
        return
    pending: asyncio.Future[list[AuditLine]] | None = read(None, left)
    try:
        while pending is not None:
            lines = await pending
            size = page if left is None else min(page, left)
            left = None if left is None else left - len(lines)
            more = len(lines) == size and (left is None or left > 0)
            pending = read(lines[-1].id, left) if more else None
            for line in lines:
                yield line
    finally:
        if pending is not None:  # the consumer stopped early: the read finishes unawaited
            pending.cancel()


def as_json(line: AuditLine) -> dict[str, Any]:
    return {
        "id": line.id, "chain_seq": line.chain_seq, "at": line.at.isoformat(),
        "action": line.action, "request_id": line.request_id, "actor_id": line.actor_id,
        "tool": line.tool, "room": line.room, "status": line.status, "detail": line.detail,
        "prev_hash": line.prev_hash, "hash": line.hash,
    }  # fmt: skip


def jsonl(lines: list[AuditLine]) -> str:
    return "".join(json.dumps(as_json(line), ensure_ascii=False) + "\n" for line in lines)


def csv_text(lines: list[AuditLine], header: bool = False) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    if header:
        writer.writerow(COLUMNS)
    writer.writerows(
        (
            line.id, "" if line.chain_seq is None else line.chain_seq, line.at.isoformat(),
            _cell(line.action), _cell(line.request_id), _cell(line.actor_id), _cell(line.tool),
            _cell(line.room), _cell(line.status), json.dumps(line.detail, ensure_ascii=False),
            line.prev_hash or "", line.hash or "",
        )
        for line in lines
    )  # fmt: skip
    return buffer.getvalue()


def _cell(value: str | None) -> str:
    """A text cell a spreadsheet shows as text: one that looks like a formula gets a quote."""
    if value is None:
        return ""
    return "'" + value if value[:1] in _FORMULA_START else value


async def export_audit(
    store: AuditPages, wanted: AuditFilter, fmt: str, write: Callable[[str], Any]
) -> int:
    """Write every row `wanted` matches, oldest first, as `fmt` (csv, jsonl); how many."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}: csv or jsonl")
    written = 0
    batch: list[AuditLine] = []
    if fmt == "csv":
        write(csv_text([], header=True))
    async for line in audit_lines(store, wanted):
        batch.append(line)
        if len(batch) == PAGE:
            write(csv_text(batch) if fmt == "csv" else jsonl(batch))
            written += len(batch)
            batch = []
    if batch:
        write(csv_text(batch) if fmt == "csv" else jsonl(batch))
        written += len(batch)
    return written
