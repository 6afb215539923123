"""How an answer is checked before it settles a request: the tool's validator for a person's
answer, and a policy's default answer at the deadline (bot/human_input/rules.py)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from bot.human_input.snapshots import AnswerValidator
from bot.records import PendingInput

log = logging.getLogger("bot.human_input")

ExpiryAnswer = Callable[[str, dict[str, Any]], str | None]


class AnswerChecks:
    """The validators by tool name; `expiry_answer` is the policy's default (None: none)."""

    def __init__(self, expiry_answer: ExpiryAnswer | None) -> None:
        self.validators: dict[str, AnswerValidator] = {}
        # A policy's default answer at the deadline, where it reads otherwise than a person's
        # (an approval gate's default may decline); else `validators` checks it.
        self._expiry_validators: dict[str, AnswerValidator] = {}
        self._expiry_answer = expiry_answer

    def set_validator(self, tool_name: str, validator: AnswerValidator) -> None:
        self.validators[tool_name] = validator

    def set_expiry_validator(self, tool_name: str, validator: AnswerValidator) -> None:
        self._expiry_validators[tool_name] = validator

    def validated(self, request: PendingInput, result: str) -> str:
        """The answer as stored; raises (AnswerInvalidError) if the tool's validator refuses."""
        validator = self.validators.get(request.tool_name)
        return validator(request.arguments, result) if validator is not None else result

    def default_answer(self, request: PendingInput) -> str | None:
        """The policy's answer at the deadline, checked as a person's would be; None when there
        is none, or when it does not fit the tool's answer (then the request expires
        unanswered: a default the tool cannot read must not pass as one)."""
        if self._expiry_answer is None:
            return None
        answer = self._expiry_answer(request.tool_name, request.arguments)
        if answer is None:
            return None
        validator = self._expiry_validators.get(request.tool_name)
        try:
            if validator is not None:
                return validator(request.arguments, answer)
            return self.validated(request, answer)
        except Exception as err:
            log.warning("the policy's default answer to %s does not fit %s, so it expired "
                        "unanswered: %s", request.id, request.tool_name, err)  # fmt: skip
            return None
