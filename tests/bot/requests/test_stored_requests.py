"""Reading a request back while another worker is still writing it."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.records import RequestRecord, RequestStatus, Settlement
from bot.requests.stored_requests import posted_record, settled_record
from bot.store import SqlStore, open_store


def record(request_id: str) -> RequestRecord:
    now = datetime.now(UTC)
    return RequestRecord(
        id=request_id, tool_name="requestApproval", arguments={}, room_id="slack:C1:1.0",
        tool_call_id="toolu_1", channel_id="slack", channel_type="ai", actor_id="U1",
        detached=False, created_at=now, expires_at=now + timedelta(minutes=5),
    )  # fmt: skip


async def read_twice(store: SqlStore) -> None:
    """Until the store has been read twice from now on: the reader has found the request not
    ready yet and is waiting for it (the moment the writer is meant to write)."""
    loop = asyncio.get_running_loop()
    reads: list[str] = []
    twice = asyncio.Event()

    def seen(statement: str) -> None:  # on the store's thread, maybe
        if statement.lstrip().upper().startswith("SELECT"):
            reads.append(statement)
            if len(reads) == 2:
                loop.call_soon_threadsafe(twice.set)

    unwatch = store.watch(seen)
    try:
        await asyncio.wait_for(twice.wait(), 5)
    finally:
        unwatch()


async def test_a_reference_stored_a_moment_later_is_found(tmp_path: Path) -> None:
    store = await open_store(f"sqlite+aiosqlite:///{tmp_path / 'refs.db'}")
    await store.create_request(record("r1"))

    async def post_later() -> None:
        await read_twice(store)
        await store.set_message_ref("r1", "slack", {"channel": "C1", "ts": "2.0"})

    poster = asyncio.create_task(post_later())
    found = await posted_record(store, "r1", "slack", patience=5)
    await poster
    assert found is not None and found.message_refs["slack"] == {"channel": "C1", "ts": "2.0"}

    waited = await posted_record(store, "r1", "teams", patience=0.1)  # never posted there
    assert waited is not None and "teams" not in waited.message_refs
    assert await posted_record(store, "unknown", "slack", patience=5) is None  # no wait
    await store.close()


async def test_a_settle_still_being_written_is_waited_for(tmp_path: Path) -> None:
    store = await open_store(f"sqlite+aiosqlite:///{tmp_path / 'settle.db'}")
    await store.create_request(record("r2"))

    async def settle_later() -> None:
        await read_twice(store)
        done = Settlement("r2", RequestStatus.RESOLVED, datetime.now(UTC), result="{}", by="U2")
        assert await store.settle(done)

    settler = asyncio.create_task(settle_later())
    found = await settled_record(store, "r2", patience=5)
    await settler
    assert found is not None and found.status is RequestStatus.RESOLVED and found.settled_by == "U2"
    await store.close()
