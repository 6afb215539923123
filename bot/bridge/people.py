"""People by name: a surface knows its people's display names (Slack's `users.info`, the names
Teams activities carry), and a page that shows people asks for them here.

`PeopleDirectory` is one surface's side (adapters/surfaces/slack/people.py,
adapters/surfaces/teams/people.py);
`PeopleNames` asks the directory that owns each id, and caches what it hears, bounded in size
and for a short while (a renamed person shows renamed soon). A page never waits long: lookups
still running after `wait` seconds go on, and fill the cache for the next page, while this
one shows the ids it has no name for. What never waits at all (a status line, told its turn's
steps synchronously) reads `known` and starts lookups with `ask`, then shows the name once
its lookup is in.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

__all__ = ["PeopleDirectory", "PeopleNames"]

log = logging.getLogger(__name__)

TTL = 300.0  # seconds a name is kept: a renamed person shows renamed within five minutes
MISS_TTL = 30.0  # seconds an unknown id (or a failed lookup) is not asked again
SIZE = 2_000  # names kept at most: the stalest go first
WAIT = 0.5  # seconds a page waits for the names it has not cached
AT_ONCE = 8  # lookups running at once (a page of strangers does not burst a surface's limits)
PER_CALL = 100  # ids looked up per call at most: a page shows fewer


class PeopleDirectory(Protocol):
    """One surface's people, by the ids its actors carry (Slack `U…`, Teams' AAD object id)."""

    def owns(self, person_id: str) -> bool:
        """Whether `person_id` is one of this surface's ids (only then is it asked)."""
        ...

    async def name(self, person_id: str) -> str | None:
        """The person's display name; None if the surface knows nobody by that id."""
        ...


class PeopleNames:
    """Display names from several directories, cached; see the module's docstring."""

    def __init__(
        self,
        directories: Sequence[PeopleDirectory],
        *,
        wait: float = WAIT,
        ttl: float = TTL,
        size: int = SIZE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.directories = tuple(directories)
        self.wait = wait  # seconds a page waits for names not cached (public: tests set it)
        self._ttl, self._size, self._clock = ttl, size, clock
        self._known: OrderedDict[str, tuple[str | None, float]] = OrderedDict()
        self._asking: dict[str, asyncio.Task[None]] = {}
        self._gate = asyncio.Semaphore(AT_ONCE)

    async def names(self, ids: Iterable[str | None]) -> dict[str, str]:
        """The names known of `ids` (after waiting up to `wait` for those not cached)."""
        wanted = list(dict.fromkeys(i for i in ids if i))[:PER_CALL]
        pending = self.ask(wanted)
        if pending:
            await asyncio.wait(pending, timeout=self.wait)
        return {i: name for i in wanted if (name := self._cached(i)) is not None}

    def add(self, directory: PeopleDirectory) -> None:
        """Ask `directory` too (a surface served besides the first): one cache for all."""
        self.directories = (*self.directories, directory)

    def known(self, person_id: str) -> str | None:
        """The name cached for `person_id`, if a fresh one is: never waits, never asks."""
        return self._cached(person_id)

    def ask(self, ids: Iterable[str]) -> list[asyncio.Task[None]]:
        """Start the lookups of the names of `ids` not cached; the lookups under way (awaited,
        their names are `known` after)."""
        wanted = list(dict.fromkeys(i for i in ids if i))[:PER_CALL]
        return [task for i in wanted if (task := self._ask(i)) is not None]

    def _cached(self, person_id: str) -> str | None:
        found = self._known.get(person_id)
        return found[0] if found is not None and found[1] > self._clock() else None

    def _ask(self, person_id: str) -> asyncio.Task[None] | None:
        """The lookup of `person_id` under way (started if it is needed); None if cached."""
        found = self._known.get(person_id)
        if found is not None and found[1] > self._clock():
            return None
        if (task := self._asking.get(person_id)) is not None:
            return task
        directory = next((d for d in self.directories if d.owns(person_id)), None)
        if directory is None:
            return None
        task = asyncio.create_task(self._look_up(directory, person_id))
        self._asking[person_id] = task
        return task

    async def _look_up(self, directory: PeopleDirectory, person_id: str) -> None:
        try:
            async with self._gate:
                name = await directory.name(person_id)
        except Exception as err:  # a page shows the id; the next one asks again soon
            log.warning("the name of %s could not be read: %s", person_id, type(err).__name__)
            name = None
        finally:
            self._asking.pop(person_id, None)
        self._keep(person_id, name)

    def _keep(self, person_id: str, name: str | None) -> None:
        life = self._ttl if name else MISS_TTL
        self._known[person_id] = (name or None, self._clock() + life)
        self._known.move_to_end(person_id)
        while len(self._known) > self._size:
            self._known.popitem(last=False)
