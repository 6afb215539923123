"""What a policy decides of each request, given to the handler when it is made, and how an
answer is checked before it settles one (`AnswerChecks`: the tool's validator for a person's
answer, and a policy's default answer at the deadline).

Each rule reads a call (its tool's name and arguments) or a request; None, for a rule or for
its answer, leaves today's behaviour: the caller's timeout, no default answer at the deadline,
no escalation, nobody named. `serve` builds them from the policy file (bot/policies/deciders.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bot.human_input.snapshots import AnswerValidator, AudienceView
from bot.records import PendingInput


@dataclass(frozen=True, slots=True)
class RequestRules:
    """The policy's rules for requests (each None: no such rule)."""

    # The deadline for a call, in seconds, over the caller's (a rule's `timeout_seconds`).
    lifetime: Callable[[str, dict[str, Any]], float | None] | None = None
    # The answer at the deadline, as JSON (a rule's `on_timeout: {answer: ...}`), checked
    # against the tool as a person's answer would be; None: the request expires unanswered.
    expiry_answer: Callable[[str, dict[str, Any]], str | None] | None = None
    # Seconds from creation to the first escalation step (a rule's `escalate`).
    escalation_start: Callable[[str, dict[str, Any]], float | None] | None = None
    # Who may answer an open request and how far its escalation went, as its message shows
    # them (bot/policies/escalation.py).
    audience: Callable[[PendingInput], AudienceView | None] | None = None


NO_RULES = RequestRules()

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
