"""Reading a request filter from a query string, and writing it back."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.records import RequestRecord, RequestStatus
from bot.reports.request_log import (
    TOOL_LABELS,
    FilterError,
    LoggedRequest,
    RequestFilter,
    filter_query,
    read_filter,
    room_text,
    surface_of,
)
from bot.words.tool_names import ELICIT_INPUT


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
    logged = LoggedRequest(record, requester="ci")  # a door's request, for U1: asked by ci
    assert (logged.asked_by, logged.asked_for) == ("token:ci", "U1")
    assert (logged.outcome, logged.seconds_to_decision) == ("expired", 90)
    agents = LoggedRequest(record)  # an agent's, in U1's turn
    assert (agents.asked_by, agents.asked_for) == ("U1", None)


@pytest.mark.parametrize(
    ("room", "written", "surface"),
    [("slack:D0123ABCD:", "slack:D0123ABCD", "slack"),
     ("slack:C1:1700000000.000100", "slack:C1@1700000000.000100", "slack"),
     ("teams:19:abc@thread.tacv2;messageid=1", "teams:19:abc@thread.tacv2;messageid=1", "teams"),
     ("console:alice", "console:alice", "console"), ("C1", "C1", "")],
)  # fmt: skip
def test_a_room_as_written_and_its_surface(room: str, written: str, surface: str) -> None:
    assert room_text(room) == written and surface_of(room) == surface


def test_the_surfaces_and_tool_a_request_was_shown_with() -> None:
    record = RequestRecord("r1", "approveToolCall", {}, room_id="slack:C1:1.2")
    copied = LoggedRequest(record, copies=("teams:19:x", "slack:C2:", "slack:C1:1.2"))
    assert copied.rooms == ("slack:C1:1.2", "teams:19:x", "slack:C2:")
    assert copied.surfaces == ("slack", "teams")
    assert copied.tool_label == "Tool call approval"
    assert LoggedRequest(record, requester="claude").tool_label == "Permission prompt"
    assert LoggedRequest(RequestRecord("r2", "deploy_now", {})).tool_label == "deploy_now"
    assert TOOL_LABELS["elicitInput"] and ELICIT_INPUT == "elicitInput"
