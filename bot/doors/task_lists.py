"""A token's requests as a list of tasks (A2A's ListTasks): filtered, newest status first (its
settle, else its creation), paged by a cursor, read from the store so every worker lists the
same. The cursor is the last row's status time and id, opaque to the caller."""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from datetime import datetime

from bot.records import RequestStatus


class BadCursorError(ValueError):
    """A page token this bridge did not make."""


@dataclass(frozen=True, slots=True)
class Cursor:
    """Where a page ends: its last row's status time and request id."""

    at: datetime
    request_id: str

    def token(self) -> str:
        raw = json.dumps([self.at.isoformat(), self.request_id], separators=(",", ":"))
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

    @staticmethod
    def read(token: str) -> Cursor:
        """The cursor a page token holds; BadCursorError if it holds none."""
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
            at, request_id = json.loads(raw)
            when = datetime.fromisoformat(at)
        except (ValueError, TypeError, binascii.Error) as err:
            raise BadCursorError(f"invalid page token '{token[:40]}'") from err
        if when.tzinfo is None or not isinstance(request_id, str):
            raise BadCursorError(f"invalid page token '{token[:40]}'")
        return Cursor(when, request_id)


@dataclass(frozen=True, slots=True)
class TaskQuery:
    """Which of a token's requests to list. `statuses`: any of these (empty: any).
    `key_prefix` and `key_suffix`: those whose idempotency key has both, or the one whose id is
    `or_id` (a context of A2A's: the one its message named, else the request's own id).
    `since`: status time at or after. `after`: the page before ended there."""

    statuses: tuple[RequestStatus, ...] = ()
    key_prefix: str | None = None
    key_suffix: str | None = None
    or_id: str | None = None
    since: datetime | None = None
    after: Cursor | None = None
    limit: int = 50
