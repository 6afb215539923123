"""What a policy decides of each request, given to the handler when it is made.

Each rule reads a call (its tool's name and arguments) or a request; None, for a rule or for
its answer, leaves today's behaviour: the caller's timeout, no default answer at the deadline,
no escalation, nobody named. `serve` builds them from the policy file (bot/policies/deciders.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bot.human_input.snapshots import AudienceView
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
