"""`/hitl audit [@user] [tool] [since]`: its words read into a filter of the audit log. Pure.

`@user` is a platform user id (a surface turns its mention into `@<id>`); `since` is a span back
from now (`30m`, `24h`, `7d`, `2w`) or an ISO date or time (`2026-11-30`, UTC unless it says
otherwise); any other word is a tool name, or a glob of them (`deploy*`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

_SPAN = re.compile(r"([0-9]{1,5})([mhdw])", re.IGNORECASE)
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_ISO = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9:.+\-Z]+)?")
_TOOL = re.compile(r"[A-Za-z0-9_.:*?\-]{1,100}")


class AuditQueryError(ValueError):
    """The words do not make a filter: the message says which and why."""


@dataclass(frozen=True, slots=True)
class AuditQuery:
    actor_id: str | None = None
    tool: str | None = None
    since: datetime | None = None


def read_audit_query(words: list[str], now: datetime) -> AuditQuery:
    """The filter `words` (after `audit`) ask for; AuditQueryError when one is unreadable or
    given twice."""
    actor: str | None = None
    tool: str | None = None
    since: datetime | None = None
    for word in words:
        if word.startswith("@") and len(word) > 1:
            if actor is not None:
                raise AuditQueryError("one @user at most")
            actor = word[1:]
        elif (moment := read_since(word, now)) is not None:
            if since is not None:
                raise AuditQueryError("one since at most")
            since = moment
        elif _TOOL.fullmatch(word):
            if tool is not None:
                raise AuditQueryError("one tool at most")
            tool = word
        else:
            raise AuditQueryError(f"'{word[:40]}' is neither @user, a tool nor a since")
    return AuditQuery(actor, tool, since)


def read_since(word: str, now: datetime) -> datetime | None:
    """The moment `word` names (`24h` back from `now`, or an ISO date/time), else None."""
    span = _SPAN.fullmatch(word)
    if span is not None:
        amount, unit = int(span.group(1)), span.group(2).lower()
        return now - timedelta(**{_UNITS[unit]: amount})  # 99999w: ~1900 years, no overflow
    if not _ISO.fullmatch(word):
        return None
    try:
        moment = datetime.fromisoformat(word.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
