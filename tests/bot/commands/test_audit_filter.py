"""bot/commands/audit_filter.py: `/hitl audit [@user] [tool] [since]` read into a filter."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from bot.commands.audit_filter import AuditQuery, AuditQueryError, read_audit_query, read_since

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("words", "query"),
    [
        ([], AuditQuery()),
        (["@U0ALICE"], AuditQuery(actor_id="U0ALICE")),
        (["deploy*"], AuditQuery(tool="deploy*")),
        (["24h"], AuditQuery(since=NOW - timedelta(hours=24))),
        (["7D", "@U1", "ask?"], AuditQuery("U1", "ask?", NOW - timedelta(days=7))),
        (["2026-11-30"], AuditQuery(since=datetime(2026, 11, 30, tzinfo=UTC))),
        (["30m"], AuditQuery(since=NOW - timedelta(minutes=30))),
        (["2w"], AuditQuery(since=NOW - timedelta(weeks=2))),
    ],
)
def test_words_make_a_filter(words: list[str], query: AuditQuery) -> None:
    assert read_audit_query(words, NOW) == query


@pytest.mark.parametrize(
    ("words", "why"),
    [
        (["@U1", "@U2"], "one @user at most"),
        (["a", "b"], "one tool at most"),
        (["1h", "2d"], "one since at most"),
        (["<script>"], "'<script>' is neither @user, a tool nor a since"),
    ],
)
def test_unreadable_words_say_why(words: list[str], why: str) -> None:
    with pytest.raises(AuditQueryError, match=why):
        read_audit_query(words, NOW)


def test_since_reads_spans_and_iso_moments_only() -> None:
    assert read_since("2026-11-30T08:00:00+01:00", NOW) == datetime(
        2026, 11, 30, 8, tzinfo=timezone(timedelta(hours=1))
    )
    assert read_since("2026-11-30T08:00Z", NOW) == datetime(2026, 11, 30, 8, tzinfo=UTC)
    assert read_since("2026-13-40", NOW) is None  # shaped like a date, but none
    assert read_since("100000w", NOW) is None  # five digits at most
    assert read_since("deploy", NOW) is None and read_since("24", NOW) is None
