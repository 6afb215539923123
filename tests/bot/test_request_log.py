"""Reading a request filter from a query string, and writing it back."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.records import RequestRecord, RequestStatus
from bot.request_log import FilterError, LoggedRequest, RequestFilter, filter_query, read_filter


def test_an_empty_query_filters_nothing() -> None:
    assert read_filter({}) == RequestFilter()
    assert read_filter({"text": "  ", "status": "", "since": ""}) == RequestFilter()


def test_every_field_is_read_and_round_trips() -> None:
    query = {
        "text": "deploy", "status": "declined", "actor": "U1", "tool": "approve", "room": "C1",
        "since": "2026-11-01", "until": "2026-11-30",
    }  # fmt: skip
    where = read_filter(query)
    assert where.status is RequestStatus.REJECTED
    assert where.since == datetime(2026, 11, 1, tzinfo=UTC)
    assert where.until == datetime(2026, 12, 1, tzinfo=UTC)  # the whole of the 30th
    assert read_filter(filter_query(where)) == where


def test_a_time_without_a_zone_is_utc() -> None:
    where = read_filter({"since": "2026-11-01T08:30"})
    assert where.since == datetime(2026, 11, 1, 8, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "problem"),
    [
        ({"status": "approved"}, "status: one of pending, answered, declined"),
        ({"since": "yesterday"}, "since: a date"),
        ({"since": "2026-11-02", "until": "2026-11-01"}, "until: must be after since"),
        ({"tool": "x" * 201}, "tool: at most 200 characters"),
    ],
)
def test_a_bad_value_says_which_and_why(query: dict[str, str], problem: str) -> None:
    with pytest.raises(FilterError, match=problem):
        read_filter(query)


def test_a_logged_request_names_who_asked_and_how_long_it_took() -> None:
    made = datetime(2026, 11, 1, tzinfo=UTC)
    record = RequestRecord("r1", "approve", {}, created_at=made)
    assert LoggedRequest(record, requester="ci").asked_by == "token:ci"
    assert LoggedRequest(record).seconds_to_decision is None
    record.actor_id, record.status = "U1", RequestStatus.TIMED_OUT
    record.settled_at = made + timedelta(seconds=90)
    logged = LoggedRequest(record, requester="ci")
    assert (logged.asked_by, logged.outcome, logged.seconds_to_decision) == ("U1", "expired", 90)
