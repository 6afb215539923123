"""The console's exports: one record per request, the columns of its table and more, as CSV
or as JSON (`fields`, written by `lines` or `json_items`). Pure.

A CSV cell that a spreadsheet would run as a formula (=, +, -, @, a tab or a return first) gets
a leading apostrophe: a model or a person wrote the arguments, and an admin opens the file.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from bot.reports.request_log import LoggedRequest, room_text

HEADER = (
    "id", "created_at", "tool", "tool_label", "outcome", "asked_by", "asked_for", "room",
    "surface", "copies", "decided_by", "settled_at", "seconds_to_decision", "result", "reason",
    "arguments",
)  # fmt: skip
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def fields(logged: LoggedRequest) -> dict[str, Any]:
    """One request's exported fields, by HEADER's names: `asked_by` who asked (a door's
    `token:NAME`, else the person whose turn asked), `asked_for` whom a door request was for,
    `room` as written, `surface` each surface it was shown on, `copies` its copies' rooms."""
    record = logged.record
    seconds = logged.seconds_to_decision
    values: list[Any] = [
        record.id, record.created_at, record.tool_name, logged.tool_label, logged.outcome,
        logged.asked_by, logged.asked_for, room_text(record.room_id), " ".join(logged.surfaces),
        " ".join(room_text(room) for room in logged.copies), record.settled_by,
        record.settled_at, None if seconds is None else round(seconds, 3), record.result,
        record.reason, record.arguments,
    ]  # fmt: skip
    return dict(zip(HEADER, values, strict=True))


def cell(value: object) -> str:
    """One CSV cell: None empty, times in ISO 8601, objects as JSON, formulas defused."""
    if value is None:
        return ""
    if isinstance(value, datetime):
        text = value.isoformat()
    elif isinstance(value, dict | list):
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    elif isinstance(value, float):
        text = f"{value:.3f}"
    else:
        text = str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def row(logged: LoggedRequest) -> list[str]:
    return [cell(value) for value in fields(logged).values()]


def lines(rows: Iterable[LoggedRequest], *, header: bool = False) -> str:
    """The CSV text of `rows` (RFC 4180: CRLF line ends, quoted as needed)."""
    out = io.StringIO()
    writer = csv.writer(out)
    if header:
        writer.writerow(HEADER)
    writer.writerows(row(logged) for logged in rows)
    return out.getvalue()


def json_items(rows: Iterable[LoggedRequest], *, first: bool) -> str:
    """`rows` as items of a JSON array (the array's `[` and `]` are the caller's): each a
    comma before it but the very first of the array."""
    items = [json.dumps(fields(logged), ensure_ascii=False, default=_iso) for logged in rows]
    text = ",\n".join(items)
    return text if first or not text else ",\n" + text


def _iso(value: object) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not exported")
