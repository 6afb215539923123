"""One log line per transition of a request: asked, then how it ended, who ended it and how
long it waited. An observer of the handler (`serve` adds it), so every surface and door is
covered once, and only on the worker that made the transition (the one that tells observers).

The line holds ids, the tool's name and times: never the request's arguments or answer, which
may carry what the audit log redacts.
"""

from __future__ import annotations

import logging

from bot.human_input.snapshots import RenderState, RequestUpdate

log = logging.getLogger(__name__)

# What a person reads for each state (as the admin console's request log says them).
OUTCOMES = {
    RenderState.EXECUTING: "asked",
    RenderState.COMPLETE: "answered",
    RenderState.REJECTED: "declined",
    RenderState.EXPIRED: "expired",
    RenderState.CANCELLED: "cancelled",
    RenderState.UNDELIVERABLE: "undeliverable",
}


def transition_line(update: RequestUpdate) -> str | None:
    """The line for `update`, or None when it is no transition: a call still streaming in, an
    open request shown again (its votes, an escalation step), a settled one's run outcome."""
    outcome = OUTCOMES.get(update.state)
    again = update.shown_again or update.run_outcome is not None or update.copy
    if outcome is None or again or not update.pending_id:
        return None
    line = f"request {update.pending_id} {update.tool_name}: {outcome}"
    if update.state is RenderState.EXECUTING:
        return f"{line} for {update.actor_id or 'anyone'} in {update.room_id}"
    if update.settled_by:
        line += f" by {update.settled_by}"
    if update.settled_at is not None:
        waited = (update.settled_at - update.created_at).total_seconds()
        line += f" after {waited:.1f}s"
    return line


async def log_transition(update: RequestUpdate) -> None:
    """The observer: logs `transition_line` at INFO."""
    line = transition_line(update)
    if line is not None:
        log.info("%s", line)
