"""bot/gates/grants.py: "approve and allow here for 1 hour", used, expired, revoked, audited.

The gate and its worker are the real ones of tests/bot/gates/gated.py (a handler on a store,
SQLite and PostgreSQL); the grants' clock is a test's own, moved past the hour instead of
waiting for it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bot.errors import ToolRefusedError
from bot.gates.grants import DIGEST, GrantError, Grants, covers, digest, scope_of, shown_scope
from bot.records import Grant
from bot.requests.kinds import Verb
from bot.requests.router import Invalid, Refused, Settled
from bot.requests.view import build_view
from tests.bot.gates.gated import (
    ACTOR,
    APPROVER,
    CALL,
    ROOM,
    TOKEN,
    Deployer,
    Rule,
    Rules,
    Worker,
    everything_said,
    executing,
    start_worker,
    within,
)
from tests.bot.store.conftest import Database, database  # noqa: F401  (the fixture)


@dataclass
class Clock:
    now: datetime = field(default_factory=lambda: datetime.now(UTC))

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def tool() -> Deployer:
    return Deployer()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def worker(
    database: Database,  # noqa: F811
    tool: Deployer,
    clock: Clock,
) -> AsyncIterator[Worker]:
    rules = Rules({"deploy": Rule(grant_scope=frozenset({"env"}))})
    started = await start_worker(database, "worker-a", tool, rules=rules, clock=clock,
                                 migrate=True)  # fmt: skip
    try:
        yield started
    finally:
        await started.close()


def grants_of(worker: Worker, clock: Clock) -> Grants:
    return Grants(worker.store, clock=clock)


async def grant_by_approval(worker: Worker, call_id: str, **call: str) -> str:
    """A call approved with "Approve and allow here": returns the approval's request id."""
    asked_before = len(executing(worker.heard))
    task = worker.call({**CALL, **call}, call_id=call_id)
    asked = await worker.asked(asked_before + 1)
    assert isinstance(await worker.answer(asked.pending_id, Verb.GRANT, user=APPROVER), Settled)
    await within(task)
    return asked.pending_id


async def test_a_grant_lets_the_same_actor_run_the_tool_here_until_it_expires(
    worker: Worker, tool: Deployer, clock: Clock
) -> None:
    request_id = await grant_by_approval(worker, "toolu_1")
    (grant,) = await grants_of(worker, clock).list()
    assert (grant.room_id, grant.actor_id, grant.tool_name) == (ROOM, ACTOR, "deploy")
    assert (grant.granted_by, grant.request_id) == (APPROVER, request_id)
    assert grant.arguments == {"env": "production"}  # the rule scopes it to env
    assert grant.expires_at - grant.created_at == timedelta(hours=1)
    shown = await worker.seen(lambda h: any(u.run_outcome for u in h))
    final = build_view(next(u for u in shown if u.run_outcome))
    assert {f.label: f.value for f in final.outcome} == {
        "Decision": "Approved, and allowed here for 1 hour",
        "Outcome": "ok",
    }

    # Later calls of the tool, here, by the same actor, within the scope: run unasked.
    assert json.loads(await within(worker.call(CALL, call_id="toolu_2")))["env"] == "production"
    assert len(executing(worker.heard)) == 1 and len(tool.runs) == 2
    # Another actor, another room, another scope: asked.
    elsewhere: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
        ("toolu_3", CALL, {"actor_id": "U0SOMEONE"}),
        ("toolu_4", CALL, {"room_id": "slack:C0OTHER:1.2"}),
        ("toolu_5", {**CALL, "env": "staging"}, {}),
    ]
    for call_id, call, context in elsewhere:
        task = worker.call(call, call_id=call_id, **context)
        asked = await worker.asked(len(executing(worker.heard)) + 1)
        await worker.answer(asked.pending_id, Verb.DECLINE, user=APPROVER)
        with pytest.raises(ToolRefusedError, match="Rejected"):
            await within(task)
    assert len(tool.runs) == 2

    # An hour later the grant has expired: asked again.
    clock.now += timedelta(hours=1, seconds=1)
    assert await grants_of(worker, clock).list() == []
    task = worker.call(CALL, call_id="toolu_6")
    asked = await worker.asked(len(executing(worker.heard)) + 1)
    await worker.answer(asked.pending_id, Verb.APPROVE)
    await within(task)
    assert len(tool.runs) == 3

    audit = [e for e in reversed(await worker.store.list_audit(limit=500))]
    actions = [e.action for e in audit if e.action.startswith("grant.")]
    assert actions == ["grant.created", "grant.used"]
    used = next(e for e in audit if e.action == "grant.used")
    assert used.detail == {
        "grant": grant.id, "tool_name": "deploy", "room_id": ROOM, "tool_call_id": "toolu_2",
    }  # fmt: skip
    assert TOKEN not in everything_said(audit)


async def test_a_revoked_grant_asks_again(worker: Worker, tool: Deployer, clock: Clock) -> None:
    await grant_by_approval(worker, "toolu_1")
    grants = grants_of(worker, clock)
    (grant,) = await grants.list()
    with pytest.raises(GrantError, match="may not"):
        await grants.revoke(grant.id, by="U0SOMEONE", allowed=lambda g: False)
    revoked = await grants.revoke(grant.id, by="U0ADMIN")
    assert revoked.revoked_by == "U0ADMIN" and revoked.revoked_at == clock.now
    with pytest.raises(GrantError, match="revoked already"):
        await grants.revoke(grant.id, by="U0ADMIN")
    with pytest.raises(GrantError, match="no grant g-missing"):
        await grants.revoke("g-missing", by="U0ADMIN")
    assert await grants.list() == []
    assert [g.id for g in await grants.list(ended=True)] == [grant.id]

    task = worker.call(CALL, call_id="toolu_2")
    asked = await worker.asked(2)  # asked: the grant no longer covers it
    await worker.answer(asked.pending_id, Verb.APPROVE)
    await within(task)
    assert len(tool.runs) == 2
    (line,) = [e for e in await worker.store.list_audit() if e.action == "grant.revoked"]
    assert line.actor_id == "U0ADMIN" and line.detail["grant"] == grant.id


async def test_a_grant_is_made_once_however_often_its_approval_is_resumed(
    database: Database,  # noqa: F811
    worker: Worker,
    tool: Deployer,
    clock: Clock,
) -> None:
    await grant_by_approval(worker, "toolu_1")
    again = await start_worker(database, "worker-b", tool, clock=clock)
    try:  # the run was cut after the grant, before its result was saved
        await within(again.call(CALL, call_id="toolu_1", resumed=True))
    finally:
        await again.close()
    assert len(await grants_of(worker, clock).list()) == 1
    assert len(tool.runs) == 1


async def test_a_call_resumed_after_running_under_a_grant_is_not_run_again(
    database: Database,  # noqa: F811
    worker: Worker,
    tool: Deployer,
    clock: Clock,
) -> None:
    await grant_by_approval(worker, "toolu_1")
    await within(worker.call(CALL, call_id="toolu_2"))  # under the grant
    clock.now += timedelta(hours=2)  # expired since: a resume must still not ask nor run
    again = await start_worker(database, "worker-b", tool, clock=clock)
    try:
        result = await within(again.call(CALL, call_id="toolu_2", resumed=True))
    finally:
        await again.close()
    assert json.loads(result)["env"] == "production"
    assert len(tool.runs) == 2 and executing(again.heard) == []


def test_a_redacted_value_is_scoped_by_its_digest() -> None:
    scoped = scope_of({"env": "prod", "token": TOKEN}, ["env", "token"], ["token"])
    assert scoped == {"env": "prod", "token": digest(TOKEN)}
    assert scoped["token"].startswith(DIGEST) and TOKEN not in json.dumps(scoped)
    now = datetime.now(UTC)
    grant = Grant("g-1", ROOM, ACTOR, "deploy", scoped, now, now + timedelta(hours=1), ACTOR)
    assert covers(grant, {"env": "prod", "token": TOKEN, "replicas": 3})
    assert not covers(grant, {"env": "prod", "token": "another"})
    assert not covers(grant, {"env": "staging", "token": TOKEN})
    assert shown_scope(grant) == "env=prod, token=•••"
    # A value that merely looks like a digest is kept as one too, so it cannot pose as one.
    sly = scope_of({"env": digest("x")}, ["env"], [])
    assert covers(Grant("g-2", ROOM, ACTOR, "deploy", sly, now, now, None), {"env": digest("x")})
    assert not covers(Grant("g-2", ROOM, ACTOR, "deploy", sly, now, now, None), {"env": "x"})


async def test_a_rule_sets_how_long_a_grant_lasts_or_offers_none(
    database: Database,  # noqa: F811
    tool: Deployer,
    clock: Clock,
) -> None:
    rules = Rules({"deploy": Rule(grant_seconds=1800.0), "echo": Rule(grant_seconds=0.0)})
    started = await start_worker(database, "worker-c", tool, rules=rules, clock=clock,
                                 migrate=True)  # fmt: skip
    try:
        await grant_by_approval(started, "toolu_1")
        (grant,) = await grants_of(started, clock).list()
        assert grant.expires_at - grant.created_at == timedelta(minutes=30)
        assert grant.arguments == {}  # no scope: every call of the tool, here, by this actor
        controls = [c.label for c in build_view(executing(started.heard)[0]).controls]
        assert "Approve and allow deploy here for 30 minutes" in controls

        task = started.call({"text": "hi"}, call_id="toolu_2", tool="echo")
        asked = await started.asked(2)
        labels = [c.label for c in build_view(asked).controls]
        assert labels == ["Approve", "Edit", "Decline"]
        assert isinstance(await started.answer(asked.pending_id, Verb.GRANT), Refused | Invalid)
        await started.answer(asked.pending_id, Verb.APPROVE)
        assert await within(task) == "hi"
        assert len(await grants_of(started, clock).list()) == 1
    finally:
        await started.close()
