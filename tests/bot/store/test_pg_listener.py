"""bot/store/pg_listener.py: the LISTEN of other workers' settles survives losing its
connection (here, its backend terminated by an admin): it listens again on a new one, and the
next NOTIFY is heard. SQLite has no NOTIFY: nothing to listen to, a stopper that does nothing.
"""

from __future__ import annotations

import asyncio
import uuid

from bot.store import SqlStore
from bot.store.pg_listener import Listener
from bot.store.request_rows import SETTLED_CHANNEL
from tests.bot.store.conftest import Database, _admin

WAIT = 10.0  # seconds; only a broken listener reaches it


async def heard_payload(heard: asyncio.Queue[str], payload: str) -> None:
    """Until `payload` is heard (other tests on the database NOTIFY the same channel)."""
    while await heard.get() != payload:
        pass


async def test_a_lost_listen_connection_is_made_again(store: SqlStore, database: Database) -> None:
    heard: asyncio.Queue[str] = asyncio.Queue()
    stop = await store.listen_settled(heard.put_nowait)
    if database.dialect == "sqlite":
        assert not isinstance(stop, Listener)
        await stop()
        return
    assert isinstance(stop, Listener)
    try:
        before = stop.server_pid
        await _admin(database.url, f"SELECT pg_terminate_backend({before})")
        await asyncio.wait_for(stop.relistened.wait(), WAIT)
        assert stop.server_pid not in (None, before)

        payload = f"request-{uuid.uuid4().hex}"
        await _admin(database.url, f"SELECT pg_notify('{SETTLED_CHANNEL}', '{payload}')")
        await asyncio.wait_for(heard_payload(heard, payload), WAIT)
    finally:
        await stop()
