"""The admin console's two charts as SVG, drawn on the server: time to decision per day (the
median and the 95th percentile, two lines of points) and outcomes per tool (one stacked bar per
tool). Pure: figures in (bot/reports/figures.py), markup out, every text escaped. Colours come
from classes in static/console.css (the CSP allows no inline style)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from markupsafe import Markup, escape

from bot.reports.figures import OUTCOME_ORDER, DayFigure, ToolOutcomes

WIDTH = 720
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 24, 40  # the plot's margins, in SVG units
LINE_HEIGHT = 200  # the decision chart's plot
BAR_ROW = 26  # one tool's bar in the outcomes chart, with its gap
BAR_LABEL = 160  # the outcomes chart's left margin: tool names
LABEL_CHARACTERS = 22  # of a tool's name beside its bar; its title holds the whole
SERIES = (("median", "median"), ("p95", "95th percentile"))


def duration(seconds: float) -> str:
    """`12 s`, `4.5 min`, `2.1 h`, `3.0 d`: a readable length of time."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    if seconds < 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def counted(number: int, noun: str) -> str:
    """`1 request`, `2 requests`, `0 requests`: a count and its noun, plural as English has it
    (the nouns here take an s)."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 5 times a power of ten that is at least `value` (an axis top)."""
    if value <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    return next(step * power for step in (1, 2, 5, 10) if step * power >= value)


def decision_chart(days: Sequence[DayFigure]) -> Markup:
    """The median and 95th percentile of time to decision, one point per day with decisions."""
    if not days:
        return Markup('<p class="empty">No decisions in this period.</p>')
    top = nice_ceiling(max(day.p95 for day in days))
    plot_width = WIDTH - LEFT - RIGHT
    height = TOP + LINE_HEIGHT + BOTTOM

    def x(index: int) -> float:
        return LEFT + (index + 0.5) * plot_width / len(days)

    def y(seconds: float) -> float:
        return TOP + LINE_HEIGHT - seconds / top * LINE_HEIGHT

    parts = [
        _open("decision-times", height, "Time to decision per day: median and 95th percentile")
    ]
    parts += _y_axis(top, y, LEFT, WIDTH - RIGHT)
    every = max(1, math.ceil(len(days) / 10))  # at most ten day labels
    for index, day in enumerate(days):
        if index % every == 0:
            label = day.day.strftime("%m-%d")
            parts.append(
                _text(x(index), TOP + LINE_HEIGHT + 18, label, "tick day", anchor="middle")
            )
    for key, label in SERIES:
        values = [getattr(day, key) for day in days]
        points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(values))
        parts.append(f'<polyline class="series {key}" points="{points}"/>')
        for index, (day, value) in enumerate(zip(days, values, strict=True)):
            decisions = counted(day.decisions, "decision")
            tip = f"{day.day.isoformat()}: {label} {duration(value)} ({decisions})"
            parts.append(
                f'<circle class="point {key}" cx="{x(index):.1f}" cy="{y(value):.1f}" r="3.5">'
                f"<title>{escape(tip)}</title></circle>"
            )
    legend = [(f"series-key {key}", label) for key, label in SERIES]
    parts += _legend(legend, LEFT, height - 8)
    parts.append("</svg>")
    return Markup("".join(parts))  # noqa: S704 (every text in it went through escape)


def outcomes_chart(tools: Sequence[ToolOutcomes]) -> Markup:
    """One horizontal bar per tool, its outcomes stacked in OUTCOME_ORDER."""
    if not tools:
        return Markup('<p class="empty">No requests in this period.</p>')
    most = max(tool.total for tool in tools)
    plot_width = WIDTH - BAR_LABEL - RIGHT - 40  # room for the total after the longest bar
    height = TOP + len(tools) * BAR_ROW + BOTTOM
    parts = [_open("outcomes", height, "Outcomes per tool")]
    for row, tool in enumerate(tools):
        top = TOP + row * BAR_ROW
        parts.append(f'<g class="bar" data-tool="{escape(tool.tool)}">')
        name = tool.tool if len(tool.tool) <= LABEL_CHARACTERS else tool.tool[:21] + "…"
        parts.append(_text(BAR_LABEL - 8, top + 15, name, "tool-name"))
        left = float(BAR_LABEL)
        for outcome in OUTCOME_ORDER:
            count = tool.counts.get(outcome, 0)
            if not count:
                continue
            width = count / most * plot_width
            tip = f"{tool.tool}: {outcome} {count}"
            parts.append(
                f'<rect class="segment outcome-{outcome}" x="{left:.1f}" y="{top + 3}" '
                f'width="{width:.1f}" height="{BAR_ROW - 8}"><title>{escape(tip)}</title></rect>'
            )
            left += width
        parts.append(_text(left + 6, top + 15, str(tool.total), "total"))
        parts.append("</g>")
    shown = [o for o in OUTCOME_ORDER if any(o in tool.counts for tool in tools)]
    parts += _legend([(f"outcome-{o}", o) for o in shown], BAR_LABEL, height - 12)
    parts.append("</svg>")
    return Markup("".join(parts))  # noqa: S704 (every text in it went through escape)


def _open(name: str, height: int, title: str) -> str:
    return (
        f'<svg class="chart {name}" xmlns="http://www.w3.org/2000/svg" '
        f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{escape(title)}">'
        f"<title>{escape(title)}</title>"
    )


def _y_axis(top: float, y: Callable[[float], float], left: int, right: int) -> list[str]:
    parts = []
    for share in (0.0, 0.5, 1.0):
        level = y(top * share)
        parts.append(f'<line class="grid" x1="{left}" y1="{level:.1f}" x2="{right}" '
                     f'y2="{level:.1f}"/>')  # fmt: skip
        parts.append(_text(left - 6, level + 4, duration(top * share), "tick seconds"))
    return parts


def _legend(keys: list[tuple[str, str]], left: float, baseline: float) -> list[str]:
    parts = []
    for key, label in keys:
        parts.append(f'<rect class="legend {key}" x="{left:.0f}" y="{baseline - 9:.0f}" '
                     'width="10" height="10"/>')  # fmt: skip
        parts.append(_text(left + 14, baseline, label, "legend-label", anchor="start"))
        left += 24 + 7 * len(label)
    return parts


def _text(x: float, y: float, text: str, name: str, *, anchor: str = "end") -> str:
    return (f'<text class="{name}" x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}">'
            f"{escape(text)}</text>")  # fmt: skip
