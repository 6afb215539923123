"""Who gets a request's live card by Teams' automatic refresh: its `refresh.userIds`.

Teams lists people there by their Teams user ids ("29:…"), at most 60; the core names them by
AAD object id. The list is the actor, then the approvers and admins configured by Teams user id
or seen by the bridge, then the approvers the request's policy rule names (its Teams users, the
members of its Entra groups, and those its escalation added so far). Whom the bridge has not
heard from yet is looked up in the conversation's roster (the Bot Connector's
`GET /v3/conversations/{id}/members/{AAD object id}`), which also gives their name; someone
the roster does not hold (not in the conversation: they cannot see the card) is left out, and
not asked for again for a while. A group that cannot be read adds nobody. Teams refreshes the
card for everyone in conversations of 60 people or fewer anyway; the list is what larger ones
need.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from microsoft_teams.api import ApiClient

from adapters.surfaces.teams.text import MAX_REFRESH_USERS
from bot import RenderState, RequestUpdate
from bot.policies.directory import Directory, GroupUnreadable
from bot.policies.escalation import Audience

__all__ = ["LOOKUP_SECONDS", "Known", "RefreshList", "is_teams_user_id"]

log = logging.getLogger(__name__)

LOOKUP_SECONDS = 3.0  # a card waits at most this long for its roster look-ups
LOOKUPS_AT_ONCE = 8
MISSING_TTL = 300.0  # seconds: someone not in a conversation is not looked up again sooner
WANTED = 4 * MAX_REFRESH_USERS  # approvers read from the rule, at most: some are not here
MAX_MISSING = 10_000  # remembered misses; past this the oldest are forgotten


class Known(Protocol):
    """Who the bridge has heard from (adapters/surfaces/teams/surface.py's People)."""

    def user_id(self, aad_object_id: str | None) -> str | None: ...

    def learn(self, aad_object_id: str, user_id: str, name: str | None) -> None: ...


class RefreshList:
    """See the module's docstring. `people` is the surface's People (learned from activities,
    and from the roster here); `deciders` are HITL_APPROVERS and HITL_ADMINS; `client_for` a
    Bot Connector client for a serviceUrl; `directory` reads the policy's Entra groups."""

    def __init__(
        self,
        people: Known,
        deciders: Sequence[str],
        client_for: Callable[[str], ApiClient],
        directory: Directory | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.people = people
        self.deciders = tuple(deciders)
        self.client_for = client_for
        self.directory = directory
        self._clock = clock
        self._missing: dict[tuple[str, str], float] = {}  # (conversation, AAD id) -> until

    def configured(self, actor_id: str | None) -> tuple[str, ...]:
        """The actor, then the configured approvers and admins, by Teams user id where it is
        known (configured so, or learned); at most 60."""
        return self._ids((actor_id, *self.deciders))

    async def user_ids(
        self,
        update: RequestUpdate,
        service_url: str | None,
        conversation_id: str,
        kept: Sequence[str] = (),
    ) -> tuple[str, ...]:
        """The refresh list of an open request's card in `conversation_id` (the base
        conversation, for a channel's reply chain); `kept` the card's list so far (first,
        so nobody drops off it). Empty for a settled request: its card does not refresh."""
        if update.state is not RenderState.EXECUTING:
            return ()
        wanted = [*kept, *self.configured(update.actor_id), *await self._approvers(update)]
        unknown = [w for w in dict.fromkeys(wanted) if not self._is_known(w)]
        if unknown and service_url:
            await self._look_up(service_url, conversation_id, unknown)
        return self._ids(wanted)

    # -- the rule's approvers

    async def _approvers(self, update: RequestUpdate) -> list[str]:
        """The AAD object ids the request's rule names: its Teams users and the members of
        its Entra groups (as far as its escalation went)."""
        audience = update.audience
        if not isinstance(audience, Audience):  # None: no policy rule names anyone
            return []
        found: list[str] = []
        for principal in audience.approvers:
            if principal.kind == "user" and principal.surface in ("teams", None):
                found.append(principal.id)
            elif principal.kind == "entra_group" and self.directory is not None:
                try:
                    members = await self.directory.members(str(principal))
                except GroupUnreadable as err:
                    log.info("no refresh for %s's members: %s", principal, err)
                    continue
                found.extend(sorted(members)[: WANTED - len(found)])
            if len(found) >= WANTED:
                break
        return found

    # -- Teams user ids

    def _is_known(self, who: str) -> bool:
        return not who or is_teams_user_id(who) or self.people.user_id(who) is not None

    def _ids(self, people: Iterable[str | None]) -> tuple[str, ...]:
        ids: list[str] = []
        for who in people:
            user_id = who if who and is_teams_user_id(who) else self.people.user_id(who)
            if user_id and user_id not in ids:
                ids.append(user_id)
                if len(ids) == MAX_REFRESH_USERS:
                    break
        return tuple(ids)

    async def _look_up(self, service_url: str, conversation_id: str, aad_ids: list[str]) -> None:
        """Learn the Teams user ids (and names) of `aad_ids` from the conversation's roster,
        within LOOKUP_SECONDS; those it does not hold are remembered as missing."""
        now = self._clock()
        wanted = [a for a in aad_ids if self._missing.get((conversation_id, a), 0.0) <= now]
        wanted = wanted[:MAX_REFRESH_USERS]
        if not wanted:
            return
        conversations = self.client_for(service_url).conversations
        gate = asyncio.Semaphore(LOOKUPS_AT_ONCE)

        async def one(aad_id: str) -> None:
            async with gate:
                try:
                    account = await conversations.get_member_by_id(conversation_id, aad_id)
                except Exception as err:  # not in the conversation (404), or Teams is away
                    log.debug("no roster entry for %s in %s: %r", aad_id, conversation_id, err)
                    self._miss(conversation_id, aad_id)
                    return
            user_id = account.id if isinstance(account.id, str) else ""
            if is_teams_user_id(user_id):
                self.people.learn(aad_id, user_id, account.name)
            else:
                self._miss(conversation_id, aad_id)

        tasks = [asyncio.create_task(one(aad_id)) for aad_id in wanted]
        _, late = await asyncio.wait(tasks, timeout=LOOKUP_SECONDS)
        for task in late:  # the card is drawn with whom we found; the rest next time
            task.cancel()

    def _miss(self, conversation_id: str, aad_id: str) -> None:
        if len(self._missing) >= MAX_MISSING:
            now = self._clock()
            self._missing = {k: v for k, v in self._missing.items() if v > now}
            while len(self._missing) >= MAX_MISSING:
                self._missing.pop(next(iter(self._missing)))
        self._missing[conversation_id, aad_id] = self._clock() + MISSING_TTL


def is_teams_user_id(value: str) -> bool:
    """A Teams user id as activities carry it in `from.id` ("29:…", "8:…"), which
    `refresh.userIds` lists; an AAD object id is a bare GUID."""
    return value.startswith(("29:", "8:"))
