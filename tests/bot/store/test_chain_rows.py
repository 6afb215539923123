"""The audit log's hash chain on both databases: sealed after commit, verified, and every kind
of tampering with the table (a row changed, deleted, inserted, reordered) named by its row."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, delete, insert, select, update

from bot.audit.chain import AuditSealer, ChainCheck, seal_chain, verify_chain
from bot.records import RequestRecord, RequestStatus, Settlement
from bot.store import SqlStore, open_store
from bot.store.tables import audit
from tests.bot.store.conftest import Database


def record(request_id: str, **values: Any) -> RequestRecord:
    now = datetime.now(UTC)
    fields: dict[str, Any] = {
        "id": request_id, "tool_name": "deploy", "arguments": {"env": "prod"},
        "room_id": "slack:C1:1.0", "tool_call_id": f"toolu_{request_id}", "channel_id": "slack",
        "channel_type": "ai", "actor_id": "U0ALICE", "detached": False, "created_at": now,
        "expires_at": now + timedelta(minutes=5),
    }  # fmt: skip
    return RequestRecord(**{**fields, **values})


async def lifecycles(store: SqlStore, prefix: str, count: int) -> None:
    """`count` requests asked, posted and answered: four audit rows each."""
    for n in range(count):
        request_id = f"{prefix}-{n}"
        await store.create_request(record(request_id))
        await store.set_message_ref(request_id, "slack", {"channel": "C1", "ts": f"{n}.0"})
        await store.set_message_ref(request_id, "slack", {"channel": "C1", "ts": f"{n}.1"})
        answer = Settlement(
            request_id, RequestStatus.RESOLVED, datetime.now(UTC), result='{"approved":true}',
            by="U0BOB",
        )  # fmt: skip
        assert await store.settle(answer)


async def rows(store: SqlStore) -> list[Any]:
    def read(conn: Connection) -> list[Any]:
        return list(conn.execute(select(audit).order_by(audit.c.chain_seq)))

    return await store.read(read)


async def test_rows_are_sealed_into_one_chain_that_verifies(store: SqlStore) -> None:
    await lifecycles(store, "r", 5)
    assert {row.chain_seq for row in await rows(store)} == {None}  # written unsealed
    assert await seal_chain(store) == 15  # created, delivered (once per surface), resolved
    sealed = await rows(store)
    assert [row.chain_seq for row in sealed] == list(range(1, 16))
    assert [row.prev_hash for row in sealed[1:]] == [row.hash for row in sealed[:-1]]
    assert [row.action for row in sealed[:3]] == [
        "request.created", "request.delivered", "request.resolved",
    ]  # fmt: skip
    assert sealed[1].detail == {"surface": "slack", "ref": {"channel": "C1", "ts": "0.0"}}
    assert sealed[0].detail["arguments"] == {"env": "prod"}
    report = await verify_chain(store)
    assert report.intact and report.checked == 15 and report.first_bad_id is None
    assert report.line().startswith("15 rows checked, chain intact")
    await lifecycles(store, "s", 1)  # a later seal extends the chain
    assert (await verify_chain(store)).checked == 18


async def tampered(store: SqlStore, change: Any) -> str:
    """Three lifecycles sealed, then `change` run on the table; verify's one line."""
    await lifecycles(store, "r", 3)
    await seal_chain(store)
    await store.write(change)
    report = await verify_chain(store)
    assert not report.intact and report.problem is not None
    assert report.problem.startswith(f"row id {report.first_bad_id} (chain_seq ")
    return report.problem


def row_at(conn: Connection, seq: int) -> Any:
    return conn.execute(select(audit).where(audit.c.chain_seq == seq)).one()


async def test_an_edited_answer_is_named(store: SqlStore) -> None:
    def edit(conn: Connection) -> None:
        resolved = row_at(conn, 6)
        assert resolved.action == "request.resolved"
        conn.execute(
            update(audit).where(audit.c.id == resolved.id)
            .values(detail={"result": '{"approved":false}'})
        )  # fmt: skip

    problem = await tampered(store, edit)
    assert "chain_seq 6, request.resolved" in problem and "content changed" in problem


async def test_a_deleted_row_is_named_by_the_row_after_the_gap(store: SqlStore) -> None:
    def drop(conn: Connection) -> None:
        conn.execute(delete(audit).where(audit.c.chain_seq == 4))

    problem = await tampered(store, drop)
    assert "(chain_seq 5, request.delivered" in problem
    assert "chain_seq 4 missing before it: deleted" in problem


async def test_an_inserted_row_is_named(store: SqlStore) -> None:
    def backdated(conn: Connection) -> None:  # unsealed: the sealer puts it at the end
        conn.execute(insert(audit).values(
            at=datetime.now(UTC) - timedelta(days=2), action="request.resolved",
            request_id="r-0", actor_id="U0MALLORY", detail={"result": "yes"},
        ))  # fmt: skip

    problem = await tampered(store, backdated)
    assert "(chain_seq 10, request.resolved" in problem and "inserted after the fact" in problem

    def forged(conn: Connection) -> None:  # sealed, with a hash made up
        conn.execute(insert(audit).values(
            at=datetime.now(UTC), action="grant.created", request_id=None, actor_id="U0MALLORY",
            detail={}, chain_seq=11, prev_hash="0" * 64, hash="f" * 64,
        ))  # fmt: skip

    await store.write(lambda conn: conn.execute(delete(audit).where(audit.c.chain_seq == 10)))
    await store.write(forged)
    problem = (await verify_chain(store)).problem or ""
    assert "chain_seq 10 missing" in problem  # the backdated row's removal shows too


async def test_a_forged_row_at_the_end_is_named(store: SqlStore) -> None:
    def forged(conn: Connection) -> None:
        head = row_at(conn, 9)
        conn.execute(insert(audit).values(
            at=datetime.now(UTC), action="grant.created", request_id=None, actor_id="U0MALLORY",
            detail={}, chain_seq=10, prev_hash=head.hash, hash="f" * 64,
        ))  # fmt: skip

    problem = await tampered(store, forged)
    assert "(chain_seq 10, grant.created" in problem and "hash mismatch" in problem


async def test_two_rows_swapped_are_named(store: SqlStore) -> None:
    def swap(conn: Connection) -> None:
        first, second = row_at(conn, 2), row_at(conn, 3)
        for row, other in ((first, second), (second, first)):
            conn.execute(update(audit).where(audit.c.id == row.id).values(
                at=other.at, action=other.action, actor_id=other.actor_id, detail=other.detail,
            ))  # fmt: skip

    problem = await tampered(store, swap)
    assert "(chain_seq 2, request.resolved" in problem and "content changed" in problem


async def test_a_reordered_chain_is_named(store: SqlStore) -> None:
    def reorder(conn: Connection) -> None:  # places swapped, hashes kept
        first, second = row_at(conn, 2), row_at(conn, 3)
        conn.execute(update(audit).where(audit.c.id == first.id).values(chain_seq=-1))
        conn.execute(update(audit).where(audit.c.id == second.id).values(chain_seq=2))
        conn.execute(update(audit).where(audit.c.id == first.id).values(chain_seq=3))

    problem = await tampered(store, reorder)
    assert "(chain_seq 2, request.resolved" in problem
    assert "not the hash of the row before it" in problem


async def test_two_workers_writing_and_sealing_at_once_keep_one_chain(
    database: Database,
) -> None:
    stores = [await open_store(database.url, schema=database.schema) for _ in range(2)]
    sealers = [AuditSealer(store, every=0.005) for store in stores]
    try:
        for sealer in sealers:
            sealer.start()
        await asyncio.gather(*(
            lifecycles(store, f"w{n}-{task}", 15)
            for n, store in enumerate(stores) for task in range(3)
        ))  # fmt: skip
        for sealer in sealers:
            await sealer.stop()
        sealed = await rows(stores[0])
        assert len(sealed) == 2 * 3 * 15 * 3
        assert [row.chain_seq for row in sealed] == list(range(1, len(sealed) + 1))
        for store in stores:
            report = await verify_chain(store)
            assert report.intact and report.checked == len(sealed), report.problem
    finally:
        for store in stores:
            await store.close()


async def test_a_chain_check_reuses_its_report_for_a_while(store: SqlStore) -> None:
    await lifecycles(store, "r", 2)
    check, fresh = ChainCheck(store, max_age=3600), ChainCheck(store, max_age=0)
    first, second = await asyncio.gather(check(), check())
    assert first is second and first.checked == 6

    def edit(conn: Connection) -> None:
        conn.execute(update(audit).where(audit.c.chain_seq == 2).values(actor_id="U9"))

    await store.write(edit)
    assert (await check()).intact  # within max_age: the report as it was
    assert (await fresh()).first_bad_id is not None
