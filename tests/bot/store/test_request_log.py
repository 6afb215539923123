"""The request log's SQL (bot/store/request_log.py) on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.records import Asked, AuditEntry, RequestRecord, RequestStatus, Settlement
from bot.reports.request_log import RequestFilter
from bot.store import SqlStore
from bot.store.doors import DoorTables
from bot.store.request_log import RequestLog

START = datetime(2026, 11, 1, 9, tzinfo=UTC)


async def fill(store: SqlStore) -> None:
    """Five requests, an hour apart: r0..r4, settled as their line says."""
    plan = [
        ("approve_deploy", "U1", "C1", RequestStatus.RESOLVED, "U9"),
        ("approve_deploy", "U2", "C1", RequestStatus.REJECTED, "U9"),
        ("ask_human", "U1", "C2", RequestStatus.TIMED_OUT, None),
        ("ask_100%_sure", None, "C2", None, None),
        ("ask_human", "U3", "C3", RequestStatus.CANCELLED, "U1"),
    ]
    for n, (tool, actor, room, status, by) in enumerate(plan):
        made = START + timedelta(hours=n)
        record = RequestRecord(f"r{n}", tool, {"n": n}, room_id=room, actor_id=actor,
                               created_at=made)  # fmt: skip
        await store.create_request(record)
        if status is not None:
            settled = Settlement(f"r{n}", status, made + timedelta(minutes=n + 1), by=by)
            assert await store.settle(settled)
    await DoorTables(store).reserve_door(Asked("r3", "ci", "slack:C2", START))


async def ids(log: RequestLog, where: RequestFilter) -> list[str]:
    return [logged.record.id for logged in await log.page(where, 0, 50)]


async def test_each_filter_narrows_newest_first(store: SqlStore) -> None:
    await fill(store)
    log = RequestLog(store)
    assert await ids(log, RequestFilter()) == ["r4", "r3", "r2", "r1", "r0"]
    assert await ids(log, RequestFilter(text="DEPLOY")) == ["r1", "r0"]
    assert await ids(log, RequestFilter(text="r3")) == ["r3"]
    assert await ids(log, RequestFilter(text="100%")) == ["r3"]  # % is no wildcard
    assert await ids(log, RequestFilter(text="_")) == ["r4", "r3", "r2", "r1", "r0"]
    assert await ids(log, RequestFilter(status=RequestStatus.REJECTED)) == ["r1"]
    assert await ids(log, RequestFilter(actor="U1")) == ["r4", "r2", "r0"]  # asked or decided
    assert await ids(log, RequestFilter(actor="token:ci")) == ["r3"]
    assert await ids(log, RequestFilter(tool="ask_human", room="C2")) == ["r2"]
    window = RequestFilter(since=START + timedelta(hours=1), until=START + timedelta(hours=3))
    assert await ids(log, window) == ["r2", "r1"]
    assert await log.count(RequestFilter(room="C1")) == 2
    assert await log.count(RequestFilter(actor="nobody")) == 0


async def test_pages_follow_each_other(store: SqlStore) -> None:
    await fill(store)
    log = RequestLog(store)
    pages = [[x.record.id for x in await log.page(RequestFilter(), at, 2)] for at in (0, 2, 4)]
    assert pages == [["r4", "r3"], ["r2", "r1"], ["r0"]]


async def test_a_request_and_its_timeline_oldest_first(store: SqlStore) -> None:
    await fill(store)
    log = RequestLog(store)
    await store.append_audit(AuditEntry("answer_refused", START + timedelta(hours=2), "r1", "U7"))
    logged = await log.logged("r3")
    assert logged is not None and logged.asked_by == "token:ci" and logged.outcome == "pending"
    assert await log.logged("nope") is None
    timeline = await log.timeline("r1")
    assert [entry.action for entry in timeline] == [
        "request.created", "request.rejected", "answer_refused",
    ]  # fmt: skip
    assert timeline[1].actor_id == "U9"


async def test_the_figures_rows_since(store: SqlStore) -> None:
    await fill(store)
    rows = await RequestLog(store).settled_since(START + timedelta(hours=3), 100)
    assert [(row.tool_name, row.status) for row in rows] == [
        ("ask_human", RequestStatus.CANCELLED), ("ask_100%_sure", RequestStatus.PENDING),
    ]  # fmt: skip
    assert rows[0].settled_at == START + timedelta(hours=4, minutes=5)


async def test_a_walk_after_a_mark_takes_each_request_once(store: SqlStore) -> None:
    await fill(store)
    # r5 made at the same moment as r4: the id breaks the tie.
    await store.create_request(
        RequestRecord("r5", "ask_human", {}, created_at=START + timedelta(hours=4))
    )
    log = RequestLog(store)
    seen: list[str] = []
    mark = None
    while batch := await log.after(RequestFilter(), mark, 2):
        seen += [logged.record.id for logged in batch]
        mark = (batch[-1].record.created_at, batch[-1].record.id)
    assert seen == ["r5", "r4", "r3", "r2", "r1", "r0"]
    assert [x.record.id for x in await log.after(RequestFilter(room="C1"), None, 10)] == [
        "r1",
        "r0",
    ]
