"""Which worker runs the agent of each room: a lease in the store, renewed while it lives.

A turn takes its room's run (a compare-and-set), and gives it back when it ends. A worker that
dies stops renewing; once its lease lapses another worker adopts the run and resumes it from
the saved transcript. A worker shutting down lets its leases lapse at once, so adoption is
immediate; it does not settle its requests, which stay pending for whoever takes over.

A person may ask to stop a run from any worker: the one they reach writes the ask on the run's
row (`ask_stop`), and the run's owner reads it with every renewal and tells its listeners
(`on_stop_asked`), which cut the turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol

from bot.failures import RepeatedFailures
from bot.human_input.holding import worker_name
from bot.records import RunRecord, StoreUnavailableError

log = logging.getLogger(__name__)

LEASE_SECONDS = 10.0
BUSY_POLL_SECONDS = 0.25


class LeaseRows(Protocol):
    """The store's port for runs' leases (the `runs` table): one row per room's run."""

    async def claim_run(
        self, room_id: str, channel_id: str, owner: str, actor_id: str | None, lease_until: datetime
    ) -> bool:
        """Take the room's run if it is idle, ours, or its lease lapsed; True if we hold it."""
        ...

    async def renew_runs(self, owner: str, lease_until: datetime) -> int:
        """Extend every lease `owner` holds; returns how many."""
        ...

    async def finish_run(self, room_id: str, channel_id: str, owner: str) -> None:
        """The run is over: the room is idle again."""
        ...

    async def release_runs(self, owner: str, now: datetime) -> int:
        """Let every run of `owner` lapse now (a graceful shutdown): others adopt them."""
        ...

    async def seize_run(
        self, room_id: str, channel_id: str, owner: str, lease_until: datetime
    ) -> bool:
        """Take the room's open run from whoever holds it, lease lapsed or not; True if there
        was one. Only for a process that is its rooms' one worker (the console demo): a
        holder still alive would go on running the turn beside the new owner."""
        ...

    async def orphaned_runs(self, now: datetime, limit: int = 100) -> list[RunRecord]:
        """Active runs whose lease lapsed: their worker is gone."""
        ...

    async def active_run(self, room_id: str, channel_id: str) -> RunRecord | None:
        """The room's run, if one is active (on any worker)."""
        ...

    async def active_runs(self, room_prefix: str, channel_id: str) -> list[RunRecord]:
        """The active runs (on any worker) of the rooms whose id starts with `room_prefix`."""
        ...

    async def ask_stop(self, room_id: str, channel_id: str, by: str, reason: str) -> bool:
        """Write on the room's active run that `by` asked it to stop, and what its open
        requests are to say; False if none is active."""
        ...

    async def stops_asked(self, owner: str) -> list[RunRecord]:
        """`owner`'s active runs someone asked to stop."""
        ...


def left_by(owner: str | None, worker_id: str) -> str:
    """Who left a lapsed run, as the log tells it to `worker_id`: worker ids are
    `host:pid:random` (bot.human_input.holding), so a run of this host's is an earlier process
    of it (most often this service before a restart), never "another worker" to an operator
    who runs one; only a run of another host's was left by another worker."""
    if owner is None:
        return "left by a worker that did not say who it was"
    if owner == worker_id:
        return "left by this worker (its lease lapsed)"
    host = worker_id.split(":", 1)[0]
    if owner.split(":", 1)[0] == host:
        return f"left by an earlier process of this host ({owner}), stopped or restarted"
    return f"left by another worker ({owner}), gone"


class RunLeases:
    """This worker's runs: acquire per turn, renewed in the background, released on shutdown."""

    def __init__(
        self,
        store: LeaseRows,
        *,
        worker_id: str | None = None,
        lease_seconds: float = LEASE_SECONDS,
    ) -> None:
        self.store = store
        self.worker_id = worker_id or worker_name()
        self.lease_seconds = lease_seconds
        self._held = 0
        self.adopted = 0  # lapsed runs of other workers this worker took over (its metrics)
        self._renewer: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self._failures = RepeatedFailures(log)
        self._stop_listeners: list[Callable[[RunRecord], None]] = []

    @property
    def held(self) -> int:
        """The runs this worker holds now (the leases it renews)."""
        return self._held

    def _lease_until(self) -> datetime:
        return datetime.now(UTC) + timedelta(seconds=self.lease_seconds)

    async def acquire(
        self, room_id: str, channel_id: str, actor_id: str | None, *, patience: float
    ) -> bool:
        """Take the room's run, waiting up to `patience` s while another live worker has it."""
        loop = asyncio.get_running_loop()
        give_up = loop.time() + patience
        while not await self.store.claim_run(
            room_id, channel_id, self.worker_id, actor_id, self._lease_until()
        ):
            if loop.time() >= give_up:
                return False
            await asyncio.sleep(BUSY_POLL_SECONDS)
        self._held += 1
        return True

    async def adopt(self, run: RunRecord) -> bool:
        """Take over a lapsed run (its worker is gone); True if this worker got it."""
        won = await self.store.claim_run(
            run.room_id, run.channel_id, self.worker_id, run.actor_id, self._lease_until()
        )
        if won:
            self._held += 1
            self.adopted += 1
        return won

    async def take_over(self, room_id: str, channel_id: str) -> bool:
        """Take the room's open run even from a holder whose lease has not lapsed; True if
        there was one, to resume. For the console demo only, which is the one worker of its
        terminal's room: its open run is one a killed demo left, and waiting out that lease
        would leave the person at the keyboard before a silent terminal. `serve` shares its
        rooms between workers and adopts only lapsed runs (`adopt`)."""
        won = await self.store.seize_run(room_id, channel_id, self.worker_id, self._lease_until())
        if won:
            self._held += 1
        return won

    def on_stop_asked(self, listener: Callable[[RunRecord], None]) -> None:
        """`listener` is told each run of this worker someone asked to stop (every renewal,
        until the run ends: it must not mind being told twice)."""
        self._stop_listeners.append(listener)

    async def finish(self, room_id: str, channel_id: str) -> None:
        self._held = max(self._held - 1, 0)
        await self.store.finish_run(room_id, channel_id, self.worker_id)

    async def orphans(self) -> list[RunRecord]:
        return await self.store.orphaned_runs(datetime.now(UTC))

    def start(self) -> None:
        if self._renewer is None:
            self._stopping.clear()
            self._renewer = asyncio.create_task(self._renew_forever())

    async def _renew_forever(self) -> None:
        # Three renewals per lease: one lost to a slow database does not lose the run. Stopped
        # by an event, not cancelled, so no renewal is cut off holding a connection.
        while not self._stopping.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), self.lease_seconds / 3)
            if self._held and not self._stopping.is_set():
                try:
                    await self.store.renew_runs(self.worker_id, self._lease_until())
                    await self._tell_stops()
                    self._failures.recovered("renewing the run leases")
                except StoreUnavailableError as err:
                    self._failures.failed("renewing the run leases", err)
                except Exception:
                    log.exception("could not renew the leases of %s", self.worker_id)

    async def _tell_stops(self) -> None:
        if not self._stop_listeners:
            return
        for run in await self.store.stops_asked(self.worker_id):
            for listener in self._stop_listeners:
                listener(run)

    async def release_all(self) -> None:
        """Shutting down: let every run of this worker lapse now, for another to adopt."""
        await self.stop()
        try:
            released = await self.store.release_runs(self.worker_id, datetime.now(UTC))
        except StoreUnavailableError as err:
            log.warning("could not release the runs of %s (%s): other workers adopt them once "
                        "their leases lapse", self.worker_id, err)  # fmt: skip
            return
        if released:
            log.info("released %d run(s) for other workers to resume", released)

    async def stop(self) -> None:
        if self._renewer is not None:
            self._stopping.set()
            await self._renewer
            self._renewer = None
