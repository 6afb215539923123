"""The tamper-evident audit log: sealing rows into the hash chain, and verifying it.

Writers insert audit rows as before (no extra read or lock on their path); every worker runs an
`AuditSealer`, which seals what was written every half second, and `verify_chain` seals, then
walks the whole chain by `chain_seq` (bot/audit/hashing.py) and names the first bad row.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import timedelta
from typing import Protocol

from bot.audit.hashing import GRACE, ChainReport, ChainRow, ChainWalk
from bot.records import StoreUnavailableError

__all__ = ["AuditSealer", "ChainCheck", "ChainReport", "ChainStore", "seal_chain", "verify_chain"]

log = logging.getLogger(__name__)

SEAL_EVERY = 0.5  # seconds between a worker's sealing passes
WALK_PAGE = 5000  # sealed rows read per query while verifying


class ChainStore(Protocol):
    """What the chain asks of the store (SqlStore has it)."""

    async def seal_audit(self) -> int:
        """Seal every row written so far; how many."""
        ...

    async def sealed_after(self, after: int, limit: int) -> list[ChainRow]:
        """Up to `limit` sealed rows after chain place `after`, in chain order."""
        ...


async def seal_chain(store: ChainStore) -> int:
    """Seal every row written so far (in batches, each its own transaction); how many."""
    return await store.seal_audit()


async def verify_chain(store: ChainStore, *, grace: timedelta = GRACE) -> ChainReport:
    """Seal, then walk the chain: the first row changed, deleted, inserted or reordered."""
    await seal_chain(store)
    walk = ChainWalk(grace)
    after = 0
    while True:
        rows = await store.sealed_after(after, WALK_PAGE)
        for row in rows:
            if not walk.step(row):
                return walk.report()
        if len(rows) < WALK_PAGE:
            return walk.report()
        after = rows[-1].chain_seq or after


class ChainCheck:
    """`verify_chain` for a page showing the chain's status (the admin console): one walk at a
    time, its report reused for `max_age` seconds (a million rows take about half a minute)."""

    def __init__(self, store: ChainStore, max_age: float = 60.0) -> None:
        self.store = store
        self.max_age = max_age
        self._report: ChainReport | None = None
        self._at = 0.0
        self._lock = asyncio.Lock()

    async def __call__(self) -> ChainReport:
        async with self._lock:  # a second caller waits for the walk under way, then shares it
            now = asyncio.get_running_loop().time()
            if self._report is None or now - self._at >= self.max_age:
                self._report = await verify_chain(self.store)
                self._at = asyncio.get_running_loop().time()
            return self._report


class AuditSealer:
    """A worker's background sealing: a pass every SEAL_EVERY seconds, and one at stop."""

    def __init__(self, store: ChainStore, every: float = SEAL_EVERY) -> None:
        self.store = store
        self.every = every
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="audit-sealer")

    async def stop(self) -> None:
        """Stop the loop, then seal what is left (rows written by requests that just ended)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        with contextlib.suppress(StoreUnavailableError):
            await seal_chain(self.store)

    async def _run(self) -> None:
        while True:
            try:
                await seal_chain(self.store)
            except StoreUnavailableError as err:  # the database is away: seal when it is back
                log.warning("could not seal the audit log: %s", err)
            except Exception:  # a sealer that dies would leave every later row unsealed
                log.exception("sealing the audit log failed")
            await asyncio.sleep(self.every)
