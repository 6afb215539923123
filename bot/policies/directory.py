"""Who is in a group (docs/policies.md): policies name approvers as principals, and a click is
checked against the group's members at click time.

A group is named as its principal is written, its prefix saying which source reads it
(`slack:S0OPSTEAM` from Slack's user groups, `entra:<group id>` from Microsoft Graph); a user
is named as the surfaces report clickers (Slack `U…`, Teams' AAD object id). Members are
cached for `ttl` seconds: a burst of clicks reads a group once. A group that cannot be read is
never taken as empty: `is_member` raises GroupUnreadable, and the caller denies and says so.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

__all__ = ["Directory", "GroupSource", "GroupUnreadable"]

log = logging.getLogger(__name__)

TTL = 60.0  # seconds: a person removed from a group may still answer for this long
ERROR_TTL = 5.0  # seconds: an outage is not asked again per click, yet a fix is seen soon


class GroupUnreadable(Exception):
    """A group whose members cannot be read now; `str(err)` is one line naming it and why."""

    def __init__(self, group: str, why: str) -> None:
        # One line: `why` may quote a service's multi-line message.
        self.group, self.why = group, " ".join(why.split())
        super().__init__(f"the members of {group} cannot be read: {self.why}")


class GroupSource(Protocol):
    """Reads one platform's groups, given as their principals are written (prefix included)."""

    async def members(self, group: str) -> frozenset[str]:
        """Every member's user id; GroupUnreadable saying why when the group cannot be read."""
        ...


@dataclass(frozen=True, slots=True)
class _Entry:
    until: float  # on the directory's clock
    members: frozenset[str] | None  # None: unreadable, for `error`
    error: GroupUnreadable | None = None

    def read(self) -> frozenset[str]:
        if self.members is None:
            assert self.error is not None
            # A new exception each time: re-raising one instance would grow its traceback.
            raise GroupUnreadable(self.error.group, self.error.why)
        return self.members


class Directory:
    """The sources by prefix (`{"slack:": SlackGroups(…), "entra:": EntraGroups(…)}`), with
    the members cached for `ttl` seconds and a failed read remembered for `error_ttl`."""

    def __init__(
        self,
        sources: Mapping[str, GroupSource],
        *,
        ttl: float = TTL,
        error_ttl: float = ERROR_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._sources = dict(sources)
        self._ttl, self._error_ttl, self._clock = ttl, min(error_ttl, ttl), clock
        self._cache: dict[str, _Entry] = {}
        self._reading: dict[str, asyncio.Task[frozenset[str]]] = {}

    def add(self, prefix: str, source: GroupSource) -> None:
        """Read the groups written `prefix…` with `source` (a surface adds its own once it has
        its client)."""
        self._sources[prefix] = source

    def reads(self, group: str) -> bool:
        """Whether a source reads `group`'s prefix (for checking a policy when it is loaded)."""
        return self._source(group) is not None

    async def is_member(self, user_id: str, group: str) -> bool:
        """Whether `user_id` is in `group` now (as of at most `ttl` seconds ago); GroupUnreadable
        when the group cannot be read (the caller denies, and says so)."""
        return user_id in await self.members(group)

    async def members(self, group: str) -> frozenset[str]:
        """`group`'s members, cached; concurrent lookups of one group share one read."""
        entry = self._cache.get(group)
        if entry is not None and self._clock() < entry.until:
            return entry.read()
        task = self._reading.get(group)
        if task is None:
            source = self._source(group)
            if source is None:
                known = ", ".join(sorted(self._sources)) or "none"
                raise GroupUnreadable(group, f"no source reads this prefix (known: {known})")
            task = asyncio.create_task(self._read(source, group), name=f"members of {group}")
            self._reading[group] = task
            task.add_done_callback(lambda done: self._done(group, done))
        # Shielded: one caller cancelled (its click abandoned) must not cancel the others' read.
        return await asyncio.shield(task)

    def _source(self, group: str) -> GroupSource | None:
        for prefix, source in self._sources.items():
            if group.startswith(prefix):
                return source
        return None

    async def _read(self, source: GroupSource, group: str) -> frozenset[str]:
        try:
            members = frozenset(await source.members(group))
        except GroupUnreadable as err:
            self._remember(group, None, err)
            raise
        except Exception as err:  # a source's own bug: still a deny, never an empty group
            log.exception("reading the members of %s failed", group)
            unreadable = GroupUnreadable(group, f"its source failed ({type(err).__name__})")
            self._remember(group, None, unreadable)
            raise unreadable from None
        self._remember(group, members, None)
        return members

    def _done(self, group: str, task: asyncio.Task[frozenset[str]]) -> None:
        if self._reading.get(group) is task:
            del self._reading[group]
        if not task.cancelled():
            # Retrieved here too, so a read whose callers all went away is never reported as
            # an exception nobody retrieved.
            task.exception()

    def _remember(
        self, group: str, members: frozenset[str] | None, error: GroupUnreadable | None
    ) -> None:
        ttl = self._ttl if error is None else self._error_ttl
        self._cache[group] = _Entry(self._clock() + ttl, members, error)
