"""bot/gates/gate.py: a gated call asks first, then runs exactly once.

Each worker is a real `HumanInputHandler` on an `SqlStore` of its own (SQLite always,
PostgreSQL when HITL_TEST_POSTGRES_URL is set), with the gate in front of a Python async
function that counts its runs; people answer through the real `Router`, as a surface would.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from bot.errors import ToolFailedError, ToolRefusedError
from bot.gates.approvals import MASK
from bot.gates.gate import ToolGate
from bot.human_input import HumanInputHandler, RenderState, RequestRules, RequestUpdate
from bot.human_tools.forms import read_form
from bot.records import GateRun, RequestStatus
from bot.requests.kinds import Verb
from bot.requests.router import Interaction, Invalid, NeedsForm, Refusal, Refused, Settled
from bot.requests.view import build_view
from bot.tools.context import ToolCallContext, tool_turn_context
from bot.words.tool_names import GATE_TOOL
from tests.bot.gates.gated import (
    ACTOR,
    APPROVER,
    CALL,
    DEPLOY,
    ROOM,
    STRANGER,
    TOKEN,
    WAIT,
    Deployer,
    Rules,
    Worker,
    everything_said,
    executing,
    start_worker,
    within,
)
from tests.bot.store.conftest import Database, database  # noqa: F401  (the fixture)


async def reads_the_run(worker: Worker) -> None:
    """Until `worker` reads a gated call's run from now on (it waits for another's to end)."""
    loop = asyncio.get_running_loop()
    read = asyncio.Event()

    def seen(statement: str) -> None:  # on the store's thread, maybe
        if statement.lstrip().upper().startswith("SELECT") and "gate_runs" in statement:
            loop.call_soon_threadsafe(read.set)

    unwatch = worker.store.watch(seen)
    try:
        await read.wait()
    finally:
        unwatch()


@pytest.fixture
def tool() -> Deployer:
    return Deployer()


@pytest.fixture
async def worker(database: Database, tool: Deployer) -> AsyncIterator[Worker]:  # noqa: F811
    started = await start_worker(database, "worker-a", tool, migrate=True)
    try:
        yield started
    finally:
        await started.close()


# -- approve -----------------------------------------------------------------------------------


async def test_an_approved_call_runs_once_and_its_outcome_is_shown(
    worker: Worker, tool: Deployer
) -> None:
    call = worker.call(CALL, call_id="toolu_1")
    asked = await worker.asked()
    assert (asked.tool_name, asked.actor_id, asked.room_id) == (GATE_TOOL, ACTOR, ROOM)
    assert tool.runs == []  # nothing runs before a person approves
    view = build_view(asked)
    assert view.title == "Run deploy?"
    facts = {f.label: f.value for f in view.facts}
    assert facts["Tool"] == "deploy" and facts[""] == DEPLOY.description
    assert (facts["service"], facts["env"], facts["replicas"]) == ("api", "production", "2")
    assert facts["token"] == MASK
    assert [c.verb for c in view.controls] == [Verb.APPROVE, Verb.GRANT, Verb.EDIT, Verb.DECLINE]
    assert [c.label for c in view.controls][:2] == [
        "Approve", "Approve and allow deploy here for 1 hour",
    ]  # fmt: skip

    first, second = await asyncio.gather(
        worker.answer(asked.pending_id, Verb.APPROVE),
        worker.answer(asked.pending_id, Verb.APPROVE, user=APPROVER),  # a double click
    )
    assert sorted(type(o).__name__ for o in (first, second)) == ["Refused", "Settled"]
    result = await within(call)
    assert json.loads(result) == {"deployed": "api", "env": "production"}
    assert tool.runs == [CALL]  # the real token reached the tool

    record = await worker.store.get_request(asked.pending_id)
    assert record is not None and record.status is RequestStatus.RESOLVED
    assert record.run_outcome == "ok"
    shown = await worker.seen(lambda h: any(u.run_outcome for u in h))
    final = build_view(next(u for u in shown if u.run_outcome))
    outcome = {f.label: f.value for f in final.outcome}
    assert outcome == {"Decision": "Approved", "Outcome": "ok"}
    assert final.status.plain.startswith("Answered by ")
    late = await worker.answer(asked.pending_id, Verb.APPROVE)  # a retry after the run
    assert isinstance(late, Refused) and late.reason is Refusal.SETTLED
    assert len(tool.runs) == 1

    audit = await worker.store.list_audit()
    assert [e.action for e in audit].count("tool.ran") == 1
    assert TOKEN not in everything_said(record, shown, audit, view, final)


async def test_a_stranger_cannot_approve(worker: Worker, tool: Deployer) -> None:
    call = worker.call(CALL, call_id="toolu_1")
    asked = await worker.asked()
    refused = await worker.answer(asked.pending_id, Verb.APPROVE, user=STRANGER)
    assert isinstance(refused, Refused) and refused.reason is Refusal.NOT_YOURS
    assert isinstance(await worker.answer(asked.pending_id, Verb.APPROVE, user=APPROVER), Settled)
    await within(call)
    assert len(tool.runs) == 1


async def test_an_ungated_tool_runs_unasked(worker: Worker, tool: Deployer) -> None:
    assert await within(worker.call({"text": "hi"}, call_id="toolu_1", tool="echo")) == "hi"
    assert worker.heard == []


async def test_a_failed_run_is_shown_and_never_run_again(
    database: Database,  # noqa: F811
    worker: Worker,
    tool: Deployer,
) -> None:
    call = worker.call({**CALL, "env": "broken"}, call_id="toolu_1")
    asked = await worker.asked()
    await worker.answer(asked.pending_id, Verb.APPROVE)
    with pytest.raises(ToolFailedError, match="no such environment"):
        await within(call)
    record = await worker.store.get_request(asked.pending_id)
    assert record is not None
    assert record.run_outcome == "error: the deploy failed: no such environment"

    # The same call resumed (its result was not saved before a restart): the same error.
    again = await start_worker(database, "worker-b", tool)
    try:
        resumed = again.call({**CALL, "env": "broken"}, call_id="toolu_1", resumed=True)
        with pytest.raises(ToolFailedError, match="no such environment"):
            await within(resumed)
    finally:
        await again.close()
    assert len(tool.runs) == 1


# -- edit --------------------------------------------------------------------------------------


async def test_an_edited_call_runs_with_the_edit_and_says_so(
    worker: Worker, tool: Deployer
) -> None:
    call = worker.call({**CALL, "labels": {"team": "pay"}}, call_id="toolu_1")
    asked = await worker.asked()
    needs = await worker.router.handle(Interaction(asked.pending_id, ACTOR, Verb.EDIT, {},
                                                   submitted=False))  # fmt: skip
    assert isinstance(needs, NeedsForm)
    form = needs.form
    fields = {f.name: f for f in form.fields}
    assert list(fields) == ["service", "env", "replicas", "labels"]  # never the token
    assert (fields["service"].value, fields["replicas"].value) == ("api", 2)
    assert fields["env"].value == "1"  # the option "production"
    assert fields["labels"].json_value and json.loads(fields["labels"].value) == {"team": "pay"}

    inputs = {"service": "api", "env": "0", "replicas": "3", "labels": '{"team": "pay"}'}
    assert read_form(form, inputs).errors == {}
    settled = await worker.answer(asked.pending_id, Verb.EDIT, **inputs)
    assert isinstance(settled, Settled)
    result = await within(call)
    first, rest = result.split("\n", 1)
    assert first == f'Edited by {ACTOR}: env: "production" → "staging"; replicas: 2 → 3'
    assert json.loads(rest) == {"deployed": "api", "env": "staging"}
    assert tool.runs == [
        {"service": "api", "env": "staging", "replicas": 3, "token": TOKEN,
         "labels": {"team": "pay"}},
    ]  # fmt: skip

    shown = await worker.seen(lambda h: any(u.run_outcome for u in h))
    final = build_view(next(u for u in shown if u.run_outcome))
    assert {f.label: f.value for f in final.outcome} == {
        "Decision": "Approved",
        "Edited": 'env: "production" → "staging"\nreplicas: 2 → 3',
        "Outcome": "ok",
    }
    record = await worker.store.get_request(asked.pending_id)
    audit = await worker.store.list_audit()
    assert TOKEN not in everything_said(record, shown, audit, form)


async def test_an_edit_is_checked_against_the_schema_field_by_field(
    worker: Worker, tool: Deployer
) -> None:
    call = worker.call(CALL, call_id="toolu_1")
    asked = await worker.asked()
    # The form checks what its inputs can (a whole number, at most 10) ...
    invalid = await worker.answer(asked.pending_id, Verb.EDIT, service="api", env="0",
                                  replicas="11")  # fmt: skip
    assert isinstance(invalid, Invalid) and invalid.errors == {"replicas": "At most 10"}
    # ... and the server checks the rest against the tool's schema (here, a pattern).
    invalid = await worker.answer(asked.pending_id, Verb.EDIT, service="API!", env="0")
    assert isinstance(invalid, Invalid) and list(invalid.errors) == ["service"]
    assert "does not match" in invalid.errors["service"]
    # An answer given without the router is checked too (the handler's validator).
    assert not worker.handler.resolve(
        asked.pending_id, json.dumps({"approved": True, "arguments": {"env": "qa"}})
    )
    record = await worker.store.get_request(asked.pending_id)
    assert record is not None and record.status is RequestStatus.PENDING
    assert tool.runs == []

    assert isinstance(await worker.answer(asked.pending_id, Verb.APPROVE), Settled)
    await within(call)
    assert tool.runs == [CALL]


# -- decline -----------------------------------------------------------------------------------


async def test_a_declined_call_never_runs_and_the_model_reads_why(
    worker: Worker, tool: Deployer
) -> None:
    call = worker.call(CALL, call_id="toolu_1")
    asked = await worker.asked()
    declined = await worker.answer(asked.pending_id, Verb.DECLINE, reason="not on a Friday")
    assert isinstance(declined, Settled)
    with pytest.raises(ToolRefusedError) as refused:
        await within(call)
    assert json.loads(refused.value.message) == {"error": "Rejected: not on a Friday"}
    assert tool.runs == []
    record = await worker.store.get_request(asked.pending_id)
    assert record is not None and record.run_outcome is None


# -- exactly once, across workers and restarts -------------------------------------------------


async def test_two_workers_waiting_on_one_approval_run_it_once(
    database: Database,  # noqa: F811
    worker: Worker,
    tool: Deployer,
) -> None:
    other = await start_worker(database, "worker-b", tool)
    try:
        tool.release = asyncio.Event()  # both workers are past the approval before it ends
        mine = worker.call(CALL, call_id="toolu_1")
        asked = await worker.asked()
        theirs = other.call(CALL, call_id="toolu_1", resumed=True)  # adopted, still alive
        await asyncio.sleep(0.05)
        # Watched from before the approvals: the worker that does not run the call (either
        # may win the claim) reads the run, maybe before the approvals return, then waits on
        # its NOTIFY without reading again.
        reads = [asyncio.ensure_future(reads_the_run(w)) for w in (worker, other)]
        run_read = asyncio.ensure_future(asyncio.wait(reads, return_when=asyncio.FIRST_COMPLETED))
        await asyncio.sleep(0)  # the watch is on
        approvals = await asyncio.gather(
            other.answer(asked.pending_id, Verb.APPROVE),
            worker.answer(asked.pending_id, Verb.APPROVE),
        )
        assert [isinstance(a, Settled) for a in approvals].count(True) == 1
        await within(tool.started.wait())
        await within(run_read)  # the worker that lost the claim found it, waits for the run
        for read in reads:
            read.cancel()
        tool.release.set()
        results = await within(asyncio.gather(mine, theirs))
        assert results[0] == results[1] == json.dumps({"deployed": "api", "env": "production"})
    finally:
        await other.close()
    assert len(tool.runs) == 1
    audit = await worker.store.list_audit()
    assert [e.action for e in audit].count("tool.ran") == 1


async def test_a_click_settled_elsewhere_wakes_the_wait_on_this_worker(
    database: Database,  # noqa: F811
    worker: Worker,
    tool: Deployer,
) -> None:
    """The other worker's copy of the approval was read before the holder settled it, and
    SQLite tells no one: the click it refuses as answered brings it the outcome at once."""
    other = await start_worker(database, "worker-b", tool)
    try:
        mine = worker.call(CALL, call_id="toolu_1")
        asked = await worker.asked()
        theirs = asyncio.create_task(other.handler.wait(asked.pending_id, timeout=WAIT * 2))
        async with asyncio.timeout(WAIT):
            while asked.pending_id not in other.handler.pending:  # noqa: ASYNC110  (no event)
                await asyncio.sleep(0.01)
        await other.handler.drain()  # its second read after loading found it still open
        assert isinstance(await worker.answer(asked.pending_id, Verb.APPROVE), Settled)
        refused = await other.answer(asked.pending_id, Verb.APPROVE)
        assert isinstance(refused, Refused) and refused.reason is Refusal.SETTLED
        assert json.loads(await within(theirs)) == {"approved": True}
        await within(mine)
    finally:
        await other.close()


async def asked_then_stopped(worker: Worker) -> RequestUpdate:
    """The call asks; then its worker stops: the wait is cut, the request stays pending for
    a resume. The approval request, as shown."""
    call = worker.call(CALL, call_id="toolu_1")
    asked = await worker.asked()
    worker.handler.suspend()
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    await worker.handler.drain()
    return asked


async def test_a_call_approved_before_a_restart_runs_after_it_once(
    database: Database,  # noqa: F811
    worker: Worker,
    tool: Deployer,
) -> None:
    asked = await asked_then_stopped(worker)

    restarted = await start_worker(database, "worker-b", tool)
    try:
        assert isinstance(await restarted.answer(asked.pending_id, Verb.APPROVE), Settled)
        assert tool.runs == []
        resumed = restarted.call(CALL, call_id="toolu_1", resumed=True)
        assert json.loads(await within(resumed))["env"] == "production"
        assert len(restarted.heard) >= 1 and executing(restarted.heard) == []  # asked no more
        # Restarted again after the run, before its result was saved: the result, no run.
        again = restarted.call(CALL, call_id="toolu_1", resumed=True)
        assert json.loads(await within(again))["env"] == "production"
    finally:
        await restarted.close()
    assert len(tool.runs) == 1
    record = await worker.store.get_request(asked.pending_id)
    assert record is not None and record.run_outcome == "ok"


async def test_a_run_whose_worker_died_mid_run_is_not_run_again(
    database: Database,  # noqa: F811
    worker: Worker,
    tool: Deployer,
) -> None:
    asked = await asked_then_stopped(worker)
    assert isinstance(await worker.answer(asked.pending_id, Verb.APPROVE), Settled)
    # A worker claimed the run and died while the tool ran: its lease lapsed unrenewed.
    past = datetime.now(UTC) - timedelta(minutes=5)
    dead = GateRun(asked.pending_id, "deploy", "worker-dead", past, past, asked.pending_id)
    assert await worker.store.claim_gate_run(dead) is None

    restarted = await start_worker(database, "worker-b", tool)
    try:
        resumed = restarted.call(CALL, call_id="toolu_1", resumed=True)
        with pytest.raises(ToolFailedError, match=r"interrupted.*not run again"):
            await within(resumed)
    finally:
        await restarted.close()
    assert tool.runs == []
    record = await worker.store.get_request(asked.pending_id)
    assert record is not None and record.run_outcome == "interrupted"


async def test_a_gate_without_a_store_runs_once_in_memory(tool: Deployer) -> None:
    handler = HumanInputHandler()
    gate = ToolGate(tool, {"deploy": DEPLOY}, Rules().approval_for, handler=handler)
    heard: list[RequestUpdate] = []

    async def observe(update: RequestUpdate) -> None:
        heard.append(update)

    handler.add_observer(observe)
    with tool_turn_context(ToolCallContext(room_id=ROOM, tool_call_id="t1", actor_id=ACTOR)):
        call = asyncio.create_task(gate("deploy", CALL))
        await asyncio.sleep(0.05)
        (pending,) = handler.pending.values()
        assert handler.resolve(pending.pending_id, '{"approved": true}', by=ACTOR)
        assert json.loads(await within(call))["env"] == "production"
    await handler.drain()
    assert tool.runs == [CALL]
    assert [u.run_outcome for u in heard if u.state is RenderState.COMPLETE][-1] == "ok"


async def test_an_approval_nobody_gives_in_time_runs_nothing(tool: Deployer) -> None:
    handler = HumanInputHandler()
    gate = ToolGate(tool, {"deploy": DEPLOY}, Rules().approval_for, handler=handler, timeout=0.1)
    turn = ToolCallContext(room_id=ROOM, tool_call_id="t1", actor_id=ACTOR)
    with tool_turn_context(turn), pytest.raises(ToolFailedError, match="Nobody approved"):
        await within(gate("deploy", CALL))
    assert tool.runs == []


@pytest.mark.parametrize("approves", [True, False])
async def test_at_the_deadline_the_policy_s_default_answer_decides(
    tool: Deployer, approves: bool
) -> None:
    """`on_timeout: {answer: ...}`: a default that approves runs the call (and says so); one
    that declines does not. Either way the request expired, answered by no one."""
    default = {"approved": True} if approves else {"approved": False, "reason": "nobody came"}
    answer = json.dumps(default)
    handler = HumanInputHandler(rules=RequestRules(expiry_answer=lambda name, arguments: answer))
    gate = ToolGate(tool, {"deploy": DEPLOY}, Rules().approval_for, handler=handler, timeout=0.1)
    heard: list[RequestUpdate] = []

    async def observe(update: RequestUpdate) -> None:
        heard.append(update)

    handler.add_observer(observe)
    turn = ToolCallContext(room_id=ROOM, tool_call_id="t1", actor_id=ACTOR)
    with tool_turn_context(turn):
        if approves:
            said, result = (await within(gate("deploy", CALL))).split("\n", 1)
            assert said == ("Nobody answered the approval in time: the call ran on the "
                            "policy's default answer at expiry.")  # fmt: skip
            assert json.loads(result)["env"] == "production"
            assert tool.runs == [CALL]
        else:
            with pytest.raises(ToolFailedError) as failed:
                await within(gate("deploy", CALL))
            assert failed.value.reason == (
                "Nobody approved the call of 'deploy' in time, so it did not run: the policy's "
                "default answer at expiry declined it: nobody came"
            )
            assert tool.runs == []
    await handler.drain()
    expired = [u for u in heard if u.state is RenderState.EXPIRED]
    assert expired and expired[0].settled_by is None
    assert json.loads(expired[0].result or "") == default
