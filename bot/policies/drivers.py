"""Who may drive the agent: start or continue a turn in a conversation.

The policy file's top-level `drivers:` lists rooms (globs over the core's room ids) and who may
drive the agent in them; the first entry whose `room` matches applies, and a room no entry
matches is anyone's, as without a file. Admins may always. A driver is a named user or a member
of a named group (read through the Directory, as approvers are); a group that cannot be read
lets nobody in through it, and the refusal says so. Every refusal is audited (`turn_refused`);
the surface tells the person privately (Slack: an ephemeral message) or as briefly as the
platform allows (Teams: a short reply in the conversation).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from fnmatch import fnmatchcase

from bot.audit.refusals import AuditLog
from bot.policies.deciders import ALLOWED, Deciders, Verdict
from bot.policies.directory import Directory, GroupUnreadable
from bot.policies.policy_file import Drivers
from bot.policies.principals import Principal
from bot.records import AuditEntry, StoreUnavailableError
from bot.words.phrases import Phrase

log = logging.getLogger(__name__)

TURN_REFUSED = "turn_refused"  # the audit line of a refused turn
NOT_A_DRIVER = Phrase("Only some people may ask the agent to work in this conversation, and "
                      "you are not among them: ask one of them, or an admin.")  # fmt: skip


def drivers_of(drivers: Sequence[Drivers], room_id: str) -> Drivers | None:
    """The first entry whose `room` glob matches `room_id` (case counts); None: anyone."""
    return next((entry for entry in drivers if fnmatchcase(room_id, entry.room)), None)


async def may_drive(deciders: Deciders, room_id: str, users: Sequence[str]) -> Verdict:
    """May the person known by `users` (their id, then its aliases) drive the agent in
    `room_id`? A refusal's notice says why (which group could not be read, if one could not)."""
    entry = drivers_of(deciders.policy.drivers, room_id)
    ids = [user for user in users if user]
    if entry is None or any(user in deciders.policy.admins for user in ids):
        return ALLOWED
    unreadable: list[GroupUnreadable] = []
    for principal in entry.users:
        try:
            if await _holds(principal, ids, deciders.directory):
                return ALLOWED
        except GroupUnreadable as err:
            unreadable.append(err)
    if unreadable:
        said = str(unreadable[0])
        return Verdict(False, Phrase("{why}: nobody can drive the agent here through it until "
                                     "it can be read.",
                                     values={"why": said[:1].upper() + said[1:]}))  # fmt: skip
    return Verdict(False, NOT_A_DRIVER)


async def _holds(principal: Principal, ids: list[str], directory: Directory | None) -> bool:
    if principal.kind == "user":
        return principal.id in ids
    if directory is None:
        raise GroupUnreadable(str(principal), "no directory of groups is configured")
    for user in ids:
        if await directory.is_member(user, str(principal)):
            return True
    return False


async def refused_turn(
    deciders: Deciders,
    store: AuditLog,
    *,
    room_id: str,
    user_id: str,
    surface: str,
    aliases: Sequence[str] = (),
) -> Phrase | None:
    """None when this person may drive the agent in `room_id`; else the notice to tell them,
    the refusal audited (`turn_refused`: who, where, on which surface, why)."""
    verdict = await may_drive(deciders, room_id, (user_id, *aliases))
    if verdict.allowed:
        return None
    notice = verdict.notice or NOT_A_DRIVER
    entry = AuditEntry(
        action=TURN_REFUSED,
        at=datetime.now(UTC),
        actor_id=user_id,
        detail={"surface": surface, "room": room_id, "why": notice.plain},
    )
    try:
        await store.append_audit(entry)
    except StoreUnavailableError as err:  # still refused: the audit is what could not be kept
        log.warning("could not audit a refused turn in %s: %s", room_id, err)
    log.info("refused a turn of %s in %s: not a driver there", user_id, room_id)
    return notice
