"""Several workers, one decision: the worker holding a request decides every settle of it.

`resolve()` is synchronous: it must say True or False before anything is written. It may only
say True if nothing written later can contradict it, so with several workers sharing a
database the rule "a resolve() that returned True is the answer the waiter gets" needs one
arbiter per request, and that arbiter is the worker holding it in memory:

- The worker that creates a request holds it (its row's `held_by`); one that loads a request
  in wait() takes the hold if no live worker has it (a dead or departed creator). A worker is
  alive while its heartbeat row (`holders`) is fresh: it beats every `hold_seconds / 4` while
  it holds a pending request.
- The holder settles in memory first (the claim every settle on the event loop races for, so
  the first one wins) and then writes the compare-and-set, which no other worker can win
  while the holder is alive: the conditional UPDATE also requires the row to be unheld, held
  by the writer, or held by a worker whose heartbeat lapsed.
- Any other worker's settle (`answer()`, `decline()`, a timer, a cut wait) is a proposal:
  written beside the request and NOTIFYed; the holder applies it through that same claim,
  so it wins only if nothing came first, and records its id on the row. The proposer reads
  the row back: its call returns True only if the row settled with its proposal.
- A holder that stops beating (dead, or cut from the database) stops deciding: its own
  resolve() returns False once its last heartbeat is `hold_seconds / 2` old, and the other
  workers settle directly once it is `hold_seconds` old. So a dead holder delays answers by
  at most `hold_seconds`, and the rule holds as long as a worker's clock is within
  `hold_seconds / 2` of the others' and a settle's write lands within that margin too.

Proposals reach the holder through PostgreSQL NOTIFY (the bridge calls `follow()`) and, where
there is no NOTIFY (SQLite), through the heartbeat, which returns the held requests that have
proposals waiting.

This module is this worker as the others see it (`Worker`: its name, its store, how many
requests it holds, until when it is surely alive), the settles it hands over (`Proposals`), and
its holds and heartbeat (`Holding`); settler.py is the holder applying what it is handed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime, timedelta

from bot.failures import RepeatedFailures
from bot.human_input.carried import TraceCarrier, proposal_id
from bot.human_input.ledger import FOREIGN, HELD, Entry, Ledger, disarm
from bot.human_input.observers import Tasks
from bot.human_input.ports import HandlerStore
from bot.records import (
    Decision,
    RequestStatus,
    Settlement,
    StoreClosedError,
    StoreUnavailableError,
)

log = logging.getLogger("bot.human_input")


def worker_name() -> str:
    """Unique per process: host, pid and a random part (pids are reused after restarts)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


# How long other workers wait for a silent holder before settling its requests themselves.
HOLD_SECONDS = 4.0
# How often a wait on a request another worker holds re-reads its row: the settle's NOTIFY
# wakes it at once, and this bounds what a lost one (a dropped listener; SQLite has none) costs.
RECHECK_SECONDS = 5.0
RECHECKING = "re-reading the requests other workers hold"


class Worker:
    """One worker's identity and hold: what every part settling or holding requests reads."""

    def __init__(
        self,
        worker_id: str | None,
        hold_seconds: float,
        store: HandlerStore | None,
        recheck_seconds: float = RECHECK_SECONDS,
    ) -> None:
        self.id = worker_id or worker_name()
        self.hold_seconds = hold_seconds
        self.recheck_seconds = recheck_seconds
        self.carrier: TraceCarrier | None = None  # the tracing's, where it is on (carried.py)
        self.store = store
        self.holding = 0  # pending requests held here: the heartbeat runs while there are any
        self.alive_until = 0.0

    def attach(self, store: HandlerStore) -> None:
        """A store for a worker made without one (a Bridge adopting the handler): requests
        made before it stay in memory only, and settle there."""
        self.store = store

    def mark(self, entry: Entry, *, held: bool) -> None:
        """Mark a pending request as held here (this worker decides it) or by another."""
        if held and not entry.flags & HELD:
            self.holding += 1
        elif not held and entry.flags & HELD:
            self.holding -= 1
        flags = entry.flags & ~(HELD | FOREIGN)
        entry.flags = flags | (HELD if held else FOREIGN)

    def vouches(self) -> bool:
        """Whether the other workers surely see this one alive now (a recent heartbeat)."""
        return asyncio.get_running_loop().time() < self.alive_until

    def proposal_id(self) -> str:
        """A new proposal's id, carrying the current trace where tracing is on."""
        return proposal_id(self.carrier)

    def settlement(
        self,
        request_id: str,
        status: RequestStatus,
        result: str | None = None,
        reason: str | None = None,
        by: str | None = None,
        at: datetime | None = None,
        proposal: str | None = None,
        by_detail: Mapping[str, str] | None = None,
    ) -> Settlement:
        """The settle this worker asks for (now, unless `at`)."""
        return Settlement(
            request_id, status, at or datetime.now(UTC), result, reason, by,
            self.id, proposal, by_detail,
        )  # fmt: skip


# -- settles handed over ---------------------------------------------------------------------------
# Settles of requests another worker holds: handed to the holder as proposals.
#
# A proposal is written beside the request and NOTIFYed; the holder applies it through the same
# claim as its own settles, so it wins only if nothing came first (bot/human_input/holding.py).
# The proposer waits for the decision, woken by `heard` (a NOTIFY) or polling.

FIRST_POLL_SECONDS = 0.01
MAX_POLL_SECONDS = 0.25


class Proposals:
    """This worker's proposals to other workers' requests, and the proposers waiting here."""

    def __init__(self, worker: Worker) -> None:
        self._worker = worker
        self._listeners: dict[str, list[asyncio.Future[None]]] = {}

    async def offer(self, proposal: Settlement) -> tuple[bool, bool]:
        """Settle a request this worker does not hold: (won, and whether it was written here
        rather than by the holder, which then told the observers)."""
        store = self._store()
        direct = await store.propose(proposal)
        if direct is not None:
            return direct, direct
        delay = FIRST_POLL_SECONDS
        while True:
            await self._hear(proposal.request_id, delay)
            decision = await store.decision(proposal)
            if decision is Decision.ACCEPTED:
                return True, False
            if decision is Decision.REFUSED:
                return False, False
            if decision is Decision.ORPHANED:  # its holder is gone: settle it ourselves
                if await store.settle(proposal):
                    return True, True
                continue
            delay = min(delay * 2, MAX_POLL_SECONDS)

    def heard(self, request_id: str) -> None:
        """Something happened to the request in another process: wake its proposers here."""
        for heard in self._listeners.pop(request_id, ()):
            if not heard.done():
                heard.set_result(None)

    async def _hear(self, request_id: str, seconds: float) -> None:
        """Sleep until `heard(request_id)` or `seconds` pass."""
        heard: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        listeners = self._listeners.setdefault(request_id, [])
        listeners.append(heard)
        try:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(seconds):
                    await heard
        finally:
            if heard in listeners:
                listeners.remove(heard)
            if not listeners and self._listeners.get(request_id) is listeners:
                del self._listeners[request_id]

    def _store(self) -> HandlerStore:
        store = self._worker.store
        assert store is not None, "proposals are a store's"
        return store


class Holding:
    """Takes and lets go of requests' holds, and beats while this worker holds any."""

    def __init__(
        self,
        worker: Worker,
        ledger: Ledger,
        follow: Callable[[str], Awaitable[None]],
        tasks: Tasks,
    ) -> None:
        """`follow(request_id)`: the holder applying the proposals waiting on a request."""
        self.worker = worker
        self._ledger = ledger
        self._follow = follow
        self._tasks = tasks
        self._beater: asyncio.Task[None] | None = None
        self._rechecker: asyncio.Task[None] | None = None
        # The heartbeat fails every beat while the database cannot be written: one line.
        self._failures = RepeatedFailures(log)

    def hold(self, entry: Entry) -> None:
        """This worker holds the request (it created it, or took it): it decides its settles."""
        self.worker.mark(entry, held=True)
        if self._beater is None:
            self._beater = asyncio.ensure_future(self._beat_forever())

    async def take(self, entry: Entry) -> None:
        """Hold a request loaded from the store, unless a live worker holds it."""
        store = self._store()
        if await self.ensure_alive():
            taken = await store.hold(entry.request.id, self.worker.id)
            if taken and entry.request.status is RequestStatus.PENDING and entry.flags & FOREIGN:
                self.hold(entry)
        if entry.flags & FOREIGN and self._rechecker is None:  # held elsewhere: re-read it
            self._rechecker = asyncio.ensure_future(self._recheck_forever())

    def release(self, entry: Entry) -> None:
        """Forget a request without settling it (a shutdown): its row stays pending, and unheld,
        for the worker that resumes the run."""
        disarm(entry)
        request_id = entry.request.id
        self._ledger.active.pop(request_id, None)
        store = self.worker.store
        if entry.flags & HELD and store is not None:
            self.worker.mark(entry, held=False)
            self._tasks.spawn(store.unhold(request_id, self.worker.id))

    def stop(self) -> None:
        for task in (self._beater, self._rechecker):
            if task is not None:
                task.cancel()

    async def ensure_alive(self) -> bool:
        """Make sure the other workers see this worker alive before it holds a request (beat
        now unless a recent beat covers it). False if the heartbeat could not be written."""
        worker = self.worker
        if asyncio.get_running_loop().time() < worker.alive_until - worker.hold_seconds / 4:
            return True
        try:
            await self._beat()
        except StoreUnavailableError as err:
            self._failures.failed("the heartbeat", err)
            return False
        except Exception:
            log.warning("heartbeat of %s failed", worker.id, exc_info=True)
            return False
        return True

    async def _beat(self) -> None:
        store, worker = self._store(), self.worker
        start = asyncio.get_running_loop().time()
        until = datetime.now(UTC) + timedelta(seconds=worker.hold_seconds)
        held = await store.beat(worker.id, until)
        worker.alive_until = max(worker.alive_until, start + worker.hold_seconds / 2)
        for request_id in held:  # requests held here with proposals waiting
            entry = self._ledger.active.get(request_id)
            if entry is not None and entry.flags & HELD:
                self._tasks.spawn(self._follow(request_id))
            elif entry is None or entry.request.status is not RequestStatus.PENDING:
                # Held here, yet not decided here any more: give it back to the proposers.
                self._tasks.spawn(store.unhold(request_id, worker.id))

    async def _beat_forever(self) -> None:
        """Beat every `hold_seconds / 4` while this worker holds a pending request."""
        try:
            while True:
                await asyncio.sleep(self.worker.hold_seconds / 4)
                if self.worker.holding <= 0 or self.worker.store is None:
                    return
                try:
                    await self._beat()
                    self._failures.recovered("the heartbeat")
                except StoreClosedError:
                    return
                except StoreUnavailableError as err:
                    self._failures.failed("the heartbeat", err)
                except Exception:
                    log.warning("heartbeat of %s failed", self.worker.id, exc_info=True)
        finally:
            self._beater = None

    async def _recheck_forever(self) -> None:
        """Every `recheck_seconds`, while requests held elsewhere are open here, take up the
        outcome of those settled meanwhile (what their NOTIFY would have done)."""
        try:
            while True:
                await asyncio.sleep(self.worker.recheck_seconds)
                foreign = [
                    request_id
                    for request_id, entry in self._ledger.active.items()
                    if entry.flags & FOREIGN and entry.request.status is RequestStatus.PENDING
                ]
                if not foreign or self.worker.store is None:
                    return
                try:
                    for request_id in foreign:
                        await self._follow(request_id)
                    self._failures.recovered(RECHECKING)
                except StoreClosedError:
                    return
                except StoreUnavailableError as err:  # the next round tries again
                    self._failures.failed(RECHECKING, err)
                except Exception:
                    log.warning("%s failed", RECHECKING, exc_info=True)
        finally:
            if self._rechecker is asyncio.current_task():
                self._rechecker = None

    def _store(self) -> HandlerStore:
        store = self.worker.store
        assert store is not None, "holds are a store's"
        return store
