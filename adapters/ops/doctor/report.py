"""The doctor's results drawn for people (a line each: ✓, ✗ and the fix, or an en dash and why) and
for machines (a JSON list of {check, ok, detail, fix}); the exit status. Pure."""

from __future__ import annotations

import json
from collections.abc import Sequence

from adapters.ops.doctor.results import Result
from adapters.ops.terminal import one_line

MARKS = {"ok": "✓", "failed": "✗", "skipped": "\u2013"}  # an en dash
ALL_PASSED, SOME_FAILED = 0, 1


def line(result: Result) -> str:
    """`✓ check: detail`, `✗ check: detail — fix: …` or an en dash and `check: why`, on one line and
    escaped (details quote what servers answered)."""
    text = f"{MARKS[result.status]} {result.check}: {result.detail}"
    if result.fix:
        text += f" — fix: {result.fix}"
    return one_line(text)


def lines(results: Sequence[Result]) -> list[str]:
    return [line(result) for result in results]


def as_json(results: Sequence[Result]) -> str:
    return json.dumps([result.to_json() for result in results], ensure_ascii=False, indent=2)


def exit_status(results: Sequence[Result]) -> int:
    """0 when no check failed (skipped ones do not count), 1 otherwise."""
    return SOME_FAILED if any(result.status == "failed" for result in results) else ALL_PASSED
