"""The agent over AG-UI end to end: `hitl-bridge serve` (Server.start) with the fake Slack and
the fake Anthropic API around it, run over HTTP as an AG-UI client runs it (a RunAgentInput
posted, the SSE stream read). Every event is parsed back with the `ag-ui-protocol` package's
own types; a human tool's request ends a run with an interrupt, and a resume settles it."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from ag_ui.core import (
    Event,
    EventType,
    ResumeEntry,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    StepFinishedEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    ToolCallArgsEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    UserMessage,
)
from pydantic import TypeAdapter

from bot.doors.tokens import Tokens
from bot.human_tools.models import RequestApprovalAnswer
from bot.records import RequestStatus
from bot.store.doors import DoorTables
from tests.adapters.surfaces.slack.conftest import ALICE, CHANNEL, WAIT, Env, StartEnv, has_actions
from tests.adapters.surfaces.slack.test_delivery import click_in, copy_in, settled_in
from tests.fakes.anthropic_api import ErrorReply, reply, reply_text, text_block, tool_use_block

EVENT: TypeAdapter[Event] = TypeAdapter(Event)
APPROVAL = {"action": "Deploy v2 to production", "reason": "Release day"}
APPROVALS = "C0APPROVALS"
POLICY = f"""\
rules:
  - match: {{tool: requestApproval}}
    approvers: [actor, slack:{ALICE}]
    deliver: [thread, slack:{APPROVALS}]
"""


class Client:
    """An AG-UI client of the served app: one token, runs posted, streams read and parsed."""

    def __init__(self, env: Env, token: str) -> None:
        self.env, self.token = env, token
        self.url = f"{env.server.url}/ag-ui"

    async def post(self, body: Any, token: str | None = None) -> tuple[int, str, str]:
        headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        async with self.env.http.post(self.url, data=data, headers=headers) as response:
            return response.status, response.content_type, await response.text()

    async def run(
        self, thread: str, text: str | None = None, resume: list[ResumeEntry] | None = None
    ) -> list[Event]:
        messages = [UserMessage(id=uuid.uuid4().hex, content=text)] if text is not None else []
        run = RunAgentInput(
            thread_id=thread, run_id=uuid.uuid4().hex, messages=messages, resume=resume
        )
        status, kind, body = await self.post(run.model_dump(mode="json", by_alias=True),
                                             self.token)  # fmt: skip
        assert (status, kind) == (200, "text/event-stream"), body
        chunks = [chunk for chunk in body.split("\n\n") if chunk]
        assert all(chunk.startswith("data: ") for chunk in chunks), body
        events = [EVENT.validate_json(chunk.removeprefix("data: ")) for chunk in chunks]
        assert events[0].type is EventType.RUN_STARTED
        assert [e.type for e in events[1:-1] if e.type.startswith("RUN_")] == []
        assert events[-1].type in (EventType.RUN_FINISHED, EventType.RUN_ERROR)
        if events[-1].type is EventType.RUN_FINISHED:
            check_steps(events)
        return events

    async def resume(self, thread: str, request_id: str, status: str, payload: Any) -> list[Event]:
        entry = ResumeEntry(interrupt_id=request_id, status=status, payload=payload)
        return await self.run(thread, resume=[entry])


async def client_of(env: Env) -> Client:
    plain, _ = await Tokens(DoorTables(env.store)).create("web-app")
    return Client(env, plain)


@pytest.fixture
async def client(start_env: StartEnv) -> Client:
    return await client_of(await start_env())


def finished(events: list[Event]) -> RunFinishedEvent:
    last = events[-1]
    assert isinstance(last, RunFinishedEvent), last
    return last


def check_steps(events: list[Event]) -> None:
    """Steps as AG-UI's clients check them: each started and finished in the run, one around
    each tool call, started before its TOOL_CALL_START and finished after its result."""
    open_steps: list[str] = []
    for event in events:
        if isinstance(event, StepStartedEvent):
            open_steps.append(event.step_name)
        elif isinstance(event, StepFinishedEvent):
            assert event.step_name in open_steps, event
            open_steps.remove(event.step_name)
        elif isinstance(event, ToolCallStartEvent | ToolCallResultEvent):
            assert open_steps, f"{event.type} outside a step"
    assert open_steps == []


def interrupted(events: list[Event]) -> RunFinishedInterruptOutcome:
    outcome = finished(events).outcome
    assert isinstance(outcome, RunFinishedInterruptOutcome), outcome
    return outcome


def texts(events: list[Event]) -> list[str]:
    """Each text message's words, its pieces joined (a reply streams as the model writes)."""
    messages: dict[str, str] = {}
    for e in events:
        if isinstance(e, TextMessageContentEvent):
            messages[e.message_id] = messages.get(e.message_id, "") + e.delta
    return list(messages.values())


def kinds(events: list[Event]) -> list[EventType]:
    """The events' types, a run of TEXT_MESSAGE_CONTENT as one."""
    found: list[EventType] = []
    for e in events:
        piece = e.type is EventType.TEXT_MESSAGE_CONTENT
        if not (piece and found and found[-1] is EventType.TEXT_MESSAGE_CONTENT):
            found.append(e.type)
    return found


def results(events: list[Event]) -> list[Any]:
    return [json.loads(str(e.content)) for e in events if isinstance(e, ToolCallResultEvent)]


def script_approval(env: Env) -> None:
    env.model.script(
        reply(text_block("I'll ask first."),
              tool_use_block("requestApproval", APPROVAL, id="toolu_deploy")),
        reply_text("Deployed."),
    )  # fmt: skip


async def test_a_run_streams_the_models_text(client: Client) -> None:
    client.env.model.script(reply_text("Hello from the bridge."))
    events = await client.run("t-hello", "hi there")
    assert kinds(events) == [
        EventType.RUN_STARTED, EventType.TEXT_MESSAGE_START, EventType.TEXT_MESSAGE_CONTENT,
        EventType.TEXT_MESSAGE_END, EventType.RUN_FINISHED,
    ]  # fmt: skip
    assert texts(events) == ["Hello from the bridge."]
    pieces = [e for e in events if isinstance(e, TextMessageContentEvent)]
    assert len(pieces) > 1  # as the model wrote it, not whole at the end
    assert isinstance(finished(events).outcome, RunFinishedSuccessOutcome)
    (asked,) = client.env.model.requests
    assert asked.body["messages"][-1] == {"role": "user", "content": "hi there"}


async def test_an_approval_interrupts_and_a_resolved_resume_reaches_the_model(
    client: Client,
) -> None:
    env = client.env
    script_approval(env)
    first = await client.run("t-deploy", "ship it")
    assert texts(first) == ["I'll ask first."]
    (start,) = [e for e in first if isinstance(e, ToolCallStartEvent)]
    assert (start.tool_call_id, start.tool_call_name) == ("toolu_deploy", "requestApproval")
    (args,) = [e for e in first if isinstance(e, ToolCallArgsEvent)]
    assert json.loads(args.delta) == APPROVAL
    (interrupt,) = interrupted(first).interrupts
    record = await env.store.get_request(interrupt.id)
    assert record is not None and record.status is RequestStatus.PENDING
    assert record.actor_id == "ag-ui:web-app"
    assert interrupt.tool_call_id == "toolu_deploy"
    assert interrupt.response_schema == RequestApprovalAnswer.model_json_schema()
    assert interrupt.metadata == {"tool": "requestApproval", "arguments": APPROVAL}
    assert interrupt.expires_at is not None and record.expires_at is not None
    assert interrupt.expires_at.startswith(record.expires_at.strftime("%Y-%m-%dT%H:%M"))
    assert "Deploy v2 to production" in (interrupt.message or "")
    created = [e for e in await env.store.list_audit(request_id=record.id)]
    assert [e.action for e in created][:1] == ["request.created"]
    door = created[0].detail
    assert (door["door"], door["requester"]) == ("ag-ui", "web-app")  # the run's door, token

    assert kinds(first)[4:] == [
        EventType.STEP_STARTED, EventType.TOOL_CALL_START, EventType.TOOL_CALL_ARGS,
        EventType.TOOL_CALL_END, EventType.STEP_FINISHED, EventType.RUN_FINISHED,
    ]  # fmt: skip
    assert {e.step_name for e in first if isinstance(e, StepStartedEvent)} == {"requestApproval"}

    second = await client.resume("t-deploy", interrupt.id, "resolved", {"approved": True})
    assert [e.type for e in second[:4]] == [
        EventType.RUN_STARTED,
        EventType.STEP_STARTED,
        EventType.TOOL_CALL_RESULT,
        EventType.STEP_FINISHED,
    ]  # the held call's result, in a step of its own: steps pair within a run
    assert results(second) == [{"approved": True}]
    assert texts(second) == ["Deployed."]
    assert isinstance(finished(second).outcome, RunFinishedSuccessOutcome)
    assert json.loads(env.tool_result(2)["content"]) == {"approved": True}
    settled = await env.store.get_request(interrupt.id)
    assert settled is not None and settled.status is RequestStatus.RESOLVED
    assert settled.settled_by == "ag-ui:web-app"


async def test_a_cancelled_resume_is_a_decline_the_model_reads(client: Client) -> None:
    env = client.env
    env.model.script(
        reply(tool_use_block("requestApproval", APPROVAL, id="toolu_deploy")),
        reply_text("Understood, not deploying."),
    )
    (interrupt,) = interrupted(await client.run("t-no", "ship it")).interrupts
    events = await client.resume("t-no", interrupt.id, "cancelled", {"reason": "not on Friday"})
    assert texts(events) == ["Understood, not deploying."]
    result = env.tool_result(2)
    assert result.get("is_error") is True
    assert json.loads(result["content"]) == {"error": "Rejected: not on Friday"}
    record = await env.store.get_request(interrupt.id)
    assert record is not None and record.status is RequestStatus.REJECTED


async def test_a_bad_resume_payload_is_a_run_error_and_the_request_stays_open(
    client: Client,
) -> None:
    env = client.env
    script_approval(env)
    (interrupt,) = interrupted(await client.run("t-bad", "ship it")).interrupts
    refused = await client.resume("t-bad", interrupt.id, "resolved", {"approved": "perhaps"})
    error = refused[-1]
    assert isinstance(error, RunErrorEvent) and error.code == "invalid_answer"
    assert interrupt.id in error.message and "approved" in error.message
    assert "Traceback" not in error.message
    record = await env.store.get_request(interrupt.id)
    assert record is not None and record.status is RequestStatus.PENDING
    assert len(env.model.requests) == 1  # the model was not told anything
    fine = await client.resume("t-bad", interrupt.id, "resolved", {"approved": True})
    assert texts(fine) == ["Deployed."]


async def test_a_resume_of_an_unknown_interrupt_is_a_run_error(client: Client) -> None:
    events = await client.resume("t-none", "0" * 24, "resolved", {"approved": True})
    error = events[-1]
    assert isinstance(error, RunErrorEvent) and error.code == "unknown_interrupt"


async def served_with_copies(start_env: StartEnv, tmp_path: Path) -> Client:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    env = await start_env(HITL_POLICY_FILE=str(policy))
    env.slack.channels.update({CHANNEL, APPROVALS})
    return await client_of(env)


async def test_answered_in_slack_first_the_resume_gets_that_answer(
    start_env: StartEnv, tmp_path: Path
) -> None:
    client = await served_with_copies(start_env, tmp_path)
    env = client.env
    script_approval(env)
    (interrupt,) = interrupted(await client.run("t-slack", "ship it")).interrupts
    copy = await copy_in(env, APPROVALS)
    await click_in(env, APPROVALS, copy, "hitl_approve", ALICE)
    await settled_in(env, APPROVALS, copy["ts"], "Approved")
    events = await client.resume("t-slack", interrupt.id, "cancelled", {"reason": "too late"})
    assert results(events) == [{"approved": True}]  # Alice's answer, not this decline
    assert texts(events) == ["Deployed."]
    record = await env.store.get_request(interrupt.id)
    assert record is not None and record.settled_by == ALICE


async def test_answered_over_ag_ui_the_slack_copy_is_edited(
    start_env: StartEnv, tmp_path: Path
) -> None:
    client = await served_with_copies(start_env, tmp_path)
    env = client.env
    script_approval(env)
    (interrupt,) = interrupted(await client.run("t-web", "ship it")).interrupts
    copy = await copy_in(env, APPROVALS)
    events = await client.resume("t-web", interrupt.id, "resolved", {"approved": True})
    assert texts(events) == ["Deployed."]
    edited = await settled_in(env, APPROVALS, copy["ts"], "Approved")
    assert not has_actions(edited)
    await env.slack.wait_for(lambda: not has_actions(env.slack.message(APPROVALS, copy["ts"])),
                             WAIT)  # fmt: skip


async def test_a_run_needs_a_token_and_a_run_agent_input(client: Client) -> None:
    body = {"threadId": "t", "runId": "r", "messages": []}
    status, _, text = await client.post(body)
    assert (status, json.loads(text)) == (401, {"error": "a valid bearer token is needed"})
    status, _, _ = await client.post(body, token="hitl_not-a-token")
    assert status == 401
    status, _, text = await client.post(b"{not json", token=client.token)
    assert (status, json.loads(text)) == (400, {"error": "the body is not JSON"})
    status, _, text = await client.post({"threadId": "t"}, token=client.token)
    assert status == 400 and json.loads(text)["error"].startswith("not a RunAgentInput: runId")


async def test_a_new_run_while_the_turn_waits_is_a_run_error(client: Client) -> None:
    script_approval(client.env)
    interrupted(await client.run("t-busy", "ship it"))
    events = await client.run("t-busy", "and another thing")
    error = events[-1]
    assert isinstance(error, RunErrorEvent) and error.code == "thread_busy"


async def test_a_turn_that_fails_is_one_run_error(client: Client) -> None:
    client.env.model.script(ErrorReply(400, "invalid_request_error", "the model refused"))
    events = await client.run("t-fail", "hi")
    error = events[-1]
    assert isinstance(error, RunErrorEvent) and error.code == "turn_failed"
    assert error.message == "The agent's turn failed on the bridge's side."


async def test_the_next_run_on_a_thread_goes_on_with_its_transcript(client: Client) -> None:
    env = client.env
    env.model.script(reply_text("First."), reply_text("Second."))
    assert texts(await client.run("t-two", "one")) == ["First."]
    assert texts(await client.run("t-two", "two")) == ["Second."]
    sent = env.model.requests[1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert sent[-1]["content"] == "two"
