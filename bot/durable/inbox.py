"""The inbox: what a surface acks is written down first, applied once, and never twice.

A surface that answers its platform before handling an interaction (Slack: the ack of a click
goes back at once, the click is handled after) writes the interaction down before that answer:
one small row (`InboxRows.receive`; those arriving during a write go together in the next),
keyed by the signed request, so that

- a worker that dies between the ack and the handling loses nothing: the row is still
  unapplied, and a sweep (at start-up, then every `sweep_every` seconds, on every worker)
  applies it. Rows younger than `grace` are left alone: the worker that received them is
  applying them now. Each row is claimed before it is applied (`mark_applied`, a
  compare-and-set), so one worker applies it;
- rows a worker applied are marked so `mark_delay` seconds later, many in one write (a write
  per click would cost as much as the row itself). A worker that dies in between leaves a few
  applied rows unmarked: they are applied again, which the router makes harmless (a settled
  request is refused; only a refusal's audit line is written twice);
- a replay of the same signed request finds its key taken: `receive` says so, and the surface
  acks it and does nothing more.

Rows applied more than `retention` ago are deleted (at start-up and every `prune_every`): a
replay is refused by its signature's age before then.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from bot.failures import RepeatedFailures, first_line
from bot.records import InboxEntry, StoreClosedError, StoreUnavailableError

log = logging.getLogger(__name__)

Apply = Callable[[dict[str, Any]], Awaitable[None]]
"""Applies an interaction left over by a worker that did not (the surface parses it again)."""

GRACE = 5.0  # seconds: a younger unapplied row is being applied by the worker that received it
SWEEP_EVERY = 2.0  # seconds between sweeps for left-over rows (one index range read)
MARK_DELAY = 0.25  # seconds from a row's application to its mark (with the others' meanwhile)
PRUNE_EVERY = 300.0  # seconds between deletions of applied rows
# Slack accepts a signed request within 5 minutes either side of its timestamp: a replay may
# arrive up to 10 minutes after the first delivery. Its row must outlive that.
RETENTION = timedelta(minutes=15)
BATCH = 100  # rows read per query of a sweep


class InboxRows(Protocol):
    """The store's port for the inbox (the `inbox` table): interactions written before the ack."""

    async def receive(
        self, surface: str, interactions: Sequence[tuple[str, dict[str, Any] | None]]
    ) -> list[bool]:
        """Write down interactions (key, payload) before they are acked, in one transaction;
        for each, False if its key was received before (a replay: ignore it). A payload is
        what to apply if this worker does not live to; None for an interaction handled
        before its ack (only its key is kept)."""
        ...

    async def mark_applied(self, keys: Sequence[str]) -> list[str]:
        """The interactions `keys` were applied; returns those this call marked (the others
        were marked before, or are unknown): the claim of whoever applies a left-over one."""
        ...

    async def unapplied(
        self, surface: str, received_before: datetime, limit: int = 100
    ) -> list[InboxEntry]:
        """Interactions of `surface` received before `received_before` and never applied,
        oldest first."""
        ...

    async def prune_inbox(self, applied_before: datetime) -> int:
        """Forget interactions applied before `applied_before`; returns how many."""
        ...


class Inbox:
    """One surface's interactions, written before they are acked (see the module docstring)."""

    def __init__(
        self,
        store: InboxRows,
        surface: str,
        apply: Apply,
        *,
        grace: float = GRACE,
        sweep_every: float = SWEEP_EVERY,
        mark_delay: float = MARK_DELAY,
        prune_every: float = PRUNE_EVERY,
        retention: timedelta = RETENTION,
    ) -> None:
        self.store = store
        self.surface = surface
        self._apply = apply
        self.grace = grace
        self.sweep_every = sweep_every
        self.mark_delay = mark_delay
        self.prune_every = prune_every
        self.retention = retention
        self._arrivals: list[tuple[str, dict[str, Any] | None, asyncio.Future[bool]]] = []
        self._writing: asyncio.Task[None] | None = None
        self._in_flight: set[str] = set()  # received here and being applied here: not swept
        self._unmarked: set[str] = set()  # applied here, not yet marked: not swept either
        self._marking: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._failures = RepeatedFailures(log)

    async def receive(self, key: str, payload: dict[str, Any] | None) -> bool:
        """Write the interaction down (before it is acked); False for a replay (`key` was
        received before): ack it and do nothing else. `payload` is what `apply` gets if this
        worker does not live to apply it; None for an interaction handled before its ack
        (only its key is kept, to recognise a replay). Raises what the store raises (the
        interaction must not be acked then).

        Interactions arriving while a write is under way go together in the next one (one
        transaction for many: under load, a write per interaction would queue up)."""
        waiter: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._arrivals.append((key, payload, waiter))
        if self._writing is None or self._writing.done():
            self._writing = asyncio.create_task(self._write_arrivals(), name="hitl-inbox")
        if not await waiter:
            return False
        if payload is not None:
            self._in_flight.add(key)
        return True

    async def _write_arrivals(self) -> None:
        while self._arrivals:
            batch, self._arrivals = self._arrivals, []
            try:
                # A key twice in one batch (a replay racing its original) is new once.
                new = await self.store.receive(self.surface, [(k, p) for k, p, _ in batch])
            except asyncio.CancelledError:
                for *_, waiter in batch:
                    waiter.cancel()
                raise
            except Exception as err:
                for *_, waiter in batch:
                    if not waiter.done():
                        waiter.set_exception(err)
                continue
            for (*_, waiter), written in zip(batch, new, strict=True):
                if not waiter.done():
                    waiter.set_result(written)

    def applied(self, key: str) -> None:
        """The interaction `key` went through the router: its outcome is in the database. It
        is marked so in a moment, with the others applied meanwhile."""
        self._in_flight.discard(key)
        self._unmarked.add(key)
        if self._marking is None or self._marking.done():
            self._marking = asyncio.create_task(self._mark_soon(), name="hitl-inbox-marks")

    async def _mark_soon(self) -> None:
        while self._unmarked:
            await asyncio.sleep(self.mark_delay)
            await self.mark()

    async def mark(self) -> None:
        """Mark what was applied here and not yet marked. A failure is a line: those rows are
        applied again by a sweep, which changes nothing."""
        keys = list(self._unmarked)
        try:
            await self.store.mark_applied(keys)
            self._failures.recovered("marking interactions applied")
        except (StoreUnavailableError, StoreClosedError) as err:
            self._failures.failed("marking interactions applied", err)
        except Exception:
            log.exception("marking %s interactions applied failed", self.surface)
        finally:
            self._unmarked.difference_update(keys)

    def abandoned(self, key: str) -> None:
        """Applying `key` here failed: a sweep (this worker's or another's) tries again."""
        self._in_flight.discard(key)

    # -- left-over rows ---------------------------------------------------------------------

    async def sweep(self) -> int:
        """Apply the rows received more than `grace` seconds ago and never applied, each
        claimed first; returns how many this worker applied."""
        before = datetime.now(UTC) - timedelta(seconds=self.grace)
        applied = 0
        while True:
            entries = await self.store.unapplied(self.surface, before, BATCH)
            claimed = 0
            for entry in entries:
                if entry.key in self._in_flight or entry.key in self._unmarked:
                    continue
                if not await self.store.mark_applied([entry.key]):
                    continue
                claimed += 1
                if await self._apply_left_over(entry):
                    applied += 1
            if len(entries) < BATCH or not claimed:
                return applied

    async def _apply_left_over(self, entry: InboxEntry) -> bool:
        age = (datetime.now(UTC) - entry.received_at).total_seconds()
        try:
            await self._apply(entry.payload)
        except (StoreUnavailableError, StoreClosedError) as err:
            # Claimed, not applied: the person's click is lost after all. Said once per click.
            log.error("%s: an interaction received %.0fs ago could not be applied: %s",
                      self.surface, age, first_line(err))  # fmt: skip
            return False
        except Exception:
            log.exception("%s: applying an interaction received %.0fs ago failed",
                          self.surface, age)  # fmt: skip
            return False
        log.warning("%s: applied an interaction received %.0fs ago and left unapplied (its "
                    "worker stopped before handling it)", self.surface, age)  # fmt: skip
        return True

    async def prune(self) -> int:
        """Delete the rows applied more than `retention` ago; returns how many."""
        return await self.store.prune_inbox(datetime.now(UTC) - self.retention)

    # -- lifetime ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Prune and sweep once (what an earlier run of this worker acked and left is applied
        before it serves), then keep sweeping in the background."""
        if self._task is not None:
            return
        await self._round(prune=True)
        self._task = asyncio.create_task(self._run(), name=f"hitl-inbox-{self.surface}")

    async def close(self) -> None:
        """Stop sweeping (a sweep in progress finishes first: its claims are applied), and
        mark what was applied here now."""
        self._stopping.set()
        if self._writing is not None:
            await asyncio.gather(self._writing, return_exceptions=True)
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        marking, self._marking = self._marking, None
        if marking is not None and not marking.done():
            marking.cancel()
            await asyncio.gather(marking, return_exceptions=True)
        if self._unmarked:
            await self.mark()

    async def _run(self) -> None:
        pruned_at = time.monotonic()
        while not self._stopping.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), self.sweep_every)
            if self._stopping.is_set():
                return
            prune = time.monotonic() - pruned_at >= self.prune_every
            if prune:
                pruned_at = time.monotonic()
            await self._round(prune=prune)

    async def _round(self, *, prune: bool) -> None:
        try:
            if prune:
                await self.prune()
            await self.sweep()
            self._failures.recovered("the inbox sweep")
        except (StoreUnavailableError, StoreClosedError) as err:
            self._failures.failed("the inbox sweep", err)
        except Exception:
            log.exception("the %s inbox sweep failed", self.surface)
