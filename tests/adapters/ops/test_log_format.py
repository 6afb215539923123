"""adapters/ops/log_format.py: the text lines escape what someone else wrote, the JSON lines carry
the same record as one ASCII object a line, its `extra=` fields as keys."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Mapping

from adapters.ops.log_format import TextLines, json_lines

# A name a client chose: an escape that clears the screen, a line of its own, a bidi override.
WRITTEN = "U1\x1b[2J\n2026-12-04 00:00:00,000 INFO bot: approved\u202eexe.txt"
FIELDS = {"request_id": "r1", "tool": "requestApproval", "outcome": "answered", "by": WRITTEN,
          "seconds": 4.25}  # fmt: skip


def record(
    message: str = "request r1 requestApproval: answered by %s", extra: Mapping[str, object] = {}
) -> logging.LogRecord:
    """A record as `log.info(message, WRITTEN, extra=extra)` makes it."""
    return logging.makeLogRecord({"name": "bot.human_input.log_lines", "levelno": logging.INFO,
                                  "levelname": "INFO", "msg": message, "args": (WRITTEN,),
                                  **extra})  # fmt: skip


def failed() -> logging.LogRecord:
    try:
        raise ValueError(WRITTEN)
    except ValueError:
        made = record("tool %s failed")
        made.levelno, made.levelname, made.exc_info = logging.ERROR, "ERROR", sys.exc_info()
        return made


def test_a_text_line_is_one_line_with_what_was_written_escaped() -> None:
    line = TextLines().format(record(extra=FIELDS))
    assert line.endswith(
        " INFO bot.human_input.log_lines: request r1 requestApproval: answered by "
        "U1\\x1b[2J\\n2026-12-04 00:00:00,000 INFO bot: approved\\u202eexe.txt"
    ), line
    assert line.isprintable()


def test_a_traceback_follows_on_lines_of_its_own_each_indented_and_escaped() -> None:
    lines = TextLines().format(failed()).splitlines()
    assert lines[0].endswith(" ERROR bot.human_input.log_lines: tool U1\\x1b[2J\\n2026-12-04 "
                             "00:00:00,000 INFO bot: approved\\u202eexe.txt failed")  # fmt: skip
    assert lines[1] == "  Traceback (most recent call last):"
    # The exception's message is someone else's: its second line cannot pass for a record.
    assert lines[-2:] == ["  ValueError: U1\\x1b[2J", "  2026-12-04 00:00:00,000 INFO bot: "
                          "approved\\u202eexe.txt"]  # fmt: skip
    assert all(line.isprintable() and line.startswith("  ") for line in lines[1:])


def test_a_json_line_is_one_ascii_object_with_the_fields_as_they_were() -> None:
    line = json_lines().format(record(extra=FIELDS))
    assert "\n" not in line and line.isascii() and line.isprintable()
    said = json.loads(line)
    assert said.pop("timestamp").endswith("+00:00")  # ISO 8601, UTC
    assert said == {"level": "INFO", "logger": "bot.human_input.log_lines",
                    "message": f"request r1 requestApproval: answered by {WRITTEN}",
                    **FIELDS}  # fmt: skip


def test_a_json_line_carries_its_traceback() -> None:
    line = json_lines().format(failed())
    assert "\n" not in line and line.isascii()
    said = json.loads(line)
    assert said["level"] == "ERROR" and said["exc_info"].endswith(f"ValueError: {WRITTEN}")
