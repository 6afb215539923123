"""Every sentence a person reads about a request, written once for every surface (each a
`Phrase`, bot/words/phrases.py)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from bot.human_input import RenderState
from bot.records import RequestRecord, RequestStatus
from bot.words.phrases import Phrase, joined, listed, placeholders


def _by_at(
    template: str, by: str | None, at: datetime | None, several: Sequence[str] = ()
) -> Phrase:
    """`template` + " by {by}" + " {at}", each when known; by each of `several` people
    (those who approved a request several had to) rather than the one who settled it."""
    people = {"by": by} if by and not several else {}
    who = " by {by}" if people else ""
    if several:
        people = dict(zip(placeholders("by"), several, strict=False))
        who = " by " + listed([f"{{{key}}}" for key in people])
    moments = {"at": at} if at else {}
    return Phrase(template + who + (" {at}" if at else ""), people, moments)


# -- the line under a request, per state ----------------------------------------------------


def status_line(
    state: RenderState,
    *,
    actor_id: str | None,
    expires_at: datetime | None,
    settled_by: str | None,
    settled_at: datetime | None,
    reason: str | None = None,
    approved_by: Sequence[str] = (),
    defaulted: bool = False,
    approvers: Phrase | None = None,
) -> Phrase:
    """`approved_by`: the people whose approvals settled the request, when it took several;
    `defaulted`: it expired with the policy's default answer (`on_timeout`); `approvers`:
    who may answer a pending request, when its policy rule names people (else it is
    addressed to its actor)."""
    if state is RenderState.IN_PROGRESS:
        return Phrase("Preparing request…")
    if state is RenderState.EXECUTING:
        until = Phrase("")
        if expires_at:
            until = Phrase(" Expires {expires}.", moments={"expires": expires_at})
        if approvers is not None:  # `Asked by @alice. Approvers: @bob, @ops-team.`
            asked = Phrase("Asked by {actor}. ", {"actor": actor_id}) if actor_id else Phrase("")
            return joined(joined(asked, approvers, ""), until, "")
        who = "{actor}, this is for you." if actor_id else "Anyone here can answer."
        return joined(Phrase(who, {"actor": actor_id} if actor_id else {}), until, "")
    if state is RenderState.COMPLETE:
        return _by_at("Answered", settled_by, settled_at, approved_by)
    if state is RenderState.REJECTED:
        return _by_at("Declined", settled_by, settled_at)
    if state is RenderState.EXPIRED:
        if defaulted:
            return Phrase("Expired: the policy's default answer applied.")
        at = {"at": expires_at} if expires_at else {}
        return Phrase(("Expired {at}" if at else "Expired") + ": no answer was given in time.",
                      moments=at)  # fmt: skip
    if state is RenderState.UNDELIVERABLE:
        return undelivered(reason)
    if admin_cancelled(reason) is not None:
        by = ", {by}" if settled_by else ""
        people = {"by": settled_by} if settled_by else {}
        moments = {"at": settled_at} if settled_at else {}
        return Phrase(ADMIN_CANCELLED + by + (" {at}" if moments else ""), people, moments)
    if reason is not None and reason.startswith(f"{RUN_STOPPED} by ") and settled_by:
        return _by_at(RUN_STOPPED, settled_by, settled_at)
    return Phrase("Withdrawn: no answer is needed any more.")


RUN_STOPPED = "Stopped"  # a request withdrawn because its turn was stopped (bot/bridge/turns.py)


# -- an admin's cancel (`/hitl cancel <id> [reason]`) ----------------------------------------

ADMIN_CANCELLED = "Cancelled by an admin"


def admin_cancel_reason(reason: str) -> str:
    """The reason an admin's cancel records: what the waiting model reads, and the mark
    `admin_cancelled` finds (a requester's withdrawal reads otherwise)."""
    return f"{ADMIN_CANCELLED}: {reason}" if reason else ADMIN_CANCELLED


def admin_cancelled(reason: str | None) -> str | None:
    """The admin's own reason ("" if they gave none) of a request an admin cancelled; None
    for any other reason."""
    if reason is None or not reason.startswith(ADMIN_CANCELLED):
        return None
    return reason.removeprefix(ADMIN_CANCELLED).removeprefix(":").strip()


def undelivered(reason: str | None) -> Phrase:
    """The line of a request no one could be shown (the platform refused it)."""
    why = (reason or "").strip().rstrip(".")
    # The reason is the surface's, not a template: braces in it stay as they are (Phrase
    # renders a placeholder it has no value for as its literal text).
    return Phrase(f"Could not be delivered: {why}." if why else "Could not be delivered.")


# -- "decline and stop" (a door's gated call, bot/gates/approvals.py) -------------------------

STOPPED = "Declined and stopped"


def stop_reason(reason: str) -> str:
    """The reason a "decline and stop" records: the person's own, marked so the door that
    asked can tell its agent to stop (`stopped`); people and the audit log read it as it is.
    A decline whose reason someone wrote with the mark reads as a stop too: only the people
    who may decline can write it, and they may stop the agent anyway."""
    return f"{STOPPED}: {reason}" if reason else STOPPED


def stopped(reason: str | None) -> str | None:
    """The person's own reason ("" if they gave none) of a decline that asked the agent to
    stop; None for any other reason."""
    if reason is None or not (reason == STOPPED or reason.startswith(STOPPED + ":")):
        return None
    return reason.removeprefix(STOPPED).removeprefix(":").strip()


# -- notices: private replies to someone whose answer was not taken -------------------------

UNKNOWN = Phrase("This request is no longer known.")
UNFIT = Phrase("That control does not fit this request.")
UNAVAILABLE = Phrase("This request cannot be answered right now; try again in a moment.")


def already_settled(record: RequestRecord) -> Phrase:
    """Why an answer to a request that is no longer open was not taken."""
    status = record.status
    if status is RequestStatus.RESOLVED:
        return _by_at("This request was already answered", record.settled_by, record.settled_at)
    if status is RequestStatus.REJECTED:
        return _by_at("This request was already declined", record.settled_by, record.settled_at)
    if status is RequestStatus.TIMED_OUT:
        if record.expires_at is None:
            return Phrase("This request expired.")
        return Phrase("This request expired {at}.", moments={"at": record.expires_at})
    if status is RequestStatus.UNDELIVERABLE:
        return Phrase("This request could not be delivered, so it is closed.")
    if status is RequestStatus.PENDING:  # another answer is being recorded right now
        return Phrase("This request is being answered by someone else right now.")
    return Phrase("This request was withdrawn.")


def voted_already(tally: Phrase) -> Phrase:
    """To someone whose second vote on a request several people decide was not taken."""
    return Phrase(f"You voted already: {tally.template}.", tally.people)


VOTES_DECIDE = Phrase("This request is decided by votes: approve it, or decline it.")


def needs_approvals(required: int) -> Phrase:
    """To someone who edited, or approved and allowed, a request that needs several
    approvals: each approval is of the same call, so it is approved as it is."""
    return Phrase(f"This request needs {required} approvals: approve it as it is, or decline.")
