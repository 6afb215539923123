"""The request log an admin reads (the web console, adapters/doors/admin): which requests, filtered
how, and what each one's row holds. Pure: the store's SQL is bot/store/request_log.py.

A filter comes from a query string (`read_filter`) and goes back into one (`filter_query`), so
a page's links (next page, CSV) keep the filter that made it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Protocol

from bot.records import AuditEntry, RequestRecord, RequestStatus
from bot.words.tool_names import GATE_TOOL

MAX_FIELD = 200  # characters of one filter value: longer is no id, tool or person of ours

# What a person sees for a stored status.
OUTCOMES = {
    RequestStatus.PENDING: "pending",
    RequestStatus.RESOLVED: "answered",
    RequestStatus.REJECTED: "declined",
    RequestStatus.TIMED_OUT: "expired",
    RequestStatus.CANCELLED: "cancelled",
    RequestStatus.UNDELIVERABLE: "undeliverable",
}
STATUS_BY_OUTCOME = {label: status for status, label in OUTCOMES.items()}


class FilterError(ValueError):
    """A filter value that cannot be read: `str(err)` says which and why, in one line."""


@dataclass(frozen=True, slots=True)
class RequestFilter:
    """Which requests: every field set narrows; `text` is a part of the tool's name or the id,
    `actor` who asked (a person, or `token:NAME` for a door's token) or decided, `since`
    inclusive and `until` exclusive (creation time)."""

    text: str | None = None
    status: RequestStatus | None = None
    actor: str | None = None
    tool: str | None = None
    room: str | None = None
    since: datetime | None = None
    until: datetime | None = None


# The built-in tools by the names people know them by; a custom tool is shown as named.
TOOL_LABELS = {
    "AskUserQuestion": "Question",
    "requestApproval": "Approval",
    "selectOption": "Choice",
    "collectUserData": "Form",
    "uploadFile": "File",
    "confirmAction": "Confirmation",
    GATE_TOOL: "Tool call approval",  # an agent's tool call held by a policy's gate
    "elicitInput": "Input for an MCP server",  # bot.tool_sources.elicitation.ELICIT_INPUT
}
DOOR_GATE_LABEL = "Permission prompt"  # the gate asked through a door (MCP permission_prompt)
TOKEN_ASKER = "token:"  # noqa: S105 (a prefix, not a secret): who asked through a door


def room_text(room_id: str) -> str:
    """A room as an address is written (bot/doors/addresses.py): a Slack thread `slack:C1@1.2`, a
    Slack room without a thread `slack:D1` (not the stored `slack:D1:`), others as stored."""
    surface, colon, rest = room_id.partition(":")
    if surface != "slack" or not colon:
        return room_id
    channel, _, thread = rest.partition(":")
    return f"slack:{channel}@{thread}" if thread else f"slack:{channel}"


def surface_of(room_id: str) -> str:
    """The surface a room is on, as its id starts (`slack`, `teams`, `console`); "" if none."""
    surface, colon, _ = room_id.partition(":")
    return surface if colon else ""


@dataclass(frozen=True, slots=True)
class LoggedRequest:
    """One request as the log shows it; `requester` is the token that asked through a door,
    `copies` the rooms its copies were posted in besides its own (a policy's `deliver`)."""

    record: RequestRecord
    requester: str | None = None
    copies: tuple[str, ...] = ()

    @property
    def asked_by(self) -> str | None:
        """Who asked: the door's token (`token:NAME`), else the person whose turn asked. (A
        door request's actor is the person it is for, not who asked.)"""
        if self.requester:
            return TOKEN_ASKER + self.requester
        return self.record.actor_id

    @property
    def asked_for(self) -> str | None:
        """Whom a door request was addressed to (None: anyone in its room, or an agent's)."""
        return self.record.actor_id if self.requester else None

    @property
    def rooms(self) -> tuple[str, ...]:
        """Every room it was shown in: its own first, then its copies'."""
        own = (self.record.room_id,) if self.record.room_id else ()
        return own + tuple(room for room in self.copies if room != self.record.room_id)

    @property
    def surfaces(self) -> tuple[str, ...]:
        """The surfaces it was shown on, from its rooms (each once, in order)."""
        return tuple(dict.fromkeys(s for s in map(surface_of, self.rooms) if s))

    @property
    def tool_label(self) -> str:
        if self.requester and self.record.tool_name == GATE_TOOL:
            return DOOR_GATE_LABEL
        return TOOL_LABELS.get(self.record.tool_name, self.record.tool_name)

    @property
    def outcome(self) -> str:
        return OUTCOMES[self.record.status]

    @property
    def seconds_to_decision(self) -> float | None:
        settled = self.record.settled_at
        return None if settled is None else (settled - self.record.created_at).total_seconds()


@dataclass(frozen=True, slots=True)
class DecidedRequest:
    """What the figures need of one request (bot/reports/figures.py)."""

    tool_name: str
    status: RequestStatus
    created_at: datetime
    settled_at: datetime | None


class RequestLogStore(Protocol):
    """What the console reads (bot/store/request_log.py gives it on SqlStore)."""

    async def page(self, where: RequestFilter, offset: int, limit: int) -> list[LoggedRequest]: ...

    async def after(
        self, where: RequestFilter, mark: tuple[datetime, str] | None, limit: int
    ) -> list[LoggedRequest]: ...

    async def count(self, where: RequestFilter) -> int: ...

    async def logged(self, request_id: str) -> LoggedRequest | None: ...

    async def timeline(self, request_id: str) -> list[AuditEntry]: ...

    async def settled_since(self, since: datetime, limit: int) -> list[DecidedRequest]: ...

    async def append_audit(self, entry: AuditEntry) -> None: ...


def read_filter(query: Mapping[str, str]) -> RequestFilter:
    """The filter a query string asks for (empty values are no filter); FilterError else."""
    values = {name: _field(query, name) for name in ("text", "actor", "tool", "room")}
    status = _field(query, "status")
    if status is not None and status not in STATUS_BY_OUTCOME:
        raise FilterError(f"status: one of {', '.join(STATUS_BY_OUTCOME)}")
    since = _moment(_field(query, "since"), "since", end_of_day=False)
    until = _moment(_field(query, "until"), "until", end_of_day=True)
    if since is not None and until is not None and until <= since:
        raise FilterError("until: must be after since")
    return RequestFilter(
        status=STATUS_BY_OUTCOME[status] if status is not None else None,
        since=since, until=until, **values,
    )  # fmt: skip


def filter_query(where: RequestFilter) -> dict[str, str]:
    """The query string that reads back as `where` (only the fields set)."""
    query: dict[str, str] = {}
    for item in fields(where):
        value: Any = getattr(where, item.name)
        if value is None:
            continue
        if isinstance(value, RequestStatus):
            value = OUTCOMES[value]
        elif isinstance(value, datetime):
            value = value.isoformat()
        query[item.name] = str(value)
    return query


def _field(query: Mapping[str, str], name: str) -> str | None:
    value = query.get(name, "").strip()
    if len(value) > MAX_FIELD:
        raise FilterError(f"{name}: at most {MAX_FIELD} characters")
    return value or None


def _moment(value: str | None, name: str, *, end_of_day: bool) -> datetime | None:
    """A date (`2026-12-01`: its start, or for `until` the next day's start) or an ISO time;
    times without a zone are UTC."""
    if value is None:
        return None
    try:
        if len(value) == 10:
            day = date.fromisoformat(value)
            moment = datetime.combine(day, time(), UTC)
            return moment + timedelta(days=1) if end_of_day else moment
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise FilterError(f"{name}: a date (2026-12-01) or an ISO time") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
