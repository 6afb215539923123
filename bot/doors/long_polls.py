"""Long polls held on this worker (the API's `?wait=`, MCP calls waiting on an answer): a cap
per token and per worker, and each held poll one waiter on an event.

Why: 3,000 polls held by one token made `/healthz` take 2 s and another token's list 3.6 s.
Each poll re-read its request every 5 s (600 store reads a second for 3,000, queued before
everyone else's) and each wait was a task of its own (`asyncio.wait_for`). Now a held poll costs
an Event and a timer: it is woken by its request's settle (this worker's, or another's NOTIFY),
and one sweep a worker, every `recheck` seconds, reads the status of every request waited on
here in one query (a missed wake-up, a dropped LISTEN connection, costs that much) and ends the
polls whose client left (aiohttp tells a handler nothing when its client goes: `gone` looks).
Beyond `per_token` or `per_worker` polls held, a new one is refused (`TooManyPolls`: the API
answers 429 with Retry-After).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Collection
from types import TracebackType

from bot.failures import RepeatedFailures

log = logging.getLogger(__name__)

RECHECK = 5.0  # seconds between reads of the requests waited on (a missed wake-up costs this)
GONE_EVERY = 1.0  # seconds between looks at whether the polls' clients are still there
RETRY_AFTER = 5  # seconds a refused poll is told to wait
BATCH = 500  # request ids read a query
SettledAmong = Callable[[list[str]], Awaitable[Collection[str]]]  # which of these are not pending
Gone = Callable[[], bool]  # whether the poll's client left


class TooManyPolls(Exception):
    """A long poll over a cap: `str(err)` names the cap; retry after `retry_after` seconds."""

    def __init__(self, message: str, retry_after: int = RETRY_AFTER) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Hold:
    """One held poll: `with polls.hold(...) as held: await held.wait(seconds)`."""

    def __init__(self, polls: LongPolls, requester: str, request_id: str, gone: Gone | None):
        self.polls, self.requester, self.request_id, self.gone = polls, requester, request_id, gone
        self.woken = asyncio.Event()

    async def wait(self, seconds: float) -> None:
        """Until the request settles, the client leaves, or `seconds` pass."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self.woken.wait()

    def __enter__(self) -> Hold:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.polls._release(self)


class LongPolls:
    """The long polls of one worker (see the module's docstring)."""

    def __init__(
        self, settled: SettledAmong, *, per_token: int = 100, per_worker: int = 1000,
        recheck: float = RECHECK, gone_every: float = GONE_EVERY,
    ) -> None:  # fmt: skip
        self.settled = settled
        self.per_token, self.per_worker = per_token, per_worker
        self.recheck, self.gone_every = recheck, gone_every
        self._holds: dict[str, set[Hold]] = {}  # by request id
        self._tokens: Counter[str] = Counter()
        self._count = 0
        self._sweeper: asyncio.Task[None] | None = None
        self._failures = RepeatedFailures(log)

    def held(self, requester: str | None = None) -> int:
        """How many polls this worker holds (of `requester`'s, given one)."""
        return self._count if requester is None else self._tokens[requester]

    def hold(self, requester: str, request_id: str, gone: Gone | None = None) -> Hold:
        """A held poll on `request_id` (released on leaving its `with`); TooManyPolls over a
        cap."""
        if self._tokens[requester] >= self.per_token:
            raise TooManyPolls(f"this token holds {self.per_token} long polls already, the most "
                               "one token may hold at once: retry later")  # fmt: skip
        if self._count >= self.per_worker:
            raise TooManyPolls(f"this worker holds {self.per_worker} long polls already, the "
                               "most it holds at once: retry later")  # fmt: skip
        held = Hold(self, requester, request_id, gone)
        self._holds.setdefault(request_id, set()).add(held)
        self._tokens[requester] += 1
        self._count += 1
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = asyncio.create_task(self._sweep(), name="hitl-long-polls")
        return held

    def wake(self, request_id: str) -> None:
        """The request settled: its polls here return."""
        for held in self._holds.get(request_id, ()):
            held.woken.set()

    async def close(self) -> None:
        sweeper, self._sweeper = self._sweeper, None
        if sweeper is not None:
            sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeper

    def _release(self, held: Hold) -> None:
        holds = self._holds.get(held.request_id, set())
        holds.discard(held)
        if not holds:
            self._holds.pop(held.request_id, None)
        self._tokens[held.requester] -= 1
        if self._tokens[held.requester] <= 0:
            del self._tokens[held.requester]
        self._count -= 1

    async def _sweep(self) -> None:
        """While polls are held: end those whose client left, and wake those whose request
        settled unheard (one read for all of them)."""
        since_read = 0.0
        while self._holds:
            await asyncio.sleep(self.gone_every)
            for holds in list(self._holds.values()):
                for held in holds:
                    if held.gone is not None and held.gone():
                        held.woken.set()
            since_read += self.gone_every
            if since_read >= self.recheck:
                since_read = 0.0
                await self._read_settled()

    async def _read_settled(self) -> None:
        waited = list(self._holds)
        try:
            for start in range(0, len(waited), BATCH):
                for request_id in await self.settled(waited[start : start + BATCH]):
                    self.wake(request_id)
            self._failures.recovered("checking long-polled requests")
        except Exception as err:  # the store: the next sweep tries again
            self._failures.failed("checking long-polled requests", err)
