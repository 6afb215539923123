"""Where an approved call's run is claimed once and its result kept: the store
(bot.store.SqlStore has it), or this process's memory for a bridge without one."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import replace
from datetime import datetime
from typing import Protocol

from bot.records import GateRun


class GateRunStore(Protocol):
    """Where runs are claimed and their results kept (bot.store.SqlStore has it)."""

    async def claim_gate_run(self, run: GateRun) -> GateRun | None: ...

    async def gate_run(self, key: str) -> GateRun | None: ...

    async def renew_gate_run(self, key: str, worker: str, lease_until: datetime) -> None: ...

    async def finish_gate_run(self, run: GateRun, *, actor_id: str | None = None) -> bool: ...


class MemoryGateRuns:
    """Runs claimed in this process only (a bridge without a store): the latest `keep`."""

    def __init__(self, keep: int = 10_000) -> None:
        self.keep = keep
        self._runs: OrderedDict[str, GateRun] = OrderedDict()

    async def claim_gate_run(self, run: GateRun) -> GateRun | None:
        existing = self._runs.get(run.key)
        if existing is not None:
            return existing
        self._runs[run.key] = run
        while len(self._runs) > self.keep:
            self._runs.popitem(last=False)
        return None

    async def gate_run(self, key: str) -> GateRun | None:
        return self._runs.get(key)

    async def renew_gate_run(self, key: str, worker: str, lease_until: datetime) -> None:
        run = self._runs.get(key)
        if run is not None and run.worker == worker and run.finished_at is None:
            self._runs[key] = replace(run, lease_until=lease_until)

    async def finish_gate_run(self, run: GateRun, *, actor_id: str | None = None) -> bool:
        claimed = self._runs.get(run.key)
        if claimed is None or claimed.worker != run.worker or claimed.finished_at is not None:
            return False
        self._runs[run.key] = run
        return True
