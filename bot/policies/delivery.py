"""Where a request is shown besides its own room: its policy rule's `deliver`.

`thread` is the request's own room (always shown there). `approvers_dm` adds a direct message
to each user the rule names (groups and the actor get none: the actor asked in the thread);
`slack:C…` an approvals channel; `teams:<conversation id>` a Teams conversation. Each is
found through the surfaces (`Bridge.find`: Slack opens the DM with conversations.open), so the
policy decides here, in the core, and the surfaces only post and edit. A room that cannot be
found is one undeliverable copy, told to `undeliverable` once, when the request is posted; the
request itself is undeliverable only when its own room fails.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from bot.doors.addresses import Address, Addressee, UnknownAddressError
from bot.human_input import RenderState, RequestUpdate
from bot.policies.deciders import Deciders
from bot.policies.destinations import APPROVERS_DM, THREAD, Destination
from bot.policies.policy_file import Rule

log = logging.getLogger(__name__)

Find = Callable[[Address], Awaitable[Addressee]]
Undeliverable = Callable[[RequestUpdate, str, str], Awaitable[None]]
"""(the request's update, where its copy was to go, why it could not): log and audit it."""


class Delivery:
    """The rooms a request's copies go to (a `Bridge.mirror`), by its rule's `deliver`."""

    def __init__(self, deciders: Deciders, find: Find, undeliverable: Undeliverable) -> None:
        self.deciders = deciders
        self.find = find
        self.undeliverable = undeliverable

    async def rooms(self, update: RequestUpdate) -> list[str]:
        """The copies' rooms: none for a call not yet a request (its "Preparing…" message
        is the thread's alone) nor for a rule that delivers to the thread only."""
        if not update.pending_id or update.state is RenderState.IN_PROGRESS:
            return []
        rule = self.deciders.rule_of(update.tool_name, update.arguments)
        if rule.deliver == (THREAD,):
            return []
        posting = update.state is RenderState.EXECUTING and update.tally is None
        rooms: list[str] = []
        for address in addresses(rule):
            try:
                found = await self.find(address)
            except UnknownAddressError as err:
                if posting:  # told once, when the copy would have been posted
                    await self.undeliverable(update, address.text, str(err))
                else:
                    log.warning("no copy of %s to update at %s: %s", update.pending_id,
                                address.text, err)  # fmt: skip
                continue
            if found.room_id != update.room_id and found.room_id not in rooms:
                rooms.append(found.room_id)
        return rooms


def addresses(rule: Rule) -> list[Address]:
    """Where `rule` delivers besides the thread, in the order it lists them."""
    found: list[Address] = []
    for destination in rule.deliver:
        for address in _addresses(destination, rule):
            if address not in found:
                found.append(address)
    return found


def _addresses(destination: Destination, rule: Rule) -> list[Address]:
    if destination == APPROVERS_DM:
        return [
            Address(p.surface, p.id)
            for p in rule.approvers
            if p.kind == "user" and p.surface is not None
        ]
    if destination.kind == "slack_channel":
        return [Address("slack", destination.id)]
    if destination.kind == "teams_conversation":
        return [Address("teams", destination.id)]
    return []  # the thread: the request's own room
