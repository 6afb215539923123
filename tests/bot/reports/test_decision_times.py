"""bot/reports/decision_times.py: median and 95th percentile of the time people take to decide."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.records import RequestRecord, RequestStatus
from bot.reports.decision_times import (
    DecisionTimes,
    decision_times,
    duration,
    figures_line,
    percentile,
)

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def decided(
    minutes: float, *, status: RequestStatus = RequestStatus.RESOLVED, by: str | None = "U1",
    days_ago: float = 1,
) -> RequestRecord:  # fmt: skip
    settled = NOW - timedelta(days=days_ago)
    return RequestRecord(
        id=f"r{minutes}-{status}", tool_name="deploy", arguments={}, status=status,
        created_at=settled - timedelta(minutes=minutes), settled_at=settled, settled_by=by,
    )  # fmt: skip


def test_nearest_rank_percentiles() -> None:
    assert percentile([1, 2, 3, 4], 50) == 2
    assert percentile([1, 2, 3, 4], 95) == 4
    assert percentile([7], 50) == percentile([7], 95) == 7
    values = [float(n) for n in range(1, 101)]
    assert percentile(values, 50) == 50 and percentile(values, 95) == 95


def test_only_peoples_decisions_in_the_window_count() -> None:
    records = [decided(m) for m in (1, 2, 3, 4, 100)]
    records += [
        decided(500, status=RequestStatus.TIMED_OUT, by=None),  # nobody decided
        decided(500, status=RequestStatus.CANCELLED, by=None),  # withdrawn by no one
        decided(500, days_ago=8),  # before the window
    ]
    records.append(decided(5, status=RequestStatus.CANCELLED, by="U0ADMIN"))  # an admin's
    times = decision_times(records, NOW)
    assert times == DecisionTimes(6, timedelta(minutes=3), timedelta(minutes=100))


def test_no_decisions_no_figures() -> None:
    assert decision_times([], NOW) == DecisionTimes(0, None, None)
    assert figures_line(DecisionTimes(0, None, None)).plain == (
        "Time to decision (7 days): no decisions yet."
    )


def test_figures_read_as_one_sentence() -> None:
    times = DecisionTimes(12, timedelta(minutes=4, seconds=10), timedelta(hours=2, minutes=3))
    assert figures_line(times).plain == (
        "Time to decision (7 days, 12 decisions): median 4m 10s, 95th percentile 2h 3m."
    )
    assert duration(timedelta(days=2, hours=4, minutes=5)) == "2d 4h"
    assert duration(timedelta(seconds=0.4)) == "0s"
