"""Every migration runs up and down on both dialects, and the result matches bot.store.schema."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection, inspect, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.audit.chain import seal_chain, verify_chain
from bot.records import Asked, GateRun, Grant, RequestStatus, Settlement, Token, Vote
from bot.store import downgrade, head_revision, open_store, upgrade
from bot.store.admin_sessions import AdminSessionTables
from bot.store.copies import CopyTables
from bot.store.doors import DoorTables
from bot.store.push_configs import PushConfig, PushConfigTables
from bot.store.schema import JsonType, UTCDateTime, metadata
from bot.store.votes import VoteTables
from bot.store.webhooks import Added, WebhookDelivery, WebhookTables
from tests.bot.store.conftest import Database, receive_one

REPO_ROOT = Path(__file__).resolve().parents[3]
TABLES = {
    "requests", "audit_log", "transcripts", "claims", "runs", "holders", "proposals", "health",
    "inbox", "gate_runs", "grants", "api_tokens", "door_requests", "webhook_deliveries", "votes",
    "message_copies", "admin_sessions", "push_configs",
}  # fmt: skip
UNTIL_0017 = {"transitions"}  # 0001 to 0016 (the audit log records transitions since 0017)
HOLD_TABLES = {"holders", "proposals"}
GATE_TABLES = {"gate_runs", "grants"}  # 0007
DOOR_TABLES = {"api_tokens", "door_requests"}  # 0008
WEBHOOK_TABLES = {"webhook_deliveries"}  # 0009
VOTE_TABLES = {"votes"}  # 0010
COPY_TABLES = {"message_copies"}  # 0014
SESSION_TABLES = {"admin_sessions"}  # 0018
PUSH_TABLES = {"push_configs"}  # 0021
LATER = {"health", "inbox", *GATE_TABLES, *DOOR_TABLES, *WEBHOOK_TABLES, *VOTE_TABLES,
         *COPY_TABLES, *SESSION_TABLES, *PUSH_TABLES}  # after 0003  # fmt: skip
HOLD_COLUMNS = {"held_by", "settled_proposal"}


async def table_names(engine: AsyncEngine) -> set[str]:
    async with engine.connect() as conn:
        return set(await conn.run_sync(lambda sync: inspect(sync).get_table_names()))


def schema_differences(conn: Connection) -> list[object]:
    return list(compare_metadata(MigrationContext.configure(conn), metadata))


async def test_upgrade_downgrade_upgrade(database: Database, engine: AsyncEngine) -> None:
    await upgrade(database.url, schema=database.schema)
    assert await table_names(engine) == {*TABLES, "alembic_version"}

    await downgrade(database.url, "base", schema=database.schema)
    assert await table_names(engine) == {"alembic_version"}

    await upgrade(database.url, schema=database.schema)
    assert await table_names(engine) == {*TABLES, "alembic_version"}


async def add_request(engine: AsyncEngine, request_id: str, **columns: str) -> None:
    """A pending request and its `created` transition, written with only the columns every
    revision has (and `columns`): today's store writes columns an older schema lacks."""
    now = datetime.now(UTC)
    values: dict[str, Any] = {
        "id": request_id, "tool_name": "t", "arguments": {}, "room_id": "", "tool_call_id": "",
        "channel_id": "", "channel_type": "ai", "detached": False, "status": "pending",
        "created_at": now, "message_refs": {}, **columns,
    }  # fmt: skip
    typed: dict[str, Any] = {
        "arguments": JsonType, "message_refs": JsonType, "created_at": UTCDateTime(),
        "detached": sa.Boolean(),
    }  # fmt: skip
    requests = sa.table("requests", *(sa.column(name, typed.get(name)) for name in values))
    transitions = sa.table(
        "transitions", sa.column("request_id"), sa.column("to_status"),
        sa.column("at", UTCDateTime()), sa.column("detail", JsonType),
    )  # fmt: skip
    async with engine.begin() as conn:
        await conn.execute(sa.insert(requests).values(**values))
        created = {"request_id": request_id, "to_status": "pending", "at": now, "detail": {}}
        await conn.execute(sa.insert(transitions).values(**created))


async def request_columns(engine: AsyncEngine) -> set[str]:
    async with engine.connect() as conn:
        columns = await conn.run_sync(lambda sync: inspect(sync).get_columns("requests"))
    return {column["name"] for column in columns}


async def test_0003_holds_up_and_down(database: Database, engine: AsyncEngine) -> None:
    """0003 adds the holds (requests.held_by, settled_proposal; holders; proposals), and its
    downgrade takes exactly them away, keeping the requests written meanwhile."""
    await upgrade(database.url, "0002", schema=database.schema)
    assert await table_names(engine) == {
        *TABLES - HOLD_TABLES - LATER,
        *UNTIL_0017,
        "alembic_version",
    }
    assert not HOLD_COLUMNS & await request_columns(engine)

    await upgrade(database.url, "0003", schema=database.schema)
    assert await table_names(engine) == {*TABLES - LATER, *UNTIL_0017, "alembic_version"}
    assert await request_columns(engine) >= HOLD_COLUMNS
    await add_request(engine, "r1", held_by="worker-1")
    store = await open_store(database.url, migrate=False, schema=database.schema)
    try:
        await store.beat("worker-1", datetime.now(UTC) + timedelta(minutes=1))
    finally:
        await store.close()

    await downgrade(database.url, "0002", schema=database.schema)
    assert await table_names(engine) == {
        *TABLES - HOLD_TABLES - LATER,
        *UNTIL_0017,
        "alembic_version",
    }
    assert not HOLD_COLUMNS & await request_columns(engine)
    async with engine.connect() as conn:
        assert (await conn.execute(text("SELECT id FROM requests"))).scalars().all() == ["r1"]

    await upgrade(database.url, schema=database.schema)
    async with engine.connect() as conn:
        assert await conn.run_sync(schema_differences) == []


async def test_0004_undeliverable_up_and_down(database: Database, engine: AsyncEngine) -> None:
    """0004 lets a request settle as undeliverable; the table is rebuilt on SQLite without
    losing a row of it or of the tables referring to it (transitions, proposals). Its downgrade
    reads undeliverable requests as withdrawn, keeping their reason."""
    await upgrade(database.url, "0003", schema=database.schema)
    for request_id in ("r1", "r2"):
        await add_request(engine, request_id)
    store = await open_store(database.url, migrate=False, schema=database.schema)
    try:
        with pytest.raises(IntegrityError):  # the status is not allowed yet
            await store.settle(Settlement("r1", RequestStatus.UNDELIVERABLE, datetime.now(UTC)))
    finally:
        await store.close()

    await upgrade(database.url, "0004", schema=database.schema)
    store = await open_store(database.url, migrate=False, schema=database.schema)
    try:
        undelivered = Settlement(
            "r1", RequestStatus.UNDELIVERABLE, datetime.now(UTC), reason="channel_not_found"
        )
        assert await store.settle(undelivered)
    finally:
        await store.close()
    async with engine.connect() as conn:
        status = await conn.execute(text("SELECT status FROM requests WHERE id = 'r1'"))
    assert status.scalar_one() == "undeliverable"
    assert await row_count(engine, "requests") == 2
    assert await row_count(engine, "transitions") == 2  # the two created (today's store
    # writes no transitions: the audit log records them)

    await downgrade(database.url, "0003", schema=database.schema)
    async with engine.connect() as conn:
        rows = (await conn.execute(text("SELECT id, status, reason FROM requests"))).all()
    assert sorted(tuple(row) for row in rows) == [
        ("r1", "cancelled", "channel_not_found"),
        ("r2", "pending", None),
    ]
    assert await row_count(engine, "transitions") == 2

    await upgrade(database.url, schema=database.schema)
    async with engine.connect() as conn:
        assert await conn.run_sync(schema_differences) == []


async def test_0005_health_up_and_down(database: Database, engine: AsyncEngine) -> None:
    """0005 adds the one-row table the readiness check writes; its downgrade takes it away."""
    await upgrade(database.url, "0004", schema=database.schema)
    assert "health" not in await table_names(engine)
    await upgrade(database.url, "0005", schema=database.schema)
    assert await row_count(engine, "health") == 1
    store = await open_store(database.url, migrate=False, schema=database.schema)
    try:
        await store.probe_write("worker-1")
        await store.probe_write("worker-2")
    finally:
        await store.close()
    async with engine.connect() as conn:
        rows = (await conn.execute(text("SELECT id, checked_by FROM health"))).all()
    assert [tuple(row) for row in rows] == [(1, "worker-2")]

    await downgrade(database.url, "0004", schema=database.schema)
    assert "health" not in await table_names(engine)
    await upgrade(database.url, schema=database.schema)
    async with engine.connect() as conn:
        assert await conn.run_sync(schema_differences) == []


async def test_0006_inbox_up_and_down(database: Database, engine: AsyncEngine) -> None:
    """0006 adds the inbox of interactions written before their ack; its downgrade takes it
    away, and nothing else."""
    await upgrade(database.url, "0005", schema=database.schema)
    assert "inbox" not in await table_names(engine)
    await upgrade(database.url, "0006", schema=database.schema)
    store = await open_store(database.url, migrate=False, schema=database.schema)
    try:
        assert await receive_one(store, "k1", "slack", {"type": "block_actions"})
        assert await receive_one(store, "k2", "slack", None)
        assert not await receive_one(store, "k1", "slack", {"type": "block_actions"})
        soon = datetime.now(UTC) + timedelta(seconds=1)
        assert [e.key for e in await store.unapplied("slack", soon)] == ["k1"]
    finally:
        await store.close()
    async with engine.connect() as conn:
        rows = (await conn.execute(text("SELECT key FROM inbox WHERE payload IS NULL"))).all()
    assert [tuple(row) for row in rows] == [("k2",)]  # SQL NULL, not JSON null

    await downgrade(database.url, "0005", schema=database.schema)
    later = {"inbox"} | GATE_TABLES | DOOR_TABLES | WEBHOOK_TABLES | VOTE_TABLES | COPY_TABLES
    later |= SESSION_TABLES | PUSH_TABLES
    assert await table_names(engine) == {*TABLES - later, *UNTIL_0017, "alembic_version"}
    await upgrade(database.url, schema=database.schema)
    assert await row_count(engine, "inbox") == 0
    async with engine.connect() as conn:
        assert await conn.run_sync(schema_differences) == []


async def test_0007_gates_up_and_down(database: Database, engine: AsyncEngine) -> None:
    """0007 adds gated runs, grants and a request's run outcome; its downgrade takes exactly
    them away, keeping the requests (the table is rebuilt on SQLite) and what refers to them."""
    await upgrade(database.url, "0006", schema=database.schema)
    assert not GATE_TABLES & await table_names(engine)
    assert "run_outcome" not in await request_columns(engine)
    await add_request(engine, "r1")

    await upgrade(database.url, "0007", schema=database.schema)
    assert await table_names(engine) >= GATE_TABLES
    store = await open_store(database.url, migrate=False, schema=database.schema)
    try:
        now = datetime.now(UTC)
        run = GateRun("r1", "deploy", "w1", now, now + timedelta(seconds=30), request_id="r1")
        assert await store.claim_gate_run(run) is None
        done = dataclasses.replace(run, finished_at=now, result="{}", outcome="ok")
        assert await store.finish_gate_run(done)
        async with engine.connect() as conn:  # today's store reads columns 0007 lacks
            outcome = await conn.execute(text("SELECT run_outcome FROM requests"))
            assert outcome.scalar_one() == "ok"
        grant = Grant("g1", "room", "alice", "deploy", {"env": "staging"}, now,
                      now + timedelta(hours=1), "bob", request_id="r1")  # fmt: skip
        assert await store.add_grant(grant) == grant
    finally:
        await store.close()

    await downgrade(database.url, "0006", schema=database.schema)
    assert not GATE_TABLES & await table_names(engine)
    assert "run_outcome" not in await request_columns(engine)
    assert await row_count(engine, "requests") == 1
    assert await row_count(engine, "transitions") == 1
    await upgrade(database.url, schema=database.schema)
    async with engine.connect() as conn:
        assert await conn.run_sync(schema_differences) == []


async def test_0008_doors_up_and_down(database: Database, engine: AsyncEngine) -> None:
    """0008 adds the doors' tokens and who asked each door request; its downgrade takes
    exactly them away."""
    await upgrade(database.url, "0007", schema=database.schema)
    assert not DOOR_TABLES & await table_names(engine)
    await upgrade(database.url, "0008", schema=database.schema)
    store = await open_store(database.url, migrate=False, schema=database.schema)
    try:
        tables = DoorTables(store)
        now = datetime.now(UTC)
        assert await tables.add_token(Token("ci", "hash", "whsec_x", now))
        assert not await tables.add_token(Token("ci", "hash2", "whsec_y", now))
        asked = Asked("r1", "ci", "slack:C1", now, idempotency_key="k1")
        assert await tables.reserve_door(asked) == asked
    finally:
        await store.close()
    await downgrade(database.url, "0007", schema=database.schema)
    assert not DOOR_TABLES & await table_names(engine)
    await upgrade(database.url, schema=database.schema)
    async with engine.connect() as conn:
        assert await conn.run_sync(schema_differences) == []


async def test_0009_webhooks_up_and_down(database: Database, engine: AsyncEngine) -> None:
    """0009 adds the webhook deliveries, one per request; its downgrade takes them away."""
    await upgrade(database.url, "0008", schema=database.schema)
    assert not WEBHOOK_TABLES & await table_names(engine)
    await upgrade(database.url, "0009", schema=database.schema)
    # Today's WebhookTables reads the columns 0021 added: 0009's table is written in SQL.
    row = ("INSERT INTO webhook_deliveries (id, request_id, requester, url, body, attempts, "
           "first_at, next_at) VALUES ('{}', 'r1', 'ci', 'https://example.com/hook', '{{}}', 0, "
           "'2026-01-01 00:00:00', '2026-01-01 00:00:00')")  # fmt: skip
    async with engine.begin() as conn:
        await conn.execute(text(row.format("d1")))
    with pytest.raises(IntegrityError):  # one delivery a request
        async with engine.begin() as conn:
            await conn.execute(text(row.format("d2")))
    await downgrade(database.url, "0008", schema=database.schema)
    gone = WEBHOOK_TABLES | VOTE_TABLES | COPY_TABLES | SESSION_TABLES | PUSH_TABLES
    assert await table_names(engine) == {*TABLES - gone, *UNTIL_0017, "alembic_version"}
    await upgrade(database.url, schema=database.schema)
    async with engine.connect() as conn:
        assert await conn.run_sync(schema_differences) == []


async def test_0010_votes_up_and_down(database: Database, engine: AsyncEngine) -> None:
    """0010 adds the votes, one per person and request; its downgrade takes them away and
    keeps the requests."""
    await upgrade(database.url, "0009", schema=database.schema)
    assert not VOTE_TABLES & await table_names(engine)
    await add_request(engine, "r1")
    await upgrade(database.url, "0010", schema=database.schema)
    store = await open_store(database.url, migrate=False, schema=database.schema)
    try:
        tables = VoteTables(store)
        now = datetime.now(UTC)
        assert await tables.cast(Vote("r1", "bob", True, "d1", now))
        assert not await tables.cast(Vote("r1", "bob", False, "d1", now, reason="no"))
        assert await tables.cast(Vote("r1", "carol", False, "d1", now, reason="no"))
        assert [(v.voter, v.approve) for v in await tables.votes("r1")] == [
            ("bob", True), ("carol", False),
        ]  # fmt: skip
    finally:
        await store.close()
    await downgrade(database.url, "0009", schema=database.schema)
    assert await table_names(engine) == {
        *TABLES - VOTE_TABLES - COPY_TABLES - SESSION_TABLES - PUSH_TABLES,
        *UNTIL_0017,
        "alembic_version",
    }
    assert await row_count(engine, "requests") == 1
    await upgrade(database.url, schema=database.schema)
    async with engine.connect() as conn:
        assert await conn.run_sync(schema_differences) == []


async def test_0014_message_copies_up_and_down(database: Database, engine: AsyncEngine) -> None:
    """0014 keeps where each copy of a request was posted, by request, surface and room; its
    downgrade takes them away and keeps the requests."""
    await upgrade(database.url, "0010", schema=database.schema)
    assert not COPY_TABLES & await table_names(engine)
    await add_request(engine, "r1")
    await upgrade(database.url, "0014", schema=database.schema)
    store = await open_store(database.url, migrate=False, schema=database.schema)
    try:
        copies = CopyTables(store)
        await copies.keep(
            "r1", "slack", "slack:C0APPROVALS:", {"channel": "C0APPROVALS", "ts": "1"}
        )
        await copies.keep("r1", "slack", "slack:D0BOB:", {"channel": "D0BOB", "ts": "2"})
        assert await copies.ref("r1", "slack", "slack:D0BOB:") == {"channel": "D0BOB", "ts": "2"}
    finally:
        await store.close()
    await downgrade(database.url, "0010", schema=database.schema)
    gone = COPY_TABLES | SESSION_TABLES | PUSH_TABLES
    assert await table_names(engine) == {*TABLES - gone, *UNTIL_0017, "alembic_version"}
    assert await row_count(engine, "requests") == 1
    await upgrade(database.url, schema=database.schema)
    async with engine.connect() as conn:
        assert await conn.run_sync(schema_differences) == []


async def test_0016_admin_commands_up_and_down(database: Database, engine: AsyncEngine) -> None:
    """0016 indexes when requests were decided; its downgrade drops the index alone."""

    def indexes(conn: Connection) -> set[str]:
        return {str(index["name"]) for index in inspect(conn).get_indexes("requests")}

    await upgrade(database.url, "0010", schema=database.schema)
    await add_request(engine, "r1")
    await upgrade(database.url, "0016", schema=database.schema)
    async with engine.connect() as conn:
        assert "ix_requests_settled_at" in await conn.run_sync(indexes)
    await downgrade(database.url, "0010", schema=database.schema)
    async with engine.connect() as conn:
        assert "ix_requests_settled_at" not in await conn.run_sync(indexes)
    assert await row_count(engine, "requests") == 1
    await upgrade(database.url, schema=database.schema)
    async with engine.connect() as conn:
        assert await conn.run_sync(schema_differences) == []


async def test_0018_admin_sessions_up_and_down(database: Database, engine: AsyncEngine) -> None:
    """0018 keeps the admin console's signed-in sessions; its downgrade takes them away (every
    admin signs in again) and nothing else."""
    await upgrade(database.url, "0017", schema=database.schema)
    assert not SESSION_TABLES & await table_names(engine)
    await upgrade(database.url, "0018", schema=database.schema)
    store = await open_store(database.url, migrate=False, schema=database.schema)
    try:
        sessions = AdminSessionTables(store)
        now = datetime.now(UTC)
        await sessions.open_session("k1", "token:alice", now, now + timedelta(hours=1))
        await sessions.open_session("k0", "token:old", now - timedelta(hours=2), now)
        assert await sessions.session_holder("k1", now) == "token:alice"
        assert await sessions.session_holder("k0", now) is None  # expired
        assert await sessions.close_session("k1")
        assert await sessions.session_holder("k1", now) is None
    finally:
        await store.close()
    await downgrade(database.url, "0017", schema=database.schema)
    assert await table_names(engine) == {*TABLES - SESSION_TABLES - PUSH_TABLES, "alembic_version"}
    await upgrade(database.url, schema=database.schema)
    async with engine.connect() as conn:
        assert await conn.run_sync(schema_differences) == []


async def test_0011_audit_chain_up_and_down(database: Database, engine: AsyncEngine) -> None:
    """0011 adds the chain's columns: rows written before it are sealed by the first sealer,
    in id order, and verify; its downgrade drops the columns and keeps the rows."""
    await upgrade(database.url, "0010", schema=database.schema)
    old = sa.table("audit_log", sa.column("at", UTCDateTime()), sa.column("action"),
                   sa.column("detail", JsonType))  # fmt: skip
    async with engine.begin() as conn:
        for action in ("request.created", "request.resolved"):
            await conn.execute(sa.insert(old).values(
                at=datetime.now(UTC), action=action, detail={}
            ))  # fmt: skip
    await upgrade(database.url, "0011", schema=database.schema)
    store = await open_store(database.url, migrate=False, schema=database.schema)
    try:
        assert await seal_chain(store) == 2
        report = await verify_chain(store)
        assert report.intact and report.checked == 2
    finally:
        await store.close()
    await downgrade(database.url, "0010", schema=database.schema)
    assert await row_count(engine, "audit_log") == 2
    async with engine.connect() as conn:
        columns = await conn.run_sync(
            lambda sync: {c["name"] for c in inspect(sync).get_columns("audit_log")}
        )
    assert not {"chain_seq", "prev_hash", "hash"} & columns
    await upgrade(database.url, schema=database.schema)
    async with engine.connect() as conn:
        assert await conn.run_sync(schema_differences) == []


async def row_count(engine: AsyncEngine, table: str) -> int:
    async with engine.connect() as conn:
        return int((await conn.execute(text(f"SELECT count(*) FROM {table}"))).scalar_one())


async def test_head_matches_the_schema_module(database: Database, engine: AsyncEngine) -> None:
    await upgrade(database.url, schema=database.schema)
    async with engine.connect() as conn:
        assert await conn.run_sync(schema_differences) == []


async def test_open_store_migrates_once(database: Database) -> None:
    for _ in range(2):
        store = await open_store(database.url, schema=database.schema)
        try:
            assert await store.current_revision() == head_revision()
        finally:
            await store.close()


UPGRADE_SCRIPT = """
import asyncio, sys
from bot.store import upgrade
asyncio.run(upgrade(sys.argv[1], schema=sys.argv[2] or None))
"""


async def upgrade_in_subprocess(database: Database) -> int:
    args = [database.url, database.schema or ""]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", UPGRADE_SCRIPT, *args, env=env
    )
    return await process.wait()


@pytest.mark.subprocess
async def test_concurrent_upgrades_from_processes(database: Database, engine: AsyncEngine) -> None:
    # Workers starting at once each run the upgrade; one migrates, the others wait for it
    # (advisory lock on PostgreSQL, write lock on SQLite) and then find the schema at head.
    exit_codes = await asyncio.gather(*(upgrade_in_subprocess(database) for _ in range(3)))
    assert exit_codes == [0, 0, 0]
    assert await table_names(engine) == {*TABLES, "alembic_version"}


async def test_concurrent_upgrades_in_one_process(database: Database, engine: AsyncEngine) -> None:
    await asyncio.gather(*(upgrade(database.url, schema=database.schema) for _ in range(4)))
    assert await table_names(engine) == {*TABLES, "alembic_version"}


async def test_open_store_without_migrate_leaves_the_database_alone(
    database: Database, engine: AsyncEngine
) -> None:
    store = await open_store(database.url, migrate=False, schema=database.schema)
    try:
        assert await store.current_revision() is None
        assert not await store.schema_revision_ok()
    finally:
        await store.close()
    assert await table_names(engine) == set()


async def test_0021_push_configs_up_and_down(database: Database, engine: AsyncEngine) -> None:
    """0021 adds A2A push configs and a delivery per request and push config (the callback
    URL's still one a request); its downgrade drops the push deliveries and keeps the rest."""
    await upgrade(database.url, "0020", schema=database.schema)
    assert not PUSH_TABLES & await table_names(engine)
    await upgrade(database.url, "0022", schema=database.schema)  # the rows' code needs 0022
    store = await open_store(database.url, migrate=False, schema=database.schema)
    try:
        tables = WebhookTables(store)
        now = datetime.now(UTC)
        delivery = WebhookDelivery("d1", "r1", "ci", "https://example.com/hook", "{}", 0, now, now)
        assert await tables.add(delivery) is Added.ADDED
        assert await tables.add(dataclasses.replace(delivery, id="d2")) is Added.EXISTS
        pushed = dataclasses.replace(delivery, id="d3", push_config="c1", push_token="t")
        assert await tables.add(pushed) is Added.ADDED
        assert await tables.add(dataclasses.replace(pushed, id="d4")) is Added.EXISTS
        configs = PushConfigTables(store)
        config = PushConfig("r1", "c1", "ci", "https://example.com/a2a", "t", now)
        assert await configs.put(config, cap=1)
        assert not await configs.put(dataclasses.replace(config, id="c2"), cap=1)
        assert await configs.of_request("r1") == [config]
    finally:
        await store.close()
    await downgrade(database.url, "0020", schema=database.schema)
    assert await table_names(engine) == {*TABLES - PUSH_TABLES, "alembic_version"}
    assert await row_count(engine, "webhook_deliveries") == 1  # the callback URL's
    await upgrade(database.url, schema=database.schema)
    async with engine.connect() as conn:
        assert await conn.run_sync(schema_differences) == []
