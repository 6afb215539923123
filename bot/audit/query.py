"""What `hitl-bridge audit list|export` (and the admin views) ask of the audit log: filters,
and each row with its request's tool, room and final status beside it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

_RELATIVE = re.compile(r"^(\d+)\s*([smhdw])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


@dataclass(frozen=True)
class AuditFilter:
    """Rows at or after `since` and before `until`, by `actor`, of requests of `tool`, in
    `room`, whose request ended `status`; `action` matches an action or its family (`grant`)."""

    since: datetime | None = None
    until: datetime | None = None
    actor: str | None = None
    tool: str | None = None
    room: str | None = None
    status: str | None = None
    action: str | None = None
    request_id: str | None = None


@dataclass(frozen=True, slots=True)
class AuditLine:
    """An audit row as listed and exported: the row, its request's tool, room and status
    (from the request, else from the row itself), and its place in the chain."""

    id: int
    at: datetime
    action: str
    request_id: str | None
    actor_id: str | None
    detail: dict[str, Any] = field(default_factory=dict)
    tool: str | None = None
    room: str | None = None
    status: str | None = None
    chain_seq: int | None = None
    prev_hash: str | None = None
    hash: str | None = None


def parse_when(text: str, now: datetime | None = None) -> datetime:
    """ISO 8601 (a date, or a time; UTC unless it says otherwise) or a time ago: 30m, 24h, 7d,
    2w. ValueError in one line otherwise."""
    value = text.strip()
    relative = _RELATIVE.match(value.lower())
    if relative:
        ago = timedelta(**{_UNITS[relative.group(2)]: int(relative.group(1))})
        return (now or datetime.now(UTC)) - ago
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"{text!r} is not a date: use ISO 8601 (2026-12-01, 2026-12-01T09:30:00Z) "
            "or a time ago (30m, 24h, 7d, 2w)"
        ) from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
