"""The admin console's figures, from the requests' rows (bot/reports/request_log.py `Settled`): time
to decision per day (median and 95th percentile) and outcomes per tool. Pure functions."""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date

from bot.records import RequestStatus
from bot.reports.request_log import OUTCOMES, DecidedRequest

# A person decided these (an expiry, a cancel or an undeliverable post is no decision).
DECIDED = frozenset({RequestStatus.RESOLVED, RequestStatus.REJECTED})
# The outcomes in the order a stacked bar shows them, bottom first.
OUTCOME_ORDER = tuple(OUTCOMES.values())
MAX_TOOLS = 12  # bars in the outcomes chart; the rest are summed as "other tools"
OTHER_TOOLS = "other tools"


@dataclass(frozen=True, slots=True)
class DayFigure:
    """Seconds from request to decision on one day (UTC, by decision time)."""

    day: date
    decisions: int
    median: float
    p95: float


@dataclass(frozen=True, slots=True)
class ToolOutcomes:
    """How the requests of one tool ended (outcome label -> count; pending ones too)."""

    tool: str
    counts: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def percentile(values: list[float], share: float) -> float:
    """The nearest-rank percentile (`share` in (0, 1]) of non-empty `values`: a value that
    occurred, never an interpolation between two."""
    ordered = sorted(values)
    rank = max(1, math.ceil(share * len(ordered)))
    return ordered[rank - 1]


def decision_times(rows: Iterable[DecidedRequest]) -> list[DayFigure]:
    """Per day with decisions, oldest first: how many, their median and 95th percentile."""
    by_day: dict[date, list[float]] = defaultdict(list)
    for row in rows:
        if row.status in DECIDED and row.settled_at is not None:
            seconds = max(0.0, (row.settled_at - row.created_at).total_seconds())
            by_day[row.settled_at.date()].append(seconds)
    return [
        DayFigure(day, len(times), statistics.median(times), percentile(times, 0.95))
        for day, times in sorted(by_day.items())
    ]


def outcomes_per_tool(rows: Iterable[DecidedRequest]) -> list[ToolOutcomes]:
    """Per tool, most requests first (ties by name); past MAX_TOOLS tools the rest as one."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for row in rows:
        counts[row.tool_name][OUTCOMES[row.status]] += 1
    ranked = sorted(counts.items(), key=lambda item: (-item[1].total(), item[0]))
    shown = [ToolOutcomes(tool, _ordered(tally)) for tool, tally in ranked[:MAX_TOOLS]]
    if len(ranked) > MAX_TOOLS:
        rest: Counter[str] = Counter()
        for _, tally in ranked[MAX_TOOLS:]:
            rest.update(tally)
        shown.append(ToolOutcomes(OTHER_TOOLS, _ordered(rest)))
    return shown


def _ordered(tally: Counter[str]) -> dict[str, int]:
    return {label: tally[label] for label in OUTCOME_ORDER if tally[label]}
