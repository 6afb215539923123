"""Where each copy of a request was posted (bot.store.copies): one per request, surface and
room, so two copies on one surface (a thread's and an approvals channel's) are both kept."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy.exc import IntegrityError

from bot.store import SqlStore
from bot.store.copies import CopyTables
from tests.bot.store.test_sql_store import make_record

CHANNEL = "slack:C0APPROVALS:"
DM = "slack:D0BOB00001:"


async def test_copies_are_kept_per_surface_and_room(store: SqlStore) -> None:
    await store.create_request(make_record("r1"))
    copies = CopyTables(store)
    await copies.keep("r1", "slack", CHANNEL, {"channel": "C0APPROVALS", "ts": "1.1"})
    await copies.keep("r1", "slack", DM, {"channel": "D0BOB00001", "ts": "2.2"})
    await copies.keep("r1", "teams", "teams:19:ops", {"activity_id": "a1"})
    assert await copies.ref("r1", "slack", CHANNEL) == {"channel": "C0APPROVALS", "ts": "1.1"}
    assert await copies.ref("r1", "slack", DM) == {"channel": "D0BOB00001", "ts": "2.2"}
    assert await copies.ref("r1", "teams", "teams:19:ops") == {"activity_id": "a1"}
    assert await copies.ref("r1", "teams", CHANNEL) is None
    record = await store.get_request("r1")
    assert record is not None and dict(record.message_refs) == {}  # the own room's: untouched


async def test_a_copy_posted_again_replaces_its_reference(store: SqlStore) -> None:
    await store.create_request(make_record("r1"))
    copies = CopyTables(store)
    await asyncio.gather(*(copies.keep("r1", "slack", CHANNEL, {"ts": str(n)}) for n in range(5)))
    await copies.keep("r1", "slack", CHANNEL, {"ts": "last"})
    assert await copies.ref("r1", "slack", CHANNEL) == {"ts": "last"}


async def test_a_copy_of_an_unknown_request_is_refused(store: SqlStore) -> None:
    with pytest.raises(IntegrityError):
        await CopyTables(store).keep("nope", "slack", CHANNEL, {})
