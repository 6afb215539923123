"""bot/requests/router.py: every surface's answers decided once, on a real store (SQLite).

Each test drives the router as a surface would (an Interaction in, an Outcome out) and checks
what the waiting tool call gets and what the audit log says.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot import HumanInputHandler, HumanInputRejectedError, HumanInputToolHandler
from bot.records import RequestStatus
from bot.requests.access import AnswerPolicy
from bot.requests.kinds import Verb
from bot.requests.router import (
    Interaction,
    Invalid,
    NeedsForm,
    Refusal,
    Refused,
    Router,
    Settled,
)
from bot.store import SqlStore, open_store

ACTOR, STRANGER, APPROVER = "U0ACTOR01", "U0STRANGE", "U0APPROVE"


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqlStore]:
    opened = await open_store(f"sqlite+aiosqlite:///{tmp_path / 'hitl.db'}")
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture
def human(store: SqlStore) -> HumanInputToolHandler:
    return HumanInputToolHandler.builtin(handler=HumanInputHandler(store=store))


@pytest.fixture
def router(store: SqlStore, human: HumanInputToolHandler) -> Router:
    return Router(
        store=store,
        handler_for=lambda channel: human.handler,
        policy=AnswerPolicy(approvers=frozenset({APPROVER})),
        tools=human.tools,
    )


async def _ask(human: HumanInputToolHandler, tool: str, args: dict[str, Any]) -> str:
    pending = await human.handler.create(tool, args, actor_id=ACTOR, channel_id="agent")
    return pending.pending_id


APPROVAL = {"action": "Deploy v2", "reason": "Release day"}


async def test_the_actor_approves_and_the_waiter_gets_the_answer(
    human: HumanInputToolHandler, router: Router
) -> None:
    request_id = await _ask(human, "requestApproval", APPROVAL)
    outcome = await router.handle(Interaction(request_id, ACTOR, Verb.APPROVE, surface="slack"))
    assert isinstance(outcome, Settled)
    assert (outcome.record.status, outcome.record.settled_by) == (RequestStatus.RESOLVED, ACTOR)
    assert await human.handler.wait(request_id, timeout=2) == '{"approved":true}'


async def test_a_stranger_is_refused_with_whose_it_is_and_audited(
    human: HumanInputToolHandler, router: Router, store: SqlStore
) -> None:
    request_id = await _ask(human, "requestApproval", APPROVAL)
    click = Interaction(request_id, STRANGER, Verb.APPROVE, surface="teams", name="Eve")
    outcome = await router.handle(click)
    assert isinstance(outcome, Refused) and outcome.reason is Refusal.NOT_YOURS
    assert outcome.notice.plain == (
        f"This request is for {ACTOR}: only they, an approver or an admin can answer it."
    )
    audit = await store.list_audit(request_id=request_id)
    refused = [e for e in audit if e.action == "answer_refused"]
    assert [e.actor_id for e in refused] == [STRANGER]
    assert refused[0].detail["surface"] == "teams" and refused[0].detail["name"] == "Eve"
    assert request_id in human.handler.pending


async def test_the_audit_row_of_an_answer_names_who_as_people_know_them(
    human: HumanInputToolHandler, router: Router, store: SqlStore
) -> None:
    """Answered or declined: the row keeps the platform id, the display name and the surface."""
    request_id = await _ask(human, "requestApproval", APPROVAL)
    click = Interaction(request_id, ACTOR, Verb.APPROVE, surface="slack", name="Alice A.")
    assert isinstance(await router.handle(click), Settled)
    other = await _ask(human, "requestApproval", APPROVAL)
    inputs = {"reason": "not today"}
    no = Interaction(other, APPROVER, Verb.DECLINE, inputs, surface="teams", name="Bob B.")
    assert isinstance(await router.handle(no), Settled)
    (answered,) = [e for e in await store.list_audit(request_id=request_id)
                   if e.action == "request.resolved"]  # fmt: skip
    assert answered.actor_id == ACTOR
    assert answered.detail == {"result": '{"approved":true}', "surface": "slack",
                               "name": "Alice A."}  # fmt: skip
    (declined,) = [e for e in await store.list_audit(request_id=other)
                   if e.action == "request.rejected"]  # fmt: skip
    assert declined.actor_id == APPROVER
    assert declined.detail == {"reason": "not today", "surface": "teams", "name": "Bob B."}


async def test_an_approver_or_one_of_the_actors_other_ids_may_answer(
    human: HumanInputToolHandler, router: Router
) -> None:
    first = await _ask(human, "requestApproval", APPROVAL)
    assert isinstance(await router.handle(Interaction(first, APPROVER, Verb.APPROVE)), Settled)
    second = await _ask(human, "requestApproval", APPROVAL)
    teams = Interaction(second, "aad-object-id", Verb.APPROVE, aliases=(ACTOR,))
    assert isinstance(await router.handle(teams), Settled)


async def test_a_second_answer_is_told_who_answered_first(
    human: HumanInputToolHandler, router: Router
) -> None:
    request_id = await _ask(human, "confirmAction", {"title": "Drop", "message": "Sure?"})
    await router.handle(Interaction(request_id, ACTOR, Verb.CONFIRM))
    again = await router.handle(Interaction(request_id, APPROVER, Verb.CANCEL))
    assert isinstance(again, Refused) and again.reason is Refusal.SETTLED
    assert again.notice.template == "This request was already answered by {by} {at}"
    assert again.notice.people == {"by": ACTOR}
    assert await human.handler.wait(request_id, timeout=2) == '{"confirmed":true}'


async def test_decline_asks_for_its_reason_then_rejects_with_it(
    human: HumanInputToolHandler, router: Router
) -> None:
    request_id = await _ask(human, "selectOption", {"question": "Which?", "options": ["a"]})
    bare = await router.handle(Interaction(request_id, ACTOR, Verb.DECLINE, submitted=False))
    assert isinstance(bare, NeedsForm) and bare.form.name == "decline"
    inputs = {"reason": "none of these"}
    declined = await router.handle(Interaction(request_id, ACTOR, Verb.DECLINE, inputs))
    assert isinstance(declined, Settled) and declined.record.reason == "none of these"
    with pytest.raises(HumanInputRejectedError, match="none of these"):
        await human.handler.wait(request_id, timeout=2)
    late = await router.handle(Interaction(request_id, ACTOR, Verb.CHOOSE, {"choice": "0"}))
    assert isinstance(late, Refused)
    assert late.notice.template.startswith("This request was already declined by {by}")


async def test_every_builtin_tool_can_be_declined(
    human: HumanInputToolHandler, router: Router, store: SqlStore
) -> None:
    arguments: dict[str, dict[str, Any]] = {
        "AskUserQuestion": {"question": "q"},
        "requestApproval": APPROVAL,
        "selectOption": {"question": "q", "options": ["a", "b"]},
        "collectUserData": {"fields": [{"name": "n", "label": "N"}]},
        "uploadFile": {"purpose": "p"},
        "confirmAction": {"title": "t", "message": "m"},
    }
    for tool, args in arguments.items():
        request_id = await _ask(human, tool, args)
        outcome = await router.handle(Interaction(request_id, ACTOR, Verb.DECLINE, {}))
        assert isinstance(outcome, Settled), tool
        assert outcome.record.status is RequestStatus.REJECTED


async def test_invalid_inputs_come_back_per_field_and_leave_the_request_open(
    human: HumanInputToolHandler, router: Router
) -> None:
    fields = [
        {"name": "n", "label": "N", "type": "integer", "max": 5},
        {"name": "day", "label": "Day", "type": "date"},
    ]
    request_id = await _ask(human, "collectUserData", {"fields": fields})
    bad = await router.handle(Interaction(request_id, ACTOR, Verb.SUBMIT, {"n": "9", "day": "x"}))
    assert isinstance(bad, Invalid) and bad.form is not None
    assert bad.errors == {"n": "At most 5", "day": "Enter a date (YYYY-MM-DD)"}
    good = {"n": "5", "day": "2026-12-24"}
    assert isinstance(
        await router.handle(Interaction(request_id, ACTOR, Verb.SUBMIT, good)), Settled
    )
    answer = json.loads(await human.handler.wait(request_id, timeout=2))
    assert answer == {"n": 5, "day": "2026-12-24"}


async def test_the_tools_own_check_is_reported_on_the_field(
    human: HumanInputToolHandler, router: Router
) -> None:
    request_id = await _ask(human, "uploadFile", {"purpose": "p", "acceptedTypes": ["pdf"]})
    file = {"name": "cat.png", "size": 10, "url": "https://files.example/cat.png"}
    outcome = await router.handle(Interaction(request_id, ACTOR, Verb.SUBMIT, {"file": file}))
    assert isinstance(outcome, Invalid)
    assert list(outcome.errors) == ["file"] and "accepted types" in outcome.errors["file"]


async def test_a_control_the_request_does_not_have_is_unfit(
    human: HumanInputToolHandler, router: Router
) -> None:
    request_id = await _ask(human, "requestApproval", APPROVAL)
    outcome = await router.handle(Interaction(request_id, ACTOR, Verb.CHOOSE, {"choice": "0"}))
    assert isinstance(outcome, Refused) and outcome.reason is Refusal.UNFIT
    assert request_id in human.handler.pending


async def test_an_unknown_request(router: Router) -> None:
    outcome = await router.handle(Interaction("nope", ACTOR, Verb.APPROVE))
    assert isinstance(outcome, Refused) and outcome.reason is Refusal.UNKNOWN
    assert outcome.notice.plain == "This request is no longer known."


async def test_an_expired_request_says_when(store: SqlStore) -> None:
    handler = HumanInputHandler(store=store)
    human = HumanInputToolHandler.builtin(handler=handler)
    router = Router(store=store, handler_for=lambda c: handler, tools=human.tools)
    pending = await handler.create("requestApproval", APPROVAL, actor_id=ACTOR, timeout=0.01)
    with pytest.raises(TimeoutError):
        await handler.wait(pending.pending_id, timeout=2)
    await handler.drain()
    outcome = await router.handle(Interaction(pending.pending_id, ACTOR, Verb.APPROVE))
    assert isinstance(outcome, Refused) and outcome.notice.template == "This request expired {at}."


async def test_a_tool_declared_by_name_gets_the_text_verbatim(store: SqlStore) -> None:
    human = HumanInputToolHandler(
        tool_names={"AskUserQuestion"}, handler=HumanInputHandler(store=store)
    )
    router = Router(store=store, handler_for=lambda c: human.handler, tools=human.tools)
    pending = await human.handler.create("AskUserQuestion", {"question": "Colour?"}, actor_id=ACTOR)
    inputs = {"answer": "blue, I think"}
    outcome = await router.handle(Interaction(pending.pending_id, ACTOR, Verb.ANSWER, inputs))
    assert isinstance(outcome, Settled)
    assert await human.handler.wait(pending.pending_id, timeout=2) == "blue, I think"


async def test_two_answers_at_once_settle_once(
    human: HumanInputToolHandler, router: Router
) -> None:
    request_id = await _ask(human, "requestApproval", APPROVAL)
    outcomes = await asyncio.gather(
        router.handle(Interaction(request_id, ACTOR, Verb.APPROVE)),
        router.handle(Interaction(request_id, APPROVER, Verb.DECLINE, {"reason": "no"})),
    )
    assert sorted(type(o).__name__ for o in outcomes) == ["Refused", "Settled"]


async def test_an_answer_the_database_cannot_take_is_not_taken(
    store: SqlStore, tmp_path: Path
) -> None:
    """Nobody is told "answered" when nothing was recorded: the request stays open."""
    writer = HumanInputToolHandler.builtin(handler=HumanInputHandler(store=store))
    pending = await writer.handler.create_detached("requestApproval", APPROVAL, actor_id=ACTOR)
    read_only = await open_store(
        f"sqlite+aiosqlite:///file:{tmp_path / 'hitl.db'}?mode=ro&uri=true", migrate=False
    )
    try:
        handler = HumanInputHandler(store=read_only)
        router = Router(store=read_only, handler_for=lambda c: handler, tools=writer.tools)
        outcome = await router.handle(Interaction(pending.pending_id, ACTOR, Verb.APPROVE))
        assert isinstance(outcome, Refused) and outcome.reason is Refusal.UNAVAILABLE
        assert outcome.notice.plain.startswith("This request cannot be answered right now")
    finally:
        await read_only.close()
    record = await store.get_request(pending.pending_id)
    assert record is not None and record.status is RequestStatus.PENDING


# -- a whole answer (AG-UI's resume): Router.submit_answer -------------------------------------


async def test_a_whole_answer_is_validated_then_settles(
    human: HumanInputToolHandler, router: Router
) -> None:
    request_id = await _ask(human, "selectOption", {"question": "Which?", "options": ["a", "b"]})
    given = Interaction(request_id, ACTOR, Verb.SUBMIT, surface="ag-ui")
    wrong = await router.submit_answer(given, '{"selectedIndex": 5, "selectedValue": "z"}')
    assert isinstance(wrong, Invalid) and wrong.errors
    assert request_id in human.handler.pending  # nothing settled
    right = await router.submit_answer(given, '{"selectedIndex": 1, "selectedValue": "b"}')
    assert isinstance(right, Settled) and right.record.settled_by == ACTOR
    answer = await human.handler.wait(request_id, timeout=2)
    assert json.loads(answer) == {"selectedIndex": 1, "selectedValue": "b"}
    again = await router.submit_answer(given, '{"selectedIndex": 0, "selectedValue": "a"}')
    assert isinstance(again, Refused) and again.reason is Refusal.SETTLED


async def test_a_whole_answer_from_a_stranger_is_refused(
    human: HumanInputToolHandler, router: Router
) -> None:
    request_id = await _ask(human, "requestApproval", APPROVAL)
    given = Interaction(request_id, STRANGER, Verb.SUBMIT, surface="ag-ui")
    outcome = await router.submit_answer(given, '{"approved": true}')
    assert isinstance(outcome, Refused) and outcome.reason is Refusal.NOT_YOURS
    assert request_id in human.handler.pending
