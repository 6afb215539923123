"""The console's SVG charts: one point per day and series, one bar per tool, text escaped."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import date

import pytest

from adapters.doors.admin.charts import decision_chart, duration, nice_ceiling, outcomes_chart
from bot.reports.figures import DayFigure, ToolOutcomes

pytestmark = pytest.mark.fast  # pure functions: in `make check`

SVG = "{http://www.w3.org/2000/svg}"


def parsed(markup: str) -> ET.Element:
    return ET.fromstring(markup)


def by_class(root: ET.Element, tag: str, name: str) -> list[ET.Element]:
    return [e for e in root.iter(SVG + tag) if name in (e.get("class") or "").split()]


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(0, "0 s"), (59, "59 s"), (90, "1.5 min"), (5400, "1.5 h"), (3 * 86400, "3.0 d")],
)
def test_duration(seconds: float, shown: str) -> None:
    assert duration(seconds) == shown


@pytest.mark.parametrize(("value", "top"), [(0, 1), (0.3, 0.5), (7, 10), (120, 200), (1000, 1000)])
def test_nice_ceiling(value: float, top: float) -> None:
    assert nice_ceiling(value) == pytest.approx(top)


def test_the_decision_chart_has_a_point_per_day_and_series() -> None:
    days = [
        DayFigure(date(2026, 11, 1), 4, 30.0, 120.0),
        DayFigure(date(2026, 11, 2), 1, 600.0, 600.0),
        DayFigure(date(2026, 11, 4), 2, 5.0, 9.0),
    ]
    root = parsed(decision_chart(days))
    medians, p95s = by_class(root, "circle", "median"), by_class(root, "circle", "p95")
    assert len(medians) == len(p95s) == 3
    assert len(by_class(root, "polyline", "series")) == 2
    # The 95th percentile is never below the median: higher up is a smaller y.
    for median, p95 in zip(medians, p95s, strict=True):
        assert float(p95.get("cy", "0")) <= float(median.get("cy", "0"))
    tips = [t.text for t in root.iter(SVG + "title")]
    assert "2026-11-02: median 10.0 min (1 decision)" in tips


def test_the_outcomes_chart_stacks_each_tools_outcomes() -> None:
    tools = [
        ToolOutcomes("deploy", {"answered": 3, "declined": 1}),
        ToolOutcomes("<script>alert(1)</script>", {"expired": 2}),
    ]
    markup = outcomes_chart(tools)
    assert "<script>" not in markup
    root = parsed(markup)
    bars = by_class(root, "g", "bar")
    assert [bar.get("data-tool") for bar in bars] == ["deploy", "<script>alert(1)</script>"]
    segments = [by_class(bar, "rect", "segment") for bar in bars]
    assert [len(s) for s in segments] == [2, 1]
    answered, declined = segments[0]
    assert "outcome-answered" in (answered.get("class") or "")
    widths = [float(s.get("width", "0")) for s in (answered, declined)]
    assert widths[0] == pytest.approx(3 * widths[1])  # 3 against 1


def test_no_figures_no_chart() -> None:
    assert "No decisions" in decision_chart([])
    assert "No requests" in outcomes_chart([])
