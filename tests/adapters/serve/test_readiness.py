"""adapters/serve/readiness.py: a report is kept for its `ttl`, but not one told before the start
ended: /readyz says ready as soon as the service is, not a second later."""

from __future__ import annotations

from pathlib import Path

from adapters.serve.readiness import Readiness
from bot.store import open_store


async def test_a_report_from_before_the_start_is_not_kept_after_it(tmp_path: Path) -> None:
    store = await open_store(f"sqlite+aiosqlite:///{tmp_path / 'bridge.db'}")
    started = False
    readiness = Readiness(store, started=lambda: started, ttl=3600.0)
    try:
        starting = await readiness.report()
        assert (starting.ready, starting.checks["service"]) == (False, "starting or stopping")
        assert await readiness.report() is starting  # kept while it still holds
        started = True
        ready = await readiness.report()
        assert ready.ready is True
        assert await readiness.report() is ready  # and the new one kept for its ttl
        started = False  # stopping: said at once too
        assert (await readiness.report()).ready is False
    finally:
        await store.close()
