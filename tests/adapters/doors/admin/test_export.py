"""The console's CSV lines: every column, formulas defused, read back by the csv module."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta

import pytest

from adapters.doors.admin.export import HEADER, cell, lines
from bot.records import RequestRecord, RequestStatus
from bot.reports.request_log import LoggedRequest

pytestmark = pytest.mark.fast  # pure functions: in `make check`


def test_a_cell_defuses_formulas() -> None:
    assert cell(None) == ""
    assert cell('=HYPERLINK("x")') == '\'=HYPERLINK("x")'
    assert cell("-1") == "'-1"
    assert cell("@SUM(A1)") == "'@SUM(A1)"
    assert cell("plain") == "plain"
    assert cell(datetime(2026, 11, 1, tzinfo=UTC)) == "2026-11-01T00:00:00+00:00"


def test_lines_read_back_with_every_column() -> None:
    made = datetime(2026, 11, 1, 9, tzinfo=UTC)
    record = RequestRecord(
        "r1", "approve", {"cmd": "rm -rf /", "note": 'say "hi",\nthen'}, room_id="C1",
        actor_id="U1", created_at=made, status=RequestStatus.REJECTED, settled_by="U9",
        settled_at=made + timedelta(seconds=42), reason="=not today",
    )  # fmt: skip
    text = lines([LoggedRequest(record), LoggedRequest(RequestRecord("r2", "ask", {}))],
                 header=True)  # fmt: skip
    header, first, second = list(csv.reader(io.StringIO(text)))
    assert tuple(header) == HEADER
    shown = dict(zip(header, first, strict=True))
    assert shown["outcome"] == "declined" and shown["decided_by"] == "U9"
    assert shown["seconds_to_decision"] == "42.000"
    assert shown["reason"] == "'=not today"
    assert shown["arguments"] == '{"cmd": "rm -rf /", "note": "say \\"hi\\",\\nthen"}'
    assert second[0] == "r2" and second[HEADER.index("asked_by")] == ""
