"""The dates `audit --since/--until` take: ISO 8601 or a time ago."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.audit.query import parse_when

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("7d", NOW - timedelta(days=7)),
        ("24h", NOW - timedelta(hours=24)),
        ("30m", NOW - timedelta(minutes=30)),
        ("90s", NOW - timedelta(seconds=90)),
        ("2W", NOW - timedelta(weeks=2)),
        ("2026-11-30", datetime(2026, 11, 30, tzinfo=UTC)),
        ("2026-11-30T09:30:00Z", datetime(2026, 11, 30, 9, 30, tzinfo=UTC)),
        ("2026-11-30T10:30:00+01:00", datetime(2026, 11, 30, 9, 30, tzinfo=UTC)),
    ],
)
def test_when(text: str, expected: datetime) -> None:
    parsed = parse_when(text, NOW)
    assert parsed == expected and parsed.tzinfo is not None
    assert parsed.utcoffset() == UTC.utcoffset(None)


@pytest.mark.parametrize("text", ["yesterday", "7 days", "-3d", "2026-13-01", ""])
def test_not_a_date_is_one_line_naming_the_forms(text: str) -> None:
    with pytest.raises(ValueError, match="ISO 8601") as raised:
        parse_when(text, NOW)
    assert "\n" not in str(raised.value)
