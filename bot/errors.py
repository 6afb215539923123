"""The exception tree of the core.

Errors a tool call can end in carry `.message`: the JSON string `{"error": "..."}` the model reads.
"""

from __future__ import annotations

import json


class HumanInputRejectedError(RuntimeError):
    """A person (or an ON_USER_INPUT_REQUIRED hook) refused the request; `str(err)` says why."""


class ExpiredWithAnswerError(TimeoutError):
    """A request expired and its policy rule's `on_timeout` answer applied: `answer` is that
    default (as stored), never a person's. A TimeoutError, so a caller that knows nothing of
    defaults treats it as the plain expiry it also is."""

    def __init__(self, reason: str, answer: str) -> None:
        super().__init__(reason)
        self.answer = answer


class UndeliverableError(RuntimeError):
    """A request could not be shown to anyone: `str(err)` says why. A surface raises it from
    `observe` when the platform refused to post a new request for good (after retries); the
    request then settles as undeliverable, and its waiter raises it too."""


class RequestCancelledError(RuntimeError):
    """Someone withdrew the request (an admin's `/hitl cancel`, a door's requester); `str(err)`
    says who and why. A request withdrawn by no one (its wait abandoned, its handler closed)
    raises a plain RuntimeError instead."""


class AnswerInvalidError(ValueError):
    """An answer that fails the tool's answer model; the request stays pending.

    `fields` maps an answer key to what is wrong with it ("" for the answer as a whole), so a
    form can show each error beside its input.
    """

    def __init__(self, message: str, fields: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.fields = fields or {}


class ConfigurationError(RuntimeError):
    """A setting is missing or wrong; the message names it."""


class ToolCallError(Exception):
    """A tool call that did not produce a result; `message` is what the model reads."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason

    @property
    def message(self) -> str:
        return json.dumps({"error": self.reason})


class ToolFailedError(ToolCallError):
    """The tool ran and failed (a timeout, a crash): `is_error`, not refused."""


class ToolRefusedError(ToolCallError):
    """The call was refused (a person said no, a hook blocked it, its arguments were invalid)."""


class UnservedToolCallError(ToolCallError):
    """No handler serves this tool name; composed handlers fall through on it."""

    def __init__(self, tool_name: str) -> None:
        super().__init__(f"No handler serves tool '{tool_name}'")
        self.tool_name = tool_name
