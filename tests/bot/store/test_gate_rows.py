"""bot/store/gate_rows.py on both dialects: a run is claimed once and finished once, whatever
races for it; grants are found by room, actor and tool, listed by room, revoked once."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

from bot.records import GateRun, Grant, RequestRecord
from bot.store import SqlStore
from tests.bot.store.conftest import Database

NOW = datetime.now(UTC)
HOUR = timedelta(hours=1)


def run(worker: str, key: str = "r1") -> GateRun:
    return GateRun(key, "deploy", worker, NOW, NOW + HOUR, request_id="r1")


async def test_a_run_is_claimed_by_one_of_many_racers(store: SqlStore, database: Database) -> None:
    await store.create_request(RequestRecord(id="r1", tool_name="approveToolCall", arguments={}))
    other = SqlStore.from_url(database.url, schema=database.schema)
    try:
        claims = [s.claim_gate_run(run(f"w{i}")) for i in range(5) for s in (store, other)]
        results = await asyncio.gather(*claims)
    finally:
        await other.close()
    assert results.count(None) == 1
    winner = f"w{results.index(None) // 2}"
    assert {r.worker for r in results if r is not None} == {winner}

    await store.renew_gate_run("r1", "someone-else", NOW + 2 * HOUR)  # not theirs
    assert await store.gate_run("r1") == run(winner)
    await store.renew_gate_run("r1", winner, NOW + 2 * HOUR)
    renewed = await store.gate_run("r1")
    assert renewed is not None and renewed.lease_until == NOW + 2 * HOUR

    done = dataclasses.replace(run(winner), finished_at=NOW, result="{}", outcome="ok")
    assert not await store.finish_gate_run(dataclasses.replace(done, worker="someone-else"))
    assert await store.finish_gate_run(done, actor_id="U0A")
    assert not await store.finish_gate_run(dataclasses.replace(done, outcome="again"))
    finished = await store.gate_run("r1")
    assert finished is not None and (finished.result, finished.outcome) == ("{}", "ok")
    record = await store.get_request("r1")
    assert record is not None and record.run_outcome == "ok"
    (ran,) = [e for e in await store.list_audit() if e.action == "tool.ran"]
    assert ran.request_id == "r1" and ran.actor_id == "U0A" and ran.detail["outcome"] == "ok"


BASE = Grant("g", "slack:C1:1.0", "U0A", "deploy", {}, NOW, NOW + HOUR, "U0B")


def grant(grant_id: str, **changes: Any) -> Grant:
    return dataclasses.replace(BASE, id=grant_id, **changes)


async def test_grants_are_found_by_room_actor_and_tool(store: SqlStore) -> None:
    for made in (
        grant("g1"), grant("g2", actor_id=None), grant("g3", room_id="slack:C1:2.0"),
        grant("g4", tool_name="rollback"), grant("g5", expires_at=NOW - HOUR),
        grant("g6", room_id="slack:C1_:1.0"), grant("g7", request_id="r7"),
    ):  # fmt: skip
        assert await store.add_grant(made) == made
    again = grant("g8", request_id="r7")  # the same approval, resumed: its first grant
    assert (await store.add_grant(again)).id == "g7"

    live = await store.live_grants("slack:C1:1.0", "U0A", "deploy", NOW)
    assert [g.id for g in live] == ["g1", "g7"]
    assert [g.id for g in await store.live_grants("slack:C1:1.0", None, "deploy", NOW)] == ["g2"]
    listed = await store.list_grants(room_prefix="slack:C1:", live_at=NOW)
    assert sorted(g.id for g in listed) == ["g1", "g2", "g3", "g4", "g7"]  # not C1_ (a LIKE _)
    assert len(await store.list_grants()) == 7
    created = [e for e in await store.list_audit() if e.action == "grant.created"]
    assert len(created) == 7


async def test_a_grant_is_revoked_once(store: SqlStore, database: Database) -> None:
    await store.add_grant(grant("g1"))
    other = SqlStore.from_url(database.url, schema=database.schema)
    try:
        revokes = [s.revoke_grant("g1", f"U{i}", NOW) for i in range(3) for s in (store, other)]
        results = await asyncio.gather(*revokes)
    finally:
        await other.close()
    (revoked,) = [r for r in results if r is not None]
    assert revoked.revoked_at == NOW and revoked.revoked_by is not None
    assert await store.live_grants("slack:C1:1.0", "U0A", "deploy", NOW) == []
    assert await store.revoke_grant("g-none", "U0", NOW) is None
    (line,) = [e for e in await store.list_audit() if e.action == "grant.revoked"]
    assert line.actor_id == revoked.revoked_by and line.detail["grant"] == "g1"


async def test_the_audit_lines_of_a_grant_redact_the_audit_log_s_keys(store: SqlStore) -> None:
    store.audit_redact = frozenset({"api_key"})
    scoped = grant("g1", arguments={"env": "prod", "API_KEY": "k-123"})
    assert await store.add_grant(scoped) == scoped  # the grant itself keeps its scope
    await store.revoke_grant("g1", "U0ADMIN", NOW)
    lines = [e for e in await store.list_audit() if e.action.startswith("grant.")]
    assert [e.detail["arguments"] for e in lines] == [{"env": "prod", "API_KEY": "[redacted]"}] * 2
