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


Fields = dict[str, str | float | None]


def transition_fields(update: RequestUpdate) -> Fields | None:
    """What a line says of `update`, as the `extra=` fields of its record (the keys of a JSON
    line), or None when it is no transition: a call still streaming in, an open request shown
    again (its votes, an escalation step), a settled one's run outcome."""
    outcome = OUTCOMES.get(update.state)
    again = update.shown_again or update.run_outcome is not None or update.copy
    if outcome is None or again or not update.pending_id:
        return None
    fields: Fields = {"request_id": update.pending_id, "tool": update.tool_name,
                      "outcome": outcome, "room": update.room_id}  # fmt: skip
    if update.state is RenderState.EXECUTING:
        return fields | {"actor": update.actor_id}
    waited = None
    if update.settled_at is not None:
        waited = round((update.settled_at - update.created_at).total_seconds(), 3)
    return fields | {"by": update.settled_by, "seconds": waited}


def transition_line(fields: Fields) -> str:
    """`request R1 requestApproval: asked for U1 in slack:C1:1.2`, or `...: answered by U1
    after 4.2s`."""
    line = f"request {fields['request_id']} {fields['tool']}: {fields['outcome']}"
    if "actor" in fields:
        return f"{line} for {fields['actor'] or 'anyone'} in {fields['room']}"
    if fields["by"]:
        line += f" by {fields['by']}"
    if fields["seconds"] is not None:
        line += f" after {fields['seconds']:.1f}s"
    return line


async def log_transition(update: RequestUpdate) -> None:
    """The observer: logs `transition_line` at INFO, its fields as the record's."""
    fields = transition_fields(update)
    if fields is not None:
        log.info("%s", transition_line(fields), extra=fields)
