"""SqlStore against real databases: SQLite always, PostgreSQL when configured (see conftest)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import Executable, text
from sqlalchemy.exc import IntegrityError, StatementError

from bot.records import AuditEntry, Decision, RequestRecord, RequestStatus, Settlement
from bot.store import SqlStore, journal, request_rows
from bot.store.engine import async_url
from bot.store.prepared import prepared
from tests.bot.store.conftest import Database, receive_one

T0 = datetime(2025, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


def make_record(request_id: str = "r1", **overrides: Any) -> RequestRecord:
    fields: dict[str, Any] = {
        "id": request_id,
        "tool_name": "requestApproval",
        "arguments": {"action": "deploy", "reason": "release", "nested": {"n": [1, 2]}},
        "room_id": "room-1",
        "tool_call_id": "call-1",
        "channel_id": "slack-main",
        "channel_type": "slack",
        "actor_id": "U1",
        "detached": False,
        "created_at": T0,
        "expires_at": T0 + timedelta(minutes=5),
    }
    fields.update(overrides)
    return RequestRecord(**fields)


def resolve(request_id: str = "r1", result: str = "yes", by: str | None = "U1") -> Settlement:
    return Settlement(request_id, RequestStatus.RESOLVED, T0 + timedelta(seconds=1), result, by=by)


SETTLED_ACTIONS = {f"request.{status.value}" for status in RequestStatus} - {"request.pending"}


async def transitions(store: SqlStore, request_id: str) -> list[tuple[Any, ...]]:
    """The request's transitions as its audit rows record them (from, to, by), oldest first."""
    entries = reversed(await store.list_audit(request_id=request_id))
    return [
        (None, "pending", entry.actor_id)
        if entry.action == "request.created"
        else ("pending", entry.action.removeprefix("request."), entry.actor_id)
        for entry in entries
        if entry.action == "request.created" or entry.action in SETTLED_ACTIONS
    ]


async def test_create_get_round_trip(store: SqlStore) -> None:
    record = make_record(message_refs={"slack": {"channel": "C1", "ts": "1.2"}})
    await store.create_request(record)
    assert await store.get_request("r1") == record
    assert await store.get_request("missing") is None


async def test_create_writes_created_transition_and_audit(store: SqlStore) -> None:
    await store.create_request(make_record(detached=True, actor_id=None))
    assert await transitions(store, "r1") == [(None, "pending", None)]
    [created] = await store.list_audit(request_id="r1")
    assert created.action == "request.created"
    assert created.at == T0
    assert created.detail["tool_name"] == "requestApproval"
    assert created.detail["detached"] is True


async def test_create_duplicate_id_fails_and_leaves_no_trace(store: SqlStore) -> None:
    await store.create_request(make_record())
    with pytest.raises(IntegrityError):
        await store.create_request(make_record(tool_name="other"))
    assert (await store.get_request("r1")) == make_record()
    assert len(await transitions(store, "r1")) == 1
    assert len(await store.list_audit(request_id="r1")) == 1


async def test_settle_first_wins_second_loses_without_trace(store: SqlStore) -> None:
    await store.create_request(make_record())
    assert await store.settle(resolve(result="first", by="U1")) is True
    late = Settlement("r1", RequestStatus.TIMED_OUT, T0 + timedelta(minutes=9), reason="late")
    assert await store.settle(late) is False

    settled = await store.get_request("r1")
    assert settled is not None
    assert (settled.status, settled.result, settled.settled_by) == (
        RequestStatus.RESOLVED,
        "first",
        "U1",
    )
    assert settled.settled_at == T0 + timedelta(seconds=1)
    assert await transitions(store, "r1") == [
        (None, "pending", "U1"),
        ("pending", "resolved", "U1"),
    ]
    actions = [entry.action for entry in await store.list_audit(request_id="r1")]
    assert actions == ["request.resolved", "request.created"]


async def test_settle_records_reason_in_audit(store: SqlStore) -> None:
    await store.create_request(make_record())
    rejection = Settlement("r1", RequestStatus.REJECTED, T0, reason="too risky", by="U2")
    assert await store.settle(rejection)
    latest = (await store.list_audit(request_id="r1"))[0]
    assert (latest.action, latest.actor_id, latest.detail) == (
        "request.rejected",
        "U2",
        {"reason": "too risky"},
    )


async def test_settle_unknown_request_loses(store: SqlStore) -> None:
    assert await store.settle(resolve("nope")) is False
    assert await store.list_audit() == []


async def test_settle_to_pending_is_refused(store: SqlStore) -> None:
    await store.create_request(make_record())
    with pytest.raises(ValueError, match="pending"):
        await store.settle(Settlement("r1", RequestStatus.PENDING, T0))


async def test_concurrent_settles_have_exactly_one_winner(store: SqlStore) -> None:
    await store.create_request(make_record())
    settles = [store.settle(resolve(result=f"answer-{i}", by=f"U{i}")) for i in range(20)]
    outcomes = await asyncio.gather(*settles)

    assert outcomes.count(True) == 1
    winner = outcomes.index(True)
    settled = await store.get_request("r1")
    assert settled is not None
    assert (settled.result, settled.settled_by) == (f"answer-{winner}", f"U{winner}")
    assert len(await transitions(store, "r1")) == 2
    assert len(await store.list_audit(request_id="r1")) == 2


async def test_settles_from_two_stores_have_one_winner(store: SqlStore, database: Database) -> None:
    # Two engines on one database behave like two worker processes racing for a request.
    other = SqlStore.from_url(database.url, schema=database.schema)
    try:
        await store.create_request(make_record())
        racers = [s.settle(resolve(result=f"a{i}")) for i in range(10) for s in (store, other)]
        assert (await asyncio.gather(*racers)).count(True) == 1
    finally:
        await other.close()
    assert len(await transitions(store, "r1")) == 2


# -- holds and proposals (bot/human_input/holding.py) ---------------------------------------


def alive(seconds: float = 60) -> datetime:
    return datetime.now(UTC) + timedelta(seconds=seconds)


def as_worker(settlement: Settlement, worker: str, proposal: str | None = None) -> Settlement:
    return dataclasses.replace(settlement, worker=worker, proposal=proposal)


async def test_a_request_held_by_a_live_worker_is_settled_by_it_only(store: SqlStore) -> None:
    await store.create_request(make_record(), holder="W1")
    await store.beat("W1", alive())
    assert await store.settle(resolve()) is False  # nobody in particular
    assert await store.settle(as_worker(resolve(), "W2")) is False
    assert await store.settle(as_worker(resolve(result="mine"), "W1")) is True
    settled = await store.get_request("r1")
    assert settled is not None and settled.result == "mine"


async def test_a_lapsed_or_missing_heartbeat_frees_the_request(store: SqlStore) -> None:
    await store.create_request(make_record("r1"), holder="W1")  # W1 never beat
    assert await store.settle(as_worker(resolve("r1"), "W2")) is True
    await store.create_request(make_record("r2"), holder="W1")
    await store.beat("W1", alive(-1))  # lapsed
    assert await store.settle(as_worker(resolve("r2"), "W2")) is True


async def test_hold_takes_only_what_no_live_worker_holds(store: SqlStore) -> None:
    await store.create_request(make_record(), holder="W1")
    await store.beat("W1", alive())
    await store.beat("W2", alive())
    assert await store.hold("r1", "W2") is False
    assert await store.hold("r1", "W1") is True  # already its own
    await store.unhold("r1", "W2")  # not W2's: nothing changes
    assert await store.hold("r1", "W2") is False
    await store.unhold("r1", "W1")
    assert await store.hold("r1", "W2") is True
    assert await store.settle(as_worker(resolve(), "W1")) is False


async def test_a_proposal_is_decided_by_the_holder(store: SqlStore) -> None:
    await store.create_request(make_record(), holder="W1")
    await store.beat("W1", alive())
    first = as_worker(resolve(result="from-W2", by="U2"), "W2", proposal="p1")
    second = as_worker(resolve(result="from-W3", by="U3"), "W3", proposal="p2")
    assert await store.propose(first) is None  # handed over
    assert await store.propose(second) is None
    assert await store.decision(first) is Decision.PENDING
    assert await store.beat("W1", alive()) == ["r1"]  # the holder hears of them
    waiting = await store.proposals("r1")
    assert waiting is not None
    assert [(p.proposal, p.result, p.by) for p in waiting] == [
        ("p1", "from-W2", "U2"),
        ("p2", "from-W3", "U3"),
    ]
    assert await store.settle(as_worker(waiting[0], "W1", proposal="p1")) is True

    assert await store.decision(first) is Decision.ACCEPTED
    assert await store.decision(second) is Decision.REFUSED
    assert await store.proposals("r1") is None  # settled
    assert await store.beat("W1", alive()) == []
    async with store.engine.connect() as conn:
        left = await conn.execute(text("SELECT count(*) FROM proposals"))
        assert left.scalar() == 0  # every proposal is gone once decided
    settled = await store.get_request("r1")
    assert settled is not None and (settled.result, settled.settled_by) == ("from-W2", "U2")


async def test_a_proposal_to_a_gone_holder_is_orphaned(store: SqlStore) -> None:
    await store.create_request(make_record(), holder="W1")
    await store.beat("W1", alive())
    proposal = as_worker(resolve(result="from-W2"), "W2", proposal="p1")
    assert await store.propose(proposal) is None
    await store.beat("W1", alive(-1))  # W1 stopped beating
    assert await store.decision(proposal) is Decision.ORPHANED
    assert await store.settle(proposal) is True
    assert await store.decision(proposal) is Decision.ACCEPTED


async def test_a_proposal_settles_directly_when_nobody_holds_the_request(store: SqlStore) -> None:
    await store.create_request(make_record())
    assert await store.propose(as_worker(resolve(), "W2", proposal="p1")) is True
    assert await store.propose(as_worker(resolve(), "W3", proposal="p2")) is False
    assert await store.propose(as_worker(resolve("nope"), "W3", proposal="p3")) is False


async def test_cancelled_writes_are_all_or_nothing(store: SqlStore) -> None:
    # Cancel creates at every stage of their transaction: none may half-happen, and none may
    # leave a transaction (and on SQLite the write lock) behind.
    for step in range(40):
        task = asyncio.create_task(store.create_request(make_record(f"c{step}")))
        await asyncio.sleep(step * 0.0001)  # 0 to 4 ms: before, during and after it
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    async with asyncio.timeout(10):
        await store.create_request(make_record("after"))
        assert await store.settle(resolve("after"))
    for step in range(40):
        created = await store.get_request(f"c{step}") is not None
        trail = (
            len(await transitions(store, f"c{step}")),
            len(await store.list_audit(request_id=f"c{step}")),
        )
        assert trail == ((1, 1) if created else (0, 0))


async def test_due_requests_and_next_deadline(store: SqlStore) -> None:
    deadlines = {"late": 3, "early": 1, "middle": 2, "settled": 0}
    for name, minutes in deadlines.items():
        await store.create_request(make_record(name, expires_at=T0 + timedelta(minutes=minutes)))
    await store.create_request(make_record("no-deadline", expires_at=None))
    assert await store.next_deadline() == T0
    await store.settle(resolve("settled"))

    assert await store.next_deadline() == T0 + timedelta(minutes=1)
    due = await store.due_requests(T0 + timedelta(minutes=2))
    assert [r.id for r in due] == ["early", "middle"]
    assert [r.id for r in await store.due_requests(T0 + timedelta(hours=1), limit=2)] == [
        "early",
        "middle",
    ]
    assert await store.due_requests(T0 + timedelta(seconds=59)) == []


async def test_next_deadline_is_none_without_pending_deadlines(store: SqlStore) -> None:
    assert await store.next_deadline() is None
    await store.create_request(make_record("a", expires_at=None))
    await store.create_request(make_record("b"))
    await store.settle(resolve("b"))
    assert await store.next_deadline() is None


async def test_deadline_queries_use_the_index(store: SqlStore, database: Database) -> None:
    sent: list[str] = []
    unwatch = store.watch(sent.append)
    await store.next_deadline()
    await store.due_requests(T0)
    unwatch()
    selects = [sql for sql in sent if sql.lstrip().upper().startswith("SELECT")]
    assert len(selects) == 2

    for query in (request_rows.NEXT_DEADLINE, request_rows.DUE):
        plan = await explain(store, database, query, {"now": T0, "limit": 500})
        assert "ix_requests_status_expires_at" in plan, plan


async def explain(
    store: SqlStore, database: Database, query: Executable, params: dict[str, Any]
) -> str:
    async with store.engine.connect() as conn:
        ready = prepared(query, conn.dialect)
        args = tuple(ready.args(params))
        if database.dialect == "sqlite":
            rows = await conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {ready.sql}", args)
            return " ".join(str(row[-1]) for row in rows)
        # On near-empty tables PostgreSQL rightly prefers a scan; ask whether it *can* use
        # the index, which is what a large table gets.
        await conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
        rows = await conn.exec_driver_sql(f"EXPLAIN {ready.sql}", args)
        return " ".join(str(row[0]) for row in rows)


async def test_list_pending_oldest_first(store: SqlStore) -> None:
    await store.create_request(make_record("newer", created_at=T0 + timedelta(seconds=2)))
    await store.create_request(make_record("older", created_at=T0))
    await store.create_request(make_record("gone", created_at=T0 + timedelta(seconds=1)))
    await store.settle(resolve("gone"))
    assert [r.id for r in await store.list_pending()] == ["older", "newer"]


async def test_message_refs_merge_per_surface(store: SqlStore) -> None:
    await store.create_request(make_record())
    await store.set_message_ref("r1", "slack", {"channel": "C1", "ts": "1.2"})
    await store.set_message_ref("r1", "teams", {"activity_id": "a1"})
    await store.set_message_ref("r1", "slack", {"channel": "C1", "ts": "3.4"})
    record = await store.get_request("r1")
    assert record is not None
    assert record.message_refs == {
        "slack": {"channel": "C1", "ts": "3.4"},
        "teams": {"activity_id": "a1"},
    }


async def test_concurrent_message_refs_are_not_lost(store: SqlStore) -> None:
    await store.create_request(make_record())
    surfaces = [f"surface-{i}" for i in range(10)]
    await asyncio.gather(*(store.set_message_ref("r1", s, {"n": s}) for s in surfaces))
    record = await store.get_request("r1")
    assert record is not None
    assert sorted(record.message_refs) == sorted(surfaces)


async def test_message_ref_for_unknown_request_raises(store: SqlStore) -> None:
    with pytest.raises(KeyError):
        await store.set_message_ref("nope", "slack", {})


async def test_audit_newest_first_filter_and_limit(store: SqlStore) -> None:
    for i in range(5):
        entry = AuditEntry(
            action=f"action-{i}",
            at=T0 + timedelta(seconds=i),
            request_id="r1" if i % 2 == 0 else None,
            actor_id="U9",
            detail={"i": i},
            id=999,  # ignored: the database numbers the log
        )
        await store.append_audit(entry)

    everything = await store.list_audit()
    assert [e.action for e in everything] == [f"action-{i}" for i in range(4, -1, -1)]
    assert len({e.id for e in everything}) == 5
    assert 999 not in {e.id for e in everything}
    assert [e.detail["i"] for e in await store.list_audit(request_id="r1")] == [4, 2, 0]
    assert [e.action for e in await store.list_audit(limit=2)] == ["action-4", "action-3"]
    assert everything[0].at == T0 + timedelta(seconds=4)


async def test_transcripts_save_load_replace(store: SqlStore) -> None:
    assert await store.load_transcript("room-1", "slack-main") == []
    first = [{"role": "user", "content": "deploy?"}]
    await store.save_transcript("room-1", "slack-main", first)
    assert await store.load_transcript("room-1", "slack-main") == first

    second: list[dict[str, Any]] = [
        *first,
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1"}]},
    ]
    await store.save_transcript("room-1", "slack-main", second)
    assert await store.load_transcript("room-1", "slack-main") == second
    assert await store.load_transcript("room-1", "teams-main") == []
    assert await store.load_transcript("room-2", "slack-main") == []


async def test_concurrent_transcript_saves(store: SqlStore) -> None:
    saves = [store.save_transcript("room", "chan", [{"n": i}]) for i in range(10)]
    await asyncio.gather(*saves)
    [message] = await store.load_transcript("room", "chan")
    assert message["n"] in range(10)


async def test_claim_once_has_one_winner_per_key(store: SqlStore, database: Database) -> None:
    other = SqlStore.from_url(database.url, schema=database.schema)
    try:
        racers = [s.claim_once("slack:message:C1:1.2") for _ in range(5) for s in (store, other)]
        assert (await asyncio.gather(*racers)).count(True) == 1
        assert await other.claim_once("slack:message:C1:3.4")
        assert not await store.claim_once("slack:message:C1:3.4")
    finally:
        await other.close()


async def test_old_claims_are_pruned(store: SqlStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(journal, "CLAIM_PRUNE_EVERY", 2)
    monkeypatch.setattr(journal, "CLAIM_RETENTION", timedelta(0))
    assert await store.claim_once("old")
    assert await store.claim_once("new")  # the second claim prunes everything before it
    assert await store.claim_once("old")
    assert not await store.claim_once("new")


CLICK = {"type": "block_actions", "actions": [{"action_id": "hitl_approve", "value": "r1"}]}


async def test_the_inbox_recognises_a_key_received_before(
    store: SqlStore, database: Database
) -> None:
    other = SqlStore.from_url(database.url, schema=database.schema)
    try:
        racers = [receive_one(s, "k1", "slack", CLICK) for _ in range(5) for s in (store, other)]
        assert (await asyncio.gather(*racers)).count(True) == 1
        assert not await receive_one(store, "k1", "teams", None)  # a key is taken on every surface
        assert await receive_one(store, "k2", "slack", None)  # handled before its ack: applied
        assert not await receive_one(other, "k2", "slack", None)
    finally:
        await other.close()


async def test_interactions_are_written_many_at_once(store: SqlStore) -> None:
    await receive_one(store, "old", "slack", CLICK)
    batch = [("a", CLICK), ("old", CLICK), ("b", None), ("a", CLICK), ("c", {**CLICK, "n": 3})]
    assert await store.receive("slack", batch) == [True, False, True, False, True]
    assert await store.receive("slack", []) == []
    soon = datetime.now(UTC) + timedelta(seconds=1)
    assert [e.key for e in await store.unapplied("slack", soon)] == ["old", "a", "c"]


async def test_unapplied_interactions_are_claimed_once(store: SqlStore, database: Database) -> None:
    await receive_one(store, "k1", "slack", CLICK)
    await receive_one(store, "k2", "slack", {**CLICK, "n": 2})
    await receive_one(store, "k3", "teams", CLICK)
    await receive_one(store, "k4", "slack", None)  # nothing to apply: never listed
    soon = datetime.now(UTC) + timedelta(seconds=1)

    left = await store.unapplied("slack", soon)
    assert [(e.key, e.surface, e.payload) for e in left] == [
        ("k1", "slack", CLICK),
        ("k2", "slack", {**CLICK, "n": 2}),
    ]
    assert left[0].received_at <= left[1].received_at < soon
    assert await store.unapplied("slack", soon, limit=1) == left[:1]
    assert await store.unapplied("slack", left[0].received_at) == []  # none received before
    other = SqlStore.from_url(database.url, schema=database.schema)
    try:
        racers = [s.mark_applied(["k1"]) for _ in range(5) for s in (store, other)]
        claims = [key for claimed in await asyncio.gather(*racers) for key in claimed]
        assert claims == ["k1"]  # one claim won
    finally:
        await other.close()
    assert await store.mark_applied(["k4", "missing", "k1"]) == []  # already, or unknown
    assert await store.mark_applied([]) == []
    assert [e.key for e in await store.unapplied("slack", soon)] == ["k2"]
    assert not await receive_one(store, "k1", "slack", CLICK)  # applied, still recognised


async def test_many_interactions_are_marked_in_one_write(store: SqlStore) -> None:
    keys = [f"k{n}" for n in range(300)]
    for key in keys:
        await receive_one(store, key, "slack", CLICK)
    assert sorted(await store.mark_applied([*keys, "missing"])) == sorted(keys)
    assert await store.unapplied("slack", datetime.now(UTC) + timedelta(seconds=1)) == []


async def test_applied_interactions_are_pruned(store: SqlStore) -> None:
    for key in ("old", "new", "unapplied"):
        await receive_one(store, key, "slack", CLICK)
    assert await store.mark_applied(["old"]) == ["old"]
    cut = datetime.now(UTC)
    await asyncio.sleep(0.01)
    assert await store.mark_applied(["new"]) == ["new"]

    assert await store.prune_inbox(cut) == 1
    assert await receive_one(store, "old", "slack", CLICK)  # forgotten
    assert not await receive_one(store, "new", "slack", CLICK)
    far = datetime.now(UTC) + timedelta(days=1)
    assert await store.prune_inbox(far) == 1  # "new"; an unapplied row is never pruned
    assert [e.key for e in await store.unapplied("slack", far)] == ["unapplied", "old"]


async def test_datetimes_come_back_aware_utc(store: SqlStore) -> None:
    india = timezone(timedelta(hours=5, minutes=30))
    created = datetime(2025, 6, 1, 12, 0, 0, 123456, tzinfo=india)
    await store.create_request(make_record(created_at=created, expires_at=None))
    record = await store.get_request("r1")
    assert record is not None
    assert record.created_at == created
    assert record.created_at.tzinfo == UTC
    assert record.created_at.hour == 6 and record.created_at.microsecond == 123456


async def test_naive_datetimes_are_refused(store: SqlStore) -> None:
    with pytest.raises(StatementError, match="naive datetime"):
        await store.create_request(make_record(created_at=datetime(2025, 1, 1)))
    assert await store.get_request("r1") is None


async def test_sqlite_runs_in_wal_with_a_busy_timeout(store: SqlStore, database: Database) -> None:
    if database.dialect != "sqlite":
        pytest.skip("SQLite settings")
    async with store.engine.connect() as conn:
        assert await conn.scalar(text("PRAGMA journal_mode")) == "wal"
        assert await conn.scalar(text("PRAGMA busy_timeout")) >= 1000
        assert await conn.scalar(text("PRAGMA foreign_keys")) == 1


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:", "sqlite+aiosqlite://"])
def test_in_memory_sqlite_is_refused(url: str) -> None:
    with pytest.raises(ValueError, match="in-memory"):
        SqlStore.from_url(url)


@pytest.mark.parametrize(
    ("url", "driver"),
    [
        ("sqlite:///x.db", "sqlite+aiosqlite"),
        ("postgresql://h/db", "postgresql+asyncpg"),
        ("postgres://h/db", "postgresql+asyncpg"),
        ("postgresql+asyncpg://h/db", "postgresql+asyncpg"),
    ],
)
def test_plain_urls_get_the_async_drivers(url: str, driver: str) -> None:
    assert async_url(url).drivername == driver


async def test_schema_revision_is_current(store: SqlStore) -> None:
    assert await store.current_revision() == "0022"
    assert await store.schema_revision_ok()


async def test_seize_run_takes_an_active_run_from_a_live_owner_and_nothing_else(
    store: SqlStore,
) -> None:
    later = datetime.now(UTC) + timedelta(hours=1)
    assert await store.claim_run("console:ann", "console", "killed", "ann", later)
    assert not await store.claim_run("console:ann", "console", "restarted", "ann", later)
    assert await store.seize_run("console:ann", "console", "restarted", later)
    assert await store.orphaned_runs(datetime.now(UTC)) == []  # the lease is the new owner's
    assert not await store.claim_run("console:ann", "console", "killed", "ann", later)
    await store.finish_run("console:ann", "console", "restarted")
    assert not await store.seize_run("console:ann", "console", "restarted", later)  # idle
    assert not await store.seize_run("console:bob", "console", "restarted", later)  # no row


async def test_a_stop_is_asked_on_a_run_and_ends_with_it(store: SqlStore) -> None:
    later = datetime.now(UTC) + timedelta(minutes=1)
    assert await store.claim_run("slack:C_1:1.0", "agent", "a", "ann", later)
    assert await store.claim_run("slack:CX1:2.0", "agent", "a", "bob", later)
    [run] = await store.active_runs("slack:C_1:", "agent")  # the _ is no wildcard
    assert (run.room_id, run.actor_id, run.stop_by) == ("slack:C_1:1.0", "ann", None)
    assert await store.active_runs("slack:C_1:", "other channel") == []
    assert await store.ask_stop("slack:C_1:1.0", "agent", "bob", "Stopped by Bob")
    [asked] = await store.stops_asked("a")
    assert (asked.room_id, asked.stop_by, asked.stop_reason) == (
        "slack:C_1:1.0",
        "bob",
        "Stopped by Bob",
    )
    await store.finish_run("slack:C_1:1.0", "agent", "a")
    assert await store.stops_asked("a") == []
    assert not await store.ask_stop("slack:C_1:1.0", "agent", "bob", "Stopped by Bob")  # ended
    assert await store.claim_run("slack:C_1:1.0", "agent", "b", "ann", later)
    assert (await store.active_run("slack:C_1:1.0", "agent")).stop_by is None  # type: ignore[union-attr]
