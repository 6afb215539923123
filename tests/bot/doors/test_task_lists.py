"""bot/doors/task_lists.py through `Doors.tasks`, on a real store (SQLite; PostgreSQL too when
HITL_TEST_POSTGRES_URL is set): a token's requests newest status first, filtered by status,
idempotency key and status time, paged by cursor; and the cursor's token read back."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.doors.task_lists import BadCursorError, Cursor, TaskQuery
from bot.records import RequestStatus
from tests.bot.doors.test_service import Door, door  # noqa: F401  (the fixture)
from tests.bot.store.conftest import database  # noqa: F401  (the fixture)


async def test_tasks_newest_status_first_filtered_and_paged(door: Door) -> None:  # noqa: F811
    asked = [await door.ask(idempotency_key=f"k:{n}") for n in range(4)]
    await door.ask("someone-else")
    await door.doors.cancel("agent", str(asked[0]["id"]))  # settled last: the newest status
    ids = [str(body["id"]) for body in asked]
    everything, total = await door.doors.tasks("agent", TaskQuery())
    assert [body["id"] for body in everything] == [ids[0], ids[3], ids[2], ids[1]]
    assert total == 4
    cancelled, total = await door.doors.tasks(
        "agent", TaskQuery(statuses=(RequestStatus.CANCELLED,))
    )
    assert [body["id"] for body in cancelled] == [ids[0]] and total == 1
    keyed, _ = await door.doors.tasks("agent", TaskQuery(key_prefix="k:", key_suffix="2"))
    assert [body["id"] for body in keyed] == [ids[2]]
    by_id, _ = await door.doors.tasks("agent", TaskQuery(key_suffix="none", or_id=ids[1]))
    assert [body["id"] for body in by_id] == [ids[1]]
    later = datetime.now(UTC) + timedelta(hours=1)
    assert (await door.doors.tasks("agent", TaskQuery(since=later)))[0] == []
    pages, after = [], None
    while True:
        page, total = await door.doors.tasks("agent", TaskQuery(after=after, limit=3))
        pages.append([body["id"] for body in page])
        if len(page) < 3:
            break
        last = page[-1]
        at = datetime.fromisoformat(str(last.get("answered_at") or last["created_at"]))
        after = Cursor.read(Cursor(at, str(last["id"])).token())
    assert pages == [[ids[0], ids[3], ids[2]], [ids[1]]] and total == 4


@pytest.mark.parametrize("token", ["", "not-a-token", "WyJ4Il0", "WyJ4IiwgMV0"])
def test_a_page_token_not_made_here_is_refused(token: str) -> None:
    with pytest.raises(BadCursorError):
        Cursor.read(token)
