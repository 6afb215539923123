"""bot/requests/router.py with a policy that needs several people: votes, on a real store.

Each test asks as the tools do, answers as a surface would (an Interaction in, an Outcome out)
and checks what the waiting call gets, what the surfaces were told, and the audit log.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bot import HumanInputHandler, HumanInputRejectedError, HumanInputToolHandler
from bot.human_input import RenderState, RequestUpdate
from bot.policies.deciders import Deciders
from bot.policies.policy_file import PolicyFile
from bot.policies.rules import Policy
from bot.policies.tally import arguments_digest
from bot.records import RequestStatus, Vote
from bot.requests.kinds import Verb
from bot.requests.router import Interaction, Refusal, Refused, Router, Settled, Voted
from bot.requests.view import build_view
from bot.store import SqlStore, open_store
from bot.store.votes import VoteTables
from bot.words.tool_names import GATE_TOOL
from tests.bot.gates.gated import CALL, Deployer, Worker, start_worker, within
from tests.bot.store.conftest import Database, database  # noqa: F401  (the fixture)

ACTOR, BOB, CAROL, DAVE, EVE = "U0ACTOR01", "U0BOB0001", "U0CAROL01", "U0DAVE001", "U0EVE0001"
THREE = [f"slack:{BOB}", f"slack:{CAROL}", f"slack:{DAVE}"]
RULES = {
    "rules": [
        {"match": {"tool": "requestApproval"}, "approvers": THREE, "required": 2},
        {"match": {"tool": "confirmAction"}, "approvers": THREE, "required": 2,
         "declines_required": 2},
        {"match": {"tool": "deploy"}, "approvers": THREE, "required": 2},
        {"match": {"tool": "*"}, "approvers": THREE, "required": 2},
    ]
}  # fmt: skip
APPROVAL = {"action": "Deploy v2", "reason": "Release day"}
WAIT = 5.0


def deciders() -> Deciders:
    return Deciders(Policy.from_file(PolicyFile.model_validate(RULES), frozenset(), frozenset()))


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqlStore]:
    opened = await open_store(f"sqlite+aiosqlite:///{tmp_path / 'hitl.db'}")
    try:
        yield opened
    finally:
        await opened.close()


class Heard:
    """What the surfaces were told (the handler's observer)."""

    def __init__(self) -> None:
        self.updates: list[RequestUpdate] = []
        self.changed = asyncio.Condition()

    async def __call__(self, update: RequestUpdate) -> None:
        async with self.changed:
            self.updates.append(update)
            self.changed.notify_all()

    async def first(self, check: Callable[[RequestUpdate], bool]) -> RequestUpdate:
        async with asyncio.timeout(WAIT), self.changed:
            await self.changed.wait_for(lambda: any(check(u) for u in self.updates))
            return next(u for u in self.updates if check(u))


@pytest.fixture
def heard() -> Heard:
    return Heard()


@pytest.fixture
def human(store: SqlStore, heard: Heard) -> HumanInputToolHandler:
    handler = HumanInputHandler(store=store)
    handler.add_observer(heard)
    return HumanInputToolHandler.builtin(handler=handler)


@pytest.fixture
def router(store: SqlStore, human: HumanInputToolHandler) -> Router:
    return Router(
        store=store, handler_for=lambda channel: human.handler, tools=human.tools,
        deciders=deciders(), votes=VoteTables(store),
    )  # fmt: skip


async def ask(human: HumanInputToolHandler, tool: str, args: dict[str, Any]) -> str:
    pending = await human.handler.create(tool, args, actor_id=ACTOR, channel_id="agent")
    return pending.pending_id


def click(request_id: str, user: str, verb: Verb, **inputs: Any) -> Interaction:
    return Interaction(request_id, user, verb, inputs, surface="slack")


async def test_two_of_three_approve_and_the_answer_names_them(
    human: HumanInputToolHandler, router: Router, store: SqlStore, heard: Heard
) -> None:
    request_id = await ask(human, "requestApproval", APPROVAL)
    first = await router.handle(click(request_id, BOB, Verb.APPROVE))
    assert isinstance(first, Voted) and first.tally.approvers == (BOB,)
    assert first.tally.line.plain == f"1 of 2 approvals: {BOB}"
    assert request_id in human.handler.pending  # one approval of two settles nothing
    # Every surface is told the request again, with the tally in the line they all show.
    told = await heard.first(lambda u: u.tally is not None)
    assert told.state is RenderState.EXECUTING
    view = build_view(told)
    assert view.status.plain.endswith(f"1 of 2 approvals: {BOB}.") and view.live
    assert (await router.update(first.record)).tally == first.tally  # as a Teams refresh draws

    again = await router.handle(click(request_id, BOB, Verb.APPROVE))
    assert isinstance(again, Refused) and again.reason is Refusal.VOTED
    assert again.notice.plain == f"You voted already: 1 of 2 approvals: {BOB}."

    second = await router.handle(click(request_id, CAROL, Verb.APPROVE))
    assert isinstance(second, Settled)
    assert (second.record.status, second.record.settled_by) == (RequestStatus.RESOLVED, CAROL)
    answer = json.loads(await human.handler.wait(request_id, timeout=WAIT))
    assert answer == {"approved": True, "approved_by": [BOB, CAROL]}
    settled = await heard.first(lambda u: u.state is RenderState.COMPLETE)
    status = build_view(settled).status
    assert status.template == "Answered by {by_a} and {by_b} {at}"
    assert status.people == {"by_a": BOB, "by_b": CAROL}

    late = await router.handle(click(request_id, DAVE, Verb.APPROVE))
    assert isinstance(late, Refused) and late.reason is Refusal.SETTLED
    audit = await store.list_audit(request_id=request_id)
    votes = [(e.actor_id, e.detail["approve"]) for e in reversed(audit) if e.action == "vote.cast"]
    assert votes == [(BOB, True), (CAROL, True)]


async def test_a_decline_among_approvals_declines(
    human: HumanInputToolHandler, router: Router
) -> None:
    request_id = await ask(human, "requestApproval", APPROVAL)
    assert isinstance(await router.handle(click(request_id, BOB, Verb.APPROVE)), Voted)
    declined = await router.handle(click(request_id, CAROL, Verb.DECLINE, reason="not today"))
    assert isinstance(declined, Settled) and declined.record.status is RequestStatus.REJECTED
    with pytest.raises(HumanInputRejectedError, match="not today"):
        await human.handler.wait(request_id, timeout=WAIT)


async def test_declines_required_two_declines_to_decline(
    human: HumanInputToolHandler, router: Router, store: SqlStore
) -> None:
    request_id = await ask(human, "confirmAction", {"title": "Drop", "message": "Sure?"})
    first = await router.handle(click(request_id, BOB, Verb.DECLINE, reason="risky"))
    assert isinstance(first, Voted)
    assert first.tally.line.plain == f"0 of 2 approvals; 1 of 2 declines: {BOB}"
    bare = await router.handle(Interaction(request_id, CAROL, Verb.DECLINE, submitted=False))
    assert not isinstance(bare, Voted | Settled)  # the reason's form first: no vote yet
    second = await router.handle(click(request_id, CAROL, Verb.DECLINE, reason="no backup"))
    assert isinstance(second, Settled) and second.record.status is RequestStatus.REJECTED
    with pytest.raises(HumanInputRejectedError) as rejected:
        await human.handler.wait(request_id, timeout=WAIT)
    assert str(rejected.value) == f"{BOB}: risky; {CAROL}: no backup"


async def test_confirm_and_cancel_are_votes_too(
    human: HumanInputToolHandler, router: Router
) -> None:
    request_id = await ask(human, "confirmAction", {"title": "Drop", "message": "Sure?"})
    assert isinstance(await router.handle(click(request_id, BOB, Verb.CONFIRM)), Voted)
    assert isinstance(await router.handle(click(request_id, CAROL, Verb.CANCEL)), Voted)
    assert isinstance(await router.handle(click(request_id, DAVE, Verb.CANCEL)), Settled)
    assert json.loads(await human.handler.wait(request_id, timeout=WAIT)) == {"confirmed": False}


async def test_only_those_the_rule_names_vote(
    human: HumanInputToolHandler, router: Router, store: SqlStore
) -> None:
    request_id = await ask(human, "requestApproval", APPROVAL)
    refused = await router.handle(click(request_id, EVE, Verb.APPROVE))
    assert isinstance(refused, Refused) and refused.reason is Refusal.NOT_YOURS
    assert await VoteTables(store).votes(request_id) == []


async def test_votes_given_before_the_arguments_changed_no_longer_count(
    human: HumanInputToolHandler, router: Router, store: SqlStore
) -> None:
    """Bob's vote was of other arguments (the request changed since): the tally restarts,
    visibly, and Bob may vote again on the request as it is."""
    request_id = await ask(human, "requestApproval", APPROVAL)
    before = arguments_digest({**APPROVAL, "action": "Deploy v1"})
    assert await VoteTables(store).cast(Vote(request_id, BOB, True, before, datetime.now(UTC)))
    carol = await router.handle(click(request_id, CAROL, Verb.APPROVE))
    assert isinstance(carol, Voted) and carol.tally.approvers == (CAROL,)
    assert carol.tally.line.plain == (
        f"1 of 2 approvals: {CAROL}; votes given before the request changed no longer count"
    )
    assert isinstance(await router.handle(click(request_id, BOB, Verb.APPROVE)), Settled)
    answer = json.loads(await human.handler.wait(request_id, timeout=WAIT))
    assert answer["approved_by"] == [CAROL, BOB]


async def test_a_question_is_answered_by_one_person(
    human: HumanInputToolHandler, router: Router, store: SqlStore
) -> None:
    """Votes count approvals: a request with no yes or no (a question, a form) is answered
    once, whatever its rule's `required` says."""
    request_id = await ask(human, "AskUserQuestion", {"question": "Which region?"})
    outcome = await router.handle(click(request_id, BOB, Verb.ANSWER, answer="eu-west-1"))
    assert isinstance(outcome, Settled)
    assert await VoteTables(store).votes(request_id) == []


def voting(worker: Worker) -> Worker:
    """The worker's router under the votes policy, counting votes in the store's rows."""
    worker.router = Router(
        store=worker.store, handler_for=lambda channel: worker.handler, deciders=deciders(),
        votes=VoteTables(worker.store),
    )  # fmt: skip
    return worker


@pytest.fixture
async def worker(database: Database) -> AsyncIterator[Worker]:  # noqa: F811
    started = await start_worker(database, "worker-a", Deployer(), migrate=True)
    try:
        yield voting(started)
    finally:
        await started.close()


def runs(worker: Worker) -> list[dict[str, Any]]:
    tool = worker.gate.inner  # type: ignore[attr-defined]
    assert isinstance(tool, Deployer)
    return tool.runs


async def test_a_gated_call_two_must_approve_as_it_is(worker: Worker) -> None:
    """An approval gate under `required: 2`: Edit and "approve and allow" are refused (each
    approval is of the same call), the call runs once two approved, and the model's result
    says who approved."""
    call = worker.call(CALL, call_id="toolu_1")
    asked = await worker.asked()
    assert asked.tool_name == GATE_TOOL
    for verb in (Verb.EDIT, Verb.GRANT):
        refused = await worker.answer(asked.pending_id, verb, user=BOB)
        assert isinstance(refused, Refused) and refused.reason is Refusal.UNFIT
        assert refused.notice.plain == (
            "This request needs 2 approvals: approve it as it is, or decline."
        )
    assert isinstance(await worker.answer(asked.pending_id, Verb.APPROVE, user=BOB), Voted)
    assert runs(worker) == []
    settled = await worker.answer(asked.pending_id, Verb.APPROVE, user=DAVE)
    assert isinstance(settled, Settled)
    result = await within(call)
    line, _, ran = result.partition("\n")
    assert line == f"Approved by {BOB} and {DAVE}."
    assert json.loads(ran) == {"deployed": "api", "env": "production"}
    assert len(runs(worker)) == 1


async def test_votes_on_two_workers_are_counted_together(
    database: Database,  # noqa: F811
    worker: Worker,
) -> None:
    """Bob's vote reaches worker A (which holds the call: the tally shown on its surfaces),
    Carol's worker B: B counts both rows and settles the request for A, which runs it."""
    other = voting(await start_worker(database, "worker-b", Deployer()))
    try:
        call = worker.call(CALL, call_id="toolu_1")
        asked = await worker.asked()
        assert isinstance(await worker.answer(asked.pending_id, Verb.APPROVE, user=BOB), Voted)
        told = await worker.seen(lambda heard: any(u.tally is not None for u in heard))
        tally = next(u.tally for u in told if u.tally is not None)
        assert tally.approvers == (BOB,)
        settled = await other.answer(asked.pending_id, Verb.APPROVE, user=CAROL)
        assert isinstance(settled, Settled)
        assert (await within(call)).startswith(f"Approved by {BOB} and {CAROL}.\n")
        again = await other.answer(asked.pending_id, Verb.APPROVE, user=DAVE)
        assert isinstance(again, Refused) and again.reason is Refusal.SETTLED
    finally:
        await other.close()
    assert len(runs(worker)) == 1
