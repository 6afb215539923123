"""The deployment's counts for the metrics (bot/store/gauges.py), on SQLite and PostgreSQL:
pending requests by the surface their room is on, settled ones left out; and the outage watch
told of a call that failed as an outage."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.records import RequestRecord, RequestStatus, Settlement, StoreUnavailableError
from bot.store import SqlStore, open_store, upgrade
from bot.store.gauges import DeploymentCounts, DeploymentGauges
from tests.bot.store.conftest import Database


def record(request_id: str, room_id: str) -> RequestRecord:
    return RequestRecord(id=request_id, tool_name="requestApproval", arguments={},
                         room_id=room_id, channel_id="slack")  # fmt: skip


async def test_pending_by_surface_and_the_webhook_backlog(store: SqlStore) -> None:
    gauges = DeploymentGauges(store)
    empty = {"slack": 0, "teams": 0, "console": 0, "other": 0}
    assert await gauges.read() == DeploymentCounts(empty, 0)
    rooms = ["slack:C1:1.0", "slack:D2:", "teams:19:abc@thread.v2", "console:me", "room-9"]
    for n, room in enumerate(rooms):
        await store.create_request(record(f"r{n}", room))
    settled = Settlement("r1", RequestStatus.RESOLVED, datetime.now(UTC), result="ok", by="U1")
    assert await store.settle(settled)
    counts = await gauges.read()
    assert counts.pending == {"slack": 1, "teams": 1, "console": 1, "other": 1}
    assert counts.webhook_backlog == 0


async def test_an_outage_is_told_to_the_watchers(database: Database) -> None:
    await upgrade(database.url, schema=database.schema)
    if database.dialect == "sqlite":
        path = database.url.removeprefix("sqlite+aiosqlite:///")
        url, args = f"sqlite+aiosqlite:///file:{path}?mode=ro&uri=true", None
    else:
        url, args = database.url, {"server_settings": {"default_transaction_read_only": "on"}}
    store = await open_store(url, migrate=False, schema=database.schema, connect_args=args)
    told: list[str] = []
    stop = store.watch_outages(told.append)
    try:
        with pytest.raises(StoreUnavailableError):
            await store.probe_write("worker-1")
        assert len(told) == 1 and told[0]
        stop()
        with pytest.raises(StoreUnavailableError):
            await store.probe_write("worker-1")
        assert len(told) == 1
    finally:
        await store.close()
