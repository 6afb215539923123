"""bot/store/escalations.py and bot/durable/escalations.py on both dialects: due steps found by
their index, each moved on by one compare-and-set with its audit line; two workers on one database
(each its own store, handler, router and sweep) fire each step of a request exactly once; a
step that fell due while no worker ran fires at start, late and once; none after the deadline.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.durable.escalations import ESCALATED, REMINDED, Escalations
from bot.human_input import HumanInputHandler, RequestRules, RequestUpdate
from bot.policies import Policy, load_policy_file
from bot.policies.deciders import Deciders
from bot.policies.escalation import Audience
from bot.records import AuditEntry, EscalationState, PendingInput, RequestStatus, Settlement
from bot.requests.router import Router
from bot.store import SqlStore, open_store
from bot.store.escalations import EscalationTables
from tests.bot.store.conftest import Database

STEPS = (REMINDED, ESCALATED)
POLICY = """\
rules:
  - match: {tool: requestApproval}
    approvers: [slack:U0BOB00001]
    escalate:
      - {after_seconds: 0.2, remind: true}
      - {after_seconds: 0.5, approvers: [slack:U0CAROL001]}
"""
APPROVAL = {"action": "Deploy v2", "reason": "release day"}
WAIT = 10.0


def due_record(
    request_id: str, next_at: datetime, expires_at: datetime | None = None
) -> PendingInput:
    record = PendingInput(request_id, "requestApproval", dict(APPROVAL), expires_at=expires_at)
    record.escalation = EscalationState(0, next_at)
    return record


async def test_due_steps_each_moved_on_once_with_its_audit_line(store: SqlStore) -> None:
    tables = EscalationTables(store)
    now = datetime.now(UTC)
    await store.create_request(due_record("r1", now - timedelta(seconds=1)))
    await store.create_request(due_record("r2", now + timedelta(minutes=5)))
    await store.create_request(PendingInput("r3", "requestApproval", dict(APPROVAL)))
    assert [r.id for r in await tables.due_requests(now)] == ["r1"]
    assert await tables.next_deadline() == now - timedelta(seconds=1)
    entry = AuditEntry(REMINDED, now, request_id="r1", detail={"step": 0})
    later = now + timedelta(minutes=10)
    assert await tables.advance("r1", (0, 1), later, entry)
    assert not await tables.advance("r1", (0, 1), later, entry)  # fired already
    record = await store.get_request("r1")
    assert record is not None and (record.escalation_step, record.next_escalation_at) == (1, later)
    assert await tables.due_requests(now) == []
    assert await tables.next_deadline() == now + timedelta(minutes=5)
    lines = [e for e in await store.list_audit(request_id="r1") if e.action == REMINDED]
    assert [(e.actor_id, e.detail) for e in lines] == [(None, {"step": 0})]


async def test_no_step_moves_once_the_request_ended_or_its_deadline_passed(
    store: SqlStore,
) -> None:
    tables = EscalationTables(store)
    now = datetime.now(UTC)
    await store.create_request(due_record("ended", now))
    await store.settle(Settlement("ended", RequestStatus.RESOLVED, now, result="{}"))
    await store.create_request(due_record("late", now, expires_at=now - timedelta(seconds=1)))
    assert [r.id for r in await tables.due_requests(now)] == ["late"]  # the sweep expires it
    assert not await tables.advance("ended", (0, 1), None)
    assert not await tables.advance("late", (0, 1), None)
    assert await tables.next_deadline() == now  # not moved: still the deadline's to settle


async def test_two_stores_racing_for_each_step_move_it_once(database: Database) -> None:
    first = await open_store(database.url, schema=database.schema)
    second = await open_store(database.url, migrate=False, schema=database.schema)
    try:
        now = datetime.now(UTC)
        await first.create_request(due_record("r1", now))
        racers = [EscalationTables(first), EscalationTables(second)] * 4
        for step in range(3):
            won = await asyncio.gather(*(
                tables.advance("r1", (step, step + 1), now, AuditEntry(REMINDED, now, "r1"))
                for tables in racers
            ))  # fmt: skip
            assert won.count(True) == 1, (step, won)
        lines = [e for e in await first.list_audit(request_id="r1") if e.action == REMINDED]
        assert len(lines) == 3
    finally:
        await first.close()
        await second.close()


# -- workers: a store, a handler, a router and a sweep each ---------------------------------


@dataclass
class Worker:
    store: SqlStore
    handler: HumanInputHandler
    escalations: Escalations
    heard: list[RequestUpdate] = field(default_factory=list)

    async def close(self) -> None:
        await self.escalations.stop()
        await asyncio.wait_for(self.handler.drain(), 5)
        await self.store.close()


async def start_worker(database: Database, policy: Path, name: str) -> Worker:
    store = await open_store(database.url, schema=database.schema)
    deciders = Deciders(Policy.from_file(load_policy_file(policy), frozenset(), frozenset()))
    rules = RequestRules(escalation_start=deciders.escalation_start, audience=deciders.audience)
    handler = HumanInputHandler(store=store, worker_id=name, hold_seconds=1.0, rules=rules)
    router = Router(store=store, handler_for=lambda _: handler, handlers=(handler,),
                    deciders=deciders)  # fmt: skip
    # Rechecked often: a request another worker made cannot poke this worker's sweep.
    escalations = Escalations(EscalationTables(store), router, recheck_interval=0.05)
    handler.add_escalation_listener(escalations.poke)
    worker = Worker(store, handler, escalations)

    async def observe(update: RequestUpdate) -> None:
        worker.heard.append(update)

    handler.add_observer(observe)
    return worker


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY)
    return path


@pytest.fixture
async def workers(database: Database, policy: Path) -> AsyncIterator[list[Worker]]:
    started = [await start_worker(database, policy, name) for name in ("a", "b")]
    try:
        yield started
    finally:
        for worker in started:
            await worker.close()


async def escalation_lines(store: SqlStore, request_id: str, count: int) -> list[AuditEntry]:
    """The request's escalation audit lines, oldest first, once there are `count`."""
    async with asyncio.timeout(WAIT):
        while True:
            audit = await store.list_audit(request_id=request_id)
            lines = [e for e in reversed(audit) if e.action in STEPS]
            if len(lines) >= count:
                return lines
            await asyncio.sleep(0.02)


@pytest.mark.slow  # each step's deadline passes
async def test_two_workers_fire_each_step_once(workers: list[Worker]) -> None:
    a = workers[0]
    for worker in workers:
        await worker.escalations.start()
    request = await a.handler.create("requestApproval", dict(APPROVAL), timeout=30)
    assert request.next_escalation_at == request.created_at + timedelta(seconds=0.2)
    lines = await escalation_lines(a.store, request.id, 2)
    await asyncio.sleep(0.3)  # both sweeps ran again meanwhile
    lines = await escalation_lines(a.store, request.id, 2)
    assert [(e.action, e.detail) for e in lines] == [
        (REMINDED, {"step": 0, "after_seconds": 0.2, "remind": True}),
        (ESCALATED, {"step": 1, "after_seconds": 0.5, "remind": False,
                     "approvers_added": ["slack:U0CAROL001"]}),
    ]  # fmt: skip
    record = await a.store.get_request(request.id)
    assert record is not None and (record.escalation_step, record.next_escalation_at) == (2, None)
    fired = [u.audience.fired.index for w in workers for u in w.heard
             if isinstance(u.audience, Audience) and u.audience.fired is not None]  # fmt: skip
    assert sorted(fired) == [0, 1]  # each step told once, by the worker that fired it
    await a.handler.answer(request.id, '{"approved": true}', by="U0CAROL001")


async def test_a_step_due_while_no_worker_ran_fires_at_start_once(
    database: Database, tmp_path: Path
) -> None:
    """The first step fell due while no worker ran: it fires at start, late, once; the
    second falls after the request's deadline, so it is never due."""
    policy = tmp_path / "late.yaml"
    policy.write_text(POLICY.replace("0.2", "1").replace("0.5", "10"))
    store = await open_store(database.url, schema=database.schema)
    now = datetime.now(UTC)
    past = now - timedelta(seconds=2)
    await store.create_request(dataclasses.replace(
        due_record("r1", past + timedelta(seconds=1)), created_at=past,
        expires_at=now + timedelta(seconds=5),
    ))  # fmt: skip
    await store.close()
    worker = await start_worker(database, policy, "restarted")
    try:
        await worker.escalations.start()  # its first sweep, before start returns
        lines = await escalation_lines(worker.store, "r1", 1)
        assert [e.detail["step"] for e in lines] == [0]
        record = await worker.store.get_request("r1")
        assert record is not None and (record.escalation_step, record.next_escalation_at) == (
            1, None,
        )  # fmt: skip
        stale = dataclasses.replace(record, escalation=EscalationState(0, record.created_at))
        await worker.escalations.fire(stale)
        assert len(await escalation_lines(worker.store, "r1", 1)) == 1
        told = [u for u in worker.heard if u.audience is not None and u.audience.fired]
        assert len(told) == 1
    finally:
        await worker.close()
