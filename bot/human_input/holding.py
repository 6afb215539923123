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

This module holds requests and beats (`Holding`); worker.py is the worker's hold as the other
parts read it, proposals.py the settles handed over, settler.py the holder applying them.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

from bot.failures import RepeatedFailures
from bot.human_input.ledger import FOREIGN, HELD, Entry, Ledger, disarm
from bot.human_input.ports import HandlerStore
from bot.human_input.settler import Settler
from bot.human_input.tasks import Tasks
from bot.human_input.worker import Worker
from bot.records import RequestStatus, StoreClosedError, StoreUnavailableError

log = logging.getLogger("bot.human_input")


class Holding:
    """Takes and lets go of requests' holds, and beats while this worker holds any."""

    def __init__(self, worker: Worker, ledger: Ledger, settler: Settler, tasks: Tasks) -> None:
        self._worker = worker
        self._ledger = ledger
        self._settler = settler
        self._tasks = tasks
        self._beater: asyncio.Task[None] | None = None
        # The heartbeat fails every beat while the database cannot be written: one line.
        self._failures = RepeatedFailures(log)

    def hold(self, entry: Entry) -> None:
        """This worker holds the request (it created it, or took it): it decides its settles."""
        self._worker.mark(entry, held=True)
        if self._beater is None:
            self._beater = asyncio.ensure_future(self._beat_forever())

    async def take(self, entry: Entry) -> None:
        """Hold a request loaded from the store, unless a live worker holds it."""
        store = self._store()
        if not await self.ensure_alive():
            return
        taken = await store.hold(entry.request.id, self._worker.id)
        if taken and entry.request.status is RequestStatus.PENDING and entry.flags & FOREIGN:
            self.hold(entry)

    def release(self, entry: Entry) -> None:
        """Forget a request without settling it (a shutdown): its row stays pending, and unheld,
        for the worker that resumes the run."""
        disarm(entry)
        request_id = entry.request.id
        self._ledger.active.pop(request_id, None)
        store = self._worker.store
        if entry.flags & HELD and store is not None:
            self._worker.mark(entry, held=False)
            self._tasks.spawn(store.unhold(request_id, self._worker.id))

    def stop(self) -> None:
        if self._beater is not None:
            self._beater.cancel()

    async def ensure_alive(self) -> bool:
        """Make sure the other workers see this worker alive before it holds a request (beat
        now unless a recent beat covers it). False if the heartbeat could not be written."""
        worker = self._worker
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
        store, worker = self._store(), self._worker
        start = asyncio.get_running_loop().time()
        until = datetime.now(UTC) + timedelta(seconds=worker.hold_seconds)
        held = await store.beat(worker.id, until)
        worker.alive_until = max(worker.alive_until, start + worker.hold_seconds / 2)
        for request_id in held:  # requests held here with proposals waiting
            entry = self._ledger.active.get(request_id)
            if entry is not None and entry.flags & HELD:
                self._tasks.spawn(self._settler.follow(request_id))
            elif entry is None or entry.request.status is not RequestStatus.PENDING:
                # Held here, yet not decided here any more: give it back to the proposers.
                self._tasks.spawn(store.unhold(request_id, worker.id))

    async def _beat_forever(self) -> None:
        """Beat every `hold_seconds / 4` while this worker holds a pending request."""
        try:
            while True:
                await asyncio.sleep(self._worker.hold_seconds / 4)
                if self._worker.holding <= 0 or self._worker.store is None:
                    return
                try:
                    await self._beat()
                    self._failures.recovered("the heartbeat")
                except StoreClosedError:
                    return
                except StoreUnavailableError as err:
                    self._failures.failed("the heartbeat", err)
                except Exception:
                    log.warning("heartbeat of %s failed", self._worker.id, exc_info=True)
        finally:
            self._beater = None

    def _store(self) -> HandlerStore:
        store = self._worker.store
        assert store is not None, "holds are a store's"
        return store
