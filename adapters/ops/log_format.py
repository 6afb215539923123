"""What a log line looks like: text for people (the default), or one JSON object a line for
machines (`HITL_LOG_FORMAT=json`), with the same fields.

A call gives its fields as `extra=` (`log.info("...", extra={"request_id": ...})`): the text
line shows the message, which says them too; the JSON line has `timestamp` (ISO 8601, UTC),
`level`, `logger`, `message`, each `extra=` field as a key, and a traceback as `exc_info`.

What someone else wrote (a name or id a client chose, a model's words quoted in an error) can
hold control characters, line breaks and bidi overrides that act on the terminal showing the
log, or start a line of the writer's choosing. The text lines escape them
(adapters/ops/terminal.py):
a record's message is one line, and a traceback's lines (an exception's message may hold line
breaks) follow it each indented and escaped, so every line at column 0 is a record of ours. The
JSON lines are plain ASCII, everything else in JSON's own escapes, so a machine reads each value
exactly as it was.

The JSON lines are python-json-logger's: a well-kept formatter that knows which of a record's
attributes are `extra=` fields on each Python version, which is most of what one would write.
It is imported only when asked for.
"""

from __future__ import annotations

import logging
from types import TracebackType

from adapters.ops.terminal import safe

TEXT = "text"
JSON = "json"
LOG_FORMATS = (TEXT, JSON)  # HITL_LOG_FORMAT
TEXT_LINE = "%(asctime)s %(levelname)s %(name)s: %(message)s"

_ExcInfo = tuple[type[BaseException], BaseException, TracebackType | None]


class TextLines(logging.Formatter):
    """`2026-12-04 21:30:00,123 INFO bot.human_input.log_lines: request ...`, escaped."""

    def __init__(self) -> None:
        super().__init__(TEXT_LINE)

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = safe(record.message)
        return super().formatMessage(record)

    def formatException(self, ei: _ExcInfo | tuple[None, None, None]) -> str:
        return _lines_safe(super().formatException(ei))

    def formatStack(self, stack_info: str) -> str:
        return _lines_safe(super().formatStack(stack_info))


def json_lines() -> logging.Formatter:
    """`{"level": "INFO", "logger": ..., "message": ..., "request_id": ..., "timestamp": ...}`"""
    from pythonjsonlogger.json import JsonFormatter

    return JsonFormatter(
        "%(levelname)s %(name)s %(message)s",
        rename_fields={"levelname": "level", "name": "logger"},
        timestamp=True,  # record.created as ISO 8601 in UTC
        json_ensure_ascii=True,  # nothing in a line but printable ASCII
    )


def use_log_format(kind: str) -> None:
    """Every handler of the root logger writes `kind` lines (one of LOG_FORMATS)."""
    formatter = json_lines() if kind == JSON else TextLines()
    for handler in logging.getLogger().handlers:
        handler.setFormatter(formatter)


def _lines_safe(text: str) -> str:
    """Each line of a traceback escaped as `safe` does and indented: none starts a record."""
    return "\n".join(f"  {safe(line)}" for line in text.splitlines())
