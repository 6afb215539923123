"""The console's figures: time to decision per day, outcomes per tool."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.records import RequestStatus
from bot.reports.figures import (
    MAX_TOOLS,
    OTHER_TOOLS,
    decision_times,
    outcomes_per_tool,
    percentile,
)
from bot.reports.request_log import DecidedRequest

DAY = datetime(2026, 11, 3, 9, tzinfo=UTC)


def settled(
    tool: str, status: RequestStatus, seconds: float | None, day: int = 0
) -> DecidedRequest:
    made = DAY + timedelta(days=day)
    done = None if seconds is None else made + timedelta(seconds=seconds)
    return DecidedRequest(tool, status, made, done)


def test_percentile_is_a_value_that_occurred() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0.95) == 95
    assert percentile(values, 0.5) == 50
    assert percentile([7.0], 0.95) == 7
    assert percentile([1.0, 100.0], 0.95) == 100


def test_decision_times_per_day_count_decisions_only() -> None:
    rows = [settled("t", RequestStatus.RESOLVED, s) for s in (10, 20, 30, 40)]
    rows += [settled("t", RequestStatus.REJECTED, 600, day=1)]
    rows += [
        settled("t", RequestStatus.TIMED_OUT, 9999),  # an expiry is no decision
        settled("t", RequestStatus.CANCELLED, 5),
        settled("t", RequestStatus.PENDING, None),
    ]
    first, second = decision_times(rows)
    assert (first.day, first.decisions, first.median, first.p95) == (DAY.date(), 4, 25, 40)
    assert (second.day.day, second.decisions, second.median, second.p95) == (4, 1, 600, 600)


def test_no_decision_no_day() -> None:
    assert decision_times([settled("t", RequestStatus.PENDING, None)]) == []


def test_outcomes_per_tool_busiest_first_in_outcome_order() -> None:
    rows = [
        settled("deploy", RequestStatus.REJECTED, 1),
        settled("deploy", RequestStatus.RESOLVED, 1),
        settled("deploy", RequestStatus.RESOLVED, 1),
        settled("ask", RequestStatus.TIMED_OUT, 1),
    ]
    deploy, ask = outcomes_per_tool(rows)
    assert deploy.tool == "deploy" and list(deploy.counts.items()) == [
        ("answered", 2), ("declined", 1),
    ]  # fmt: skip
    assert (ask.tool, ask.counts, ask.total) == ("ask", {"expired": 1}, 1)


def test_past_the_shown_tools_the_rest_are_summed() -> None:
    rows = [settled(f"tool{n:02}", RequestStatus.RESOLVED, 1) for n in range(MAX_TOOLS + 3)]
    shown = outcomes_per_tool(rows)
    assert len(shown) == MAX_TOOLS + 1
    assert shown[-1].tool == OTHER_TOOLS and shown[-1].counts == {"answered": 3}
