"""Failures that repeat are one WARNING line per kind and interval, without a traceback."""

from __future__ import annotations

import logging

import pytest

from bot.failures import RepeatedFailures

log = logging.getLogger("tests.failures")


def test_one_line_per_kind_then_how_many_more(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="tests.failures")
    failures = RepeatedFailures(log, interval=0.0)
    quiet = RepeatedFailures(log, interval=3600.0)
    for _ in range(5):
        quiet.failed("the heartbeat", RuntimeError("attempt to write a readonly database"))
    quiet.failed("the deadline sweep", OSError("disk I/O error"))
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [r.getMessage() for r in warnings] == [
        "the heartbeat failed: RuntimeError: attempt to write a readonly database",
        "the deadline sweep failed: OSError: disk I/O error",
    ]
    assert not any(r.exc_info for r in warnings)  # the traceback is at DEBUG only

    caplog.clear()
    failures.failed("the heartbeat", RuntimeError("first"))
    failures.failed("the heartbeat", RuntimeError("second"))  # the interval (0 s) has passed
    failures.recovered("the heartbeat")
    failures.recovered("the heartbeat")  # told once
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO] == [
        "the heartbeat failed: RuntimeError: first",
        "the heartbeat failed: RuntimeError: second",
        "the heartbeat works again",
    ]
