"""The console's CSV export: one line per request, the columns of its table and more. Pure.

A cell that a spreadsheet would run as a formula (=, +, -, @, a tab or a return first) gets a
leading apostrophe: a model or a person wrote the arguments, and an admin opens the file.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from datetime import datetime

from bot.request_log import LoggedRequest

HEADER = (
    "id", "created_at", "tool", "outcome", "asked_by", "room", "surface", "decided_by",
    "settled_at", "seconds_to_decision", "result", "reason", "arguments",
)  # fmt: skip
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def cell(value: object) -> str:
    """One CSV cell: None empty, times in ISO 8601, formulas defused."""
    if value is None:
        return ""
    text = value.isoformat() if isinstance(value, datetime) else str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def row(logged: LoggedRequest) -> list[str]:
    record = logged.record
    seconds = logged.seconds_to_decision
    values: list[object] = [
        record.id, record.created_at, record.tool_name, logged.outcome, logged.asked_by,
        record.room_id, record.channel_type, record.settled_by, record.settled_at,
        None if seconds is None else f"{seconds:.3f}", record.result, record.reason,
        json.dumps(record.arguments, ensure_ascii=False, sort_keys=True),
    ]  # fmt: skip
    return [cell(value) for value in values]


def lines(rows: Iterable[LoggedRequest], *, header: bool = False) -> str:
    """The CSV text of `rows` (RFC 4180: CRLF line ends, quoted as needed)."""
    out = io.StringIO()
    writer = csv.writer(out)
    if header:
        writer.writerow(HEADER)
    writer.writerows(row(logged) for logged in rows)
    return out.getvalue()
