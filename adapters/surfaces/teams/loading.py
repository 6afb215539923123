"""Teams while its SDK loads: `serve` starts importing it (about a second) in a thread first
thing, builds the rest meanwhile, and builds the adapter once the import is in.

The route is mounted from the start and answers 503 with `Retry-After` until the adapter is
started (Bot Framework retries); `/readyz` says "starting" until then, as for every other part.
Nothing here imports the SDK: adapters/surfaces/teams/app.py is what the thread imports.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any

from aiohttp import web

from adapters.serve.approvers import read_groups
from adapters.serve.lazy_import import import_after_ready
from bot.bridge.people import PeopleNames
from bot.policies.deciders import Deciders

if TYPE_CHECKING:
    from adapters.surfaces.teams.app import TeamsAdapter

ImportTeams = Callable[[], Awaitable[ModuleType]]
RETRY_AFTER = "1"  # seconds: the import is done within a few
STARTING = {"error": "starting", "message": "Teams is starting; retry shortly"}


async def import_teams_app() -> ModuleType:
    """adapters/surfaces/teams/app.py, with the Teams SDK it imports, in a thread."""
    return await import_after_ready("adapters.surfaces.teams.app", "Teams")


class LoadingTeams:
    """The Teams adapter once its SDK is in: `build_with` gives the service's parts, `load`
    makes and starts it, `handle` serves its route (503 until then)."""

    def __init__(self, import_teams: ImportTeams = import_teams_app) -> None:
        # Started now, so the import runs while the caller builds everything else.
        self._module: asyncio.Future[ModuleType] = asyncio.ensure_future(import_teams())
        self._parts: Mapping[str, Any] = {}
        self._deciders: Deciders | None = None
        self._names = PeopleNames([])
        self.adapter: TeamsAdapter | None = None
        self.started = False

    def build_with(
        self, parts: Mapping[str, Any], deciders: Deciders, names: PeopleNames
    ) -> LoadingTeams:
        """`parts`: TeamsAdapter's arguments; the policy's `deciders` read Entra groups with
        the app's credentials, and the admin console's `names` learn Teams' people."""
        self._parts, self._deciders, self._names = parts, deciders, names
        return self

    async def load(self) -> TeamsAdapter:
        """Wait for the SDK, make the adapter and start it (its messaging route)."""
        module = await self._module
        assert self._deciders is not None, "build_with() comes first"
        adapter: TeamsAdapter = module.TeamsAdapter(**self._parts)
        self.adapter = adapter
        read_groups(self._deciders, None, adapter)
        from adapters.surfaces.teams.people import TeamsPeople  # the SDK is in by now

        self._names.add(TeamsPeople(adapter.people))
        await adapter.start()
        self.started = True
        return adapter

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """POST /api/messages: the adapter's once started; 503 (retry) before."""
        if not self.started or self.adapter is None:
            return web.json_response(STARTING, status=503, headers={"Retry-After": RETRY_AFTER})
        return await self.adapter.handle(request)

    async def cancel(self) -> None:
        """A start cut short: stop waiting for the import (the thread finishes on its own)."""
        self._module.cancel()
        with contextlib.suppress(BaseException):
            await self._module
