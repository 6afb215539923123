"""`/readyz`: whether this worker can take work now, as opposed to `/healthz` (it is alive).

Ready means: the service started (so each surface's credentials were checked against its
platform), the database is at this version's migrations, and it takes writes right now (a
one-row write probe, `SqlStore.probe_write`). A worker whose database went read-only stays
alive and healthy but is not ready, and a load balancer sends its work elsewhere.

A flood of probes does not hammer the database: a result is reused for `ttl` seconds, and
probes arriving while a check runs share it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from bot.store import SqlStore, head_revision

TTL_SECONDS = 1.0
CHECK_SECONDS = 2.0  # a database that does not answer within this is not ready
OK = "ok"


@dataclass(frozen=True, slots=True)
class Report:
    """Each check's "ok" or what is wrong with it."""

    checks: dict[str, str] = field(default_factory=dict)

    @property
    def ready(self) -> bool:
        return all(result == OK for result in self.checks.values())

    def to_json(self) -> dict[str, Any]:
        return {"ready": self.ready, "checks": self.checks}


class Readiness:
    """The readiness of one worker, checked at most once per `ttl` seconds."""

    def __init__(
        self,
        store: SqlStore,
        *,
        started: Callable[[], bool],
        worker: str | None = None,
        ttl: float = TTL_SECONDS,
    ) -> None:
        self.store = store
        self.started = started
        self.worker = worker
        self.ttl = ttl
        self._latest: Report | None = None
        self._checked_at = 0.0
        self._checking: asyncio.Task[Report] | None = None

    async def report(self) -> Report:
        """The latest report, checked again if it is older than `ttl`."""
        loop = asyncio.get_running_loop()
        if self._fresh(loop.time()):
            assert self._latest is not None
            return self._latest
        if self._checking is None:
            self._checking = asyncio.ensure_future(self._check())
            self._checking.add_done_callback(self._checked)
        return await asyncio.shield(self._checking)

    def _fresh(self, now: float) -> bool:
        """Whether the latest report still holds: younger than `ttl`, and told while the
        service was as it is now (a report from before the start ended is not kept once it
        has, or /readyz would say "starting" for up to a `ttl` after it is ready)."""
        if self._latest is None or now - self._checked_at >= self.ttl:
            return False
        return (self._latest.checks.get("service") == OK) == self.started()

    def _checked(self, task: asyncio.Task[Report]) -> None:
        self._checking = None
        if not task.cancelled() and task.exception() is None:
            self._latest = task.result()
            self._checked_at = asyncio.get_running_loop().time()

    async def _check(self) -> Report:
        checks = {"service": OK if self.started() else "starting or stopping"}
        checks["migrations"] = await self._bounded(self._migrations(), "cannot read the schema")
        checks["store"] = await self._bounded(self._writable(), "cannot write to the database")
        return Report(checks)

    async def _migrations(self) -> str:
        current, head = await self.store.current_revision(), head_revision()
        if current == head:
            return OK
        return (
            f"the database is at revision {current or 'none'}, this version needs {head}: "
            "run `hitl-bridge db upgrade`"
        )

    async def _writable(self) -> str:
        await self.store.probe_write(self.worker)
        return OK

    async def _bounded(self, check: Awaitable[str], failed: str) -> str:
        try:
            async with asyncio.timeout(CHECK_SECONDS):
                return await check
        except TimeoutError:
            return f"the database did not answer within {CHECK_SECONDS:g} s"
        except Exception as err:
            said = str(err).strip().splitlines()
            return f"{failed}: {said[0] if said else type(err).__name__}"

    async def handle(self, _: web.Request) -> web.Response:
        """GET /readyz: 200 and each check's "ok", or 503 and what is wrong."""
        report = await self.report()
        return web.json_response(report.to_json(), status=200 if report.ready else 503)
