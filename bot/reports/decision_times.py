"""How long people take to decide: the median and 95th percentile of the time from a request
to a person's decision, over a recent window. Pure (the admin's App Home shows it).

A decision is an answer, a decline or an admin's cancel: a settle someone made (`settled_by`).
Expiries, withdrawals and undeliverable requests decided nothing, so they are left out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.records import RequestRecord, RequestStatus
from bot.words.phrases import Phrase

WINDOW = timedelta(days=7)
_DECIDED = (RequestStatus.RESOLVED, RequestStatus.REJECTED, RequestStatus.CANCELLED)


@dataclass(frozen=True, slots=True)
class DecisionTimes:
    """`count` decisions in the window; None figures when there were none."""

    count: int
    median: timedelta | None
    p95: timedelta | None


def decision_times(
    records: Sequence[RequestRecord], now: datetime, window: timedelta = WINDOW
) -> DecisionTimes:
    """The figures of the requests decided by a person within `window` before `now`."""
    seconds = sorted(
        (record.settled_at - record.created_at).total_seconds()
        for record in records
        if record.status in _DECIDED
        and record.settled_by
        and record.settled_at is not None
        and now - window <= record.settled_at <= now
    )
    if not seconds:
        return DecisionTimes(0, None, None)
    return DecisionTimes(
        len(seconds),
        timedelta(seconds=percentile(seconds, 50)),
        timedelta(seconds=percentile(seconds, 95)),
    )


def percentile(ordered: Sequence[float], rank: float) -> float:
    """The nearest-rank percentile of ascending values: the smallest value at or below which
    `rank`% of them lie (the median of 1, 2, 3, 4 is 2; its 95th percentile is 4)."""
    index = max(math.ceil(rank / 100 * len(ordered)) - 1, 0)
    return max(ordered[index], 0.0)


def duration(span: timedelta) -> str:
    """`45s`, `12m 5s`, `3h 20m`, `2d 4h`: two units at most."""
    total = int(span.total_seconds())
    days, rest = divmod(total, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes, secs = divmod(rest, 60)
    parts = [(days, "d"), (hours, "h"), (minutes, "m"), (secs, "s")]
    shown = [f"{value}{unit}" for value, unit in parts if value]
    return " ".join(shown[:2]) or "0s"


def figures_line(times: DecisionTimes) -> Phrase:
    """The figures in one sentence."""
    if times.median is None or times.p95 is None:
        return Phrase("Time to decision (7 days): no decisions yet.")
    return Phrase(
        f"Time to decision (7 days, {times.count} decisions): median {duration(times.median)}, "
        f"95th percentile {duration(times.p95)}."
    )
