"""One view of a request in one state: what every surface draws.

Slack's Block Kit, Teams' Adaptive Cards and the console each draw a `RequestView`; none of them
decides what a request says. Live controls exist only while the request is pending, and every
request can be declined.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from bot.human_input import RenderState, RequestUpdate
from bot.human_tools.tool import HumanTool
from bot.requests.arguments import answer_of
from bot.requests.kind_of import kind_of
from bot.requests.kinds import DECLINE, Control, Fact, Kind
from bot.requests.wording import admin_cancelled, status_line
from bot.words.phrases import Phrase, joined


@dataclass(frozen=True, slots=True)
class RequestView:
    request_id: str
    tool_name: str
    state: RenderState
    title: str
    gist: str  # one line for a notification
    severity: str  # info, warning or danger
    facts: tuple[Fact, ...]  # what was asked, shown in every state but "preparing"
    status: Phrase  # whom it is for (pending), or how it ended
    outcome: tuple[Fact, ...]  # the answer (answered) or the reason (declined)
    controls: tuple[Control, ...]  # pending only
    replies: bool  # a reply in the conversation answers it
    actor_id: str | None
    expires_at: datetime | None

    @property
    def live(self) -> bool:
        return bool(self.controls)


def build_view(
    update: RequestUpdate, tool: HumanTool | None = None, *, live: bool = True
) -> RequestView:
    """The view of `update`; `live=False` draws a pending request without its controls (for
    people who may not answer it)."""
    kind = kind_of(update.tool_name, tool)
    args = update.arguments
    state = update.state
    preparing = state is RenderState.IN_PROGRESS
    shown = {} if preparing else args  # arguments still streaming in are shown nowhere
    controls: tuple[Control, ...] = ()
    if state is RenderState.EXECUTING and live:
        controls = (*kind.controls(args), DECLINE)
    audience = update.audience if state is RenderState.EXECUTING else None
    status = status_line(
        state,
        actor_id=update.actor_id,
        expires_at=update.expires_at,
        settled_by=update.settled_by,
        settled_at=update.settled_at,
        reason=update.reason,
        approved_by=approved_by(update),
        defaulted=update.result is not None,
        approvers=audience.who(update.actor_id) if audience is not None else None,
    )
    notes = audience.notes() if audience is not None else None
    if notes is not None:  # approvers the escalation added, its latest reminder
        status = joined(status, notes)
    if update.tally is not None and state is RenderState.EXECUTING:
        # The votes so far, in the line every surface shows (with its people formatted).
        line = update.tally.line
        status = joined(status, Phrase(line.template + ".", line.people))
    return RequestView(
        request_id=update.pending_id,
        tool_name=update.tool_name,
        state=state,
        title=kind.title(shown) or update.tool_name,
        gist=kind.gist(shown),
        severity=kind.severity(args),
        facts=() if preparing else tuple(f for f in kind.facts(args) if f.value),
        status=status,
        outcome=_outcome(kind, update),
        controls=controls,
        replies=kind.replies and state is RenderState.EXECUTING,
        actor_id=update.actor_id,
        expires_at=update.expires_at,
    )


def approved_by(update: RequestUpdate) -> list[str]:
    """Who approved a request that needed several approvals (its answer's `approved_by`)."""
    if update.state is not RenderState.COMPLETE:
        return []
    answer = answer_of(update.result)
    voters = answer.get("approved_by") if isinstance(answer, dict) else None
    if not isinstance(voters, list) or len(voters) < 2:
        return []
    return [str(voter) for voter in voters]


def _outcome(kind: Kind, update: RequestUpdate) -> tuple[Fact, ...]:
    # An expired request with a result carries the policy's default answer: shown as one.
    if update.state is RenderState.COMPLETE or (
        update.state is RenderState.EXPIRED and update.result is not None
    ):
        facts = kind.answer_facts(update.arguments, answer_of(update.result))
        if update.run_outcome:  # what came of the answer (a gated tool's run)
            facts = [*facts, Fact("Outcome", update.run_outcome)]
        return tuple(facts)
    if update.state is RenderState.REJECTED and update.reason:
        return (Fact("Reason", update.reason),)
    why = admin_cancelled(update.reason) if update.state is RenderState.CANCELLED else None
    return (Fact("Reason", why),) if why else ()
