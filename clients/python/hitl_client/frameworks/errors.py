"""What the framework adapters raise beside the client's own errors (all are HitlError)."""

from __future__ import annotations

from hitl_client.errors import HitlError


class DecisionNotAllowed(HitlError):
    """The person decided something the framework does not allow for this action (a decline
    where only approval is allowed, say): the framework's pause is left as it was, and the
    request, with the person's decision, stays on record at the bridge."""


class UnknownInterrupt(HitlError):
    """A pause this adapter cannot read (a LangGraph interrupt of the graph's own making):
    answer it yourself."""
