"""Failures that repeat, logged as one WARNING line per kind and interval, not a traceback each.

A worker whose database went read-only (or away) fails the same way every time a loop comes
round: the heartbeat every second, the deadline sweep, lease renewals, every message. Each of
those says what failed once, in one line, then at most once per `interval` with how many times
it failed since; the traceback goes to DEBUG. When the kind works again, one INFO line says so.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

INTERVAL_SECONDS = 60.0


@dataclass(slots=True)
class _Streak:
    logged_at: float
    since: int = 0  # failures not logged since `logged_at`


class RepeatedFailures:
    """Rate-limited WARNING lines for failures that repeat, one streak per kind."""

    def __init__(self, log: logging.Logger, interval: float = INTERVAL_SECONDS) -> None:
        self._log = log
        self._interval = interval
        self._streaks: dict[str, _Streak] = {}

    def failed(self, kind: str, err: BaseException) -> None:
        """`kind` (what was being done: "renewing the run leases") failed with `err`."""
        now = time.monotonic()
        streak = self._streaks.get(kind)
        if streak is not None and now - streak.logged_at < self._interval:
            streak.since += 1
            return
        repeats = f" (failed {streak.since} more times since)" if streak and streak.since else ""
        self._log.warning("%s failed: %s%s", kind, first_line(err), repeats)
        self._log.debug("%s failed", kind, exc_info=err)
        self._streaks[kind] = _Streak(now)

    def recovered(self, kind: str) -> None:
        """`kind` worked: a streak of failures, if any, is over."""
        if self._streaks.pop(kind, None) is not None:
            self._log.info("%s works again", kind)


def first_line(err: BaseException) -> str:
    lines = str(err).strip().splitlines()
    return f"{type(err).__name__}: {lines[0]}" if lines else type(err).__name__
