"""A person as an A2A agent, end to end: `serve` (Server.start) with the fake Slack around it,
called with the a2a-sdk's own client over JSON-RPC and HTTP+JSON; each task is a door request
posted in Slack and settled there by a click."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)
from a2a.utils.errors import InvalidParamsError, TaskNotCancelableError, TaskNotFoundError
from a2a.utils.proto_utils import validate_proto_required_fields
from google.protobuf.json_format import MessageToDict, ParseDict

from bot.doors.tokens import Tokens
from bot.store.doors import DoorTables
from tests.adapters.doors.a2a.conftest import TO, Caller, asking, calling, questioning
from tests.adapters.doors.api.test_api import posted
from tests.adapters.surfaces.slack.conftest import CHANNEL, WAIT, StartEnv, has_actions

JSON = dict[str, Any]
BINDINGS = ["JSONRPC", "HTTP+JSON"]


def answer_of(task: Task) -> Any:
    (artifact,) = task.artifacts
    (part,) = artifact.parts
    return MessageToDict(part.data)


def said(task: Task) -> str:
    return " ".join(part.text for part in task.status.message.parts)


async def sent(caller: Caller, binding: str, message: Any, **config: Any) -> Task:
    """The task SendMessage returns."""
    async with caller.client(binding, **config) as client:
        (response,) = [event async for event in caller.events(client, message)]
        assert response.HasField("task")
        return response.task


async def api_view(caller: Caller, request_id: str) -> JSON:
    """The same request through the HTTP API."""
    headers = {"Authorization": f"Bearer {caller.token}"}
    url = f"{caller.env.server.url}/api/v1/requests/{request_id}"
    async with caller.env.http.get(url, headers=headers) as response:
        assert response.status == 200
        body: JSON = await response.json()
        return body


async def test_the_card_is_the_sdk_s_card_with_five_skills_and_the_bearer_scheme(
    start_env: StartEnv,
) -> None:
    async with calling(start_env) as caller:
        raw = (await caller.http.get(f"{caller.env.server.url}/.well-known/agent-card.json")).json()
    card = ParseDict(raw, AgentCard())  # the SDK's 1.x type, strictly: no field unknown
    validate_proto_required_fields(card)  # and every field A2A requires
    assert [skill.id for skill in card.skills] == [
        "ask_question",
        "request_approval",
        "select_option",
        "collect_data",
        "confirm_action",
    ]
    assert card.capabilities.streaming and card.capabilities.push_notifications
    assert card.security_schemes["bearer"].http_auth_security_scheme.scheme == "Bearer"
    assert [list(r.schemes) for r in card.security_requirements] == [["bearer"]]
    bindings = {i.protocol_binding: i.url for i in card.supported_interfaces}
    assert bindings == {"JSONRPC": f"{caller.env.server.url}/a2a",
                        "HTTP+JSON": f"{caller.env.server.url}/a2a/rest"}  # fmt: skip
    assert {i.protocol_version for i in card.supported_interfaces} == {"1.0"}


@pytest.mark.parametrize("binding", BINDINGS)
async def test_an_approval_completes_with_the_answer_as_a_data_artifact(
    start_env: StartEnv, binding: str
) -> None:
    async with calling(start_env) as caller:
        waiting = asyncio.create_task(sent(caller, binding, asking()))
        request_id = await pending_id(caller)
        assert not waiting.done()  # working while the person decides
        await caller.env.click(await posted(caller.env, request_id), "hitl_approve")
        task = await asyncio.wait_for(waiting, WAIT)
        assert task.id == request_id and task.status.state == TaskState.TASK_STATE_COMPLETED
        assert answer_of(task)["approved"] is True
        assert "Answered by" in said(task)
        seen = await api_view(caller, request_id)  # one row: the API sees the task
        assert seen["status"] == "answered" and seen["answer"]["approved"] is True
        audit = await caller.env.store.list_audit(request_id=request_id)
        asked = [e for e in audit if e.action == "door.asked"]
        assert [e.detail["requester"] for e in asked] == ["a2a-agent"]
        (created,) = [e for e in audit if e.action == "request.created"]
        assert (created.detail["door"], created.detail["requester"]) == ("a2a", "a2a-agent")


async def pending_id(caller: Caller) -> str:
    """The one request the token asked, once it exists."""
    for _ in range(int(WAIT / 0.02)):
        doors = caller.env.server.service.doors
        assert doors is not None
        rows = await doors.doors.list("a2a-agent")
        if rows:
            return str(rows[0]["id"])
        await asyncio.sleep(0.02)
    raise AssertionError("nothing was asked")


async def test_a_text_part_is_asked_as_a_question_and_a_decline_rejects_with_the_reason(
    start_env: StartEnv,
) -> None:
    async with calling(start_env) as caller:
        waiting = asyncio.create_task(
            sent(caller, "JSONRPC", questioning("Which region?", {"to": TO}))
        )
        request_id = await pending_id(caller)
        message = await posted(caller.env, request_id)
        assert "Which region?" in json.dumps(message)
        await caller.env.click(message, "hitl_decline")
        view = await caller.env.modal()
        await caller.env.submit(view, {"reason": {"reason": "Ask ops"}})
        task = await asyncio.wait_for(waiting, WAIT)
        assert task.status.state == TaskState.TASK_STATE_REJECTED
        assert "Ask ops" in said(task) and not task.artifacts


@pytest.mark.parametrize("binding", BINDINGS)
async def test_cancel_task_withdraws_the_request(start_env: StartEnv, binding: str) -> None:
    async with calling(start_env) as caller:
        working = await sent(caller, binding, asking(), polling=True)  # returnImmediately
        assert working.status.state == TaskState.TASK_STATE_WORKING
        message = await posted(caller.env, working.id)
        async with caller.client(binding) as client:
            task = await client.cancel_task(
                CancelTaskRequest(id=working.id), context=caller.context
            )
            assert task.status.state == TaskState.TASK_STATE_CANCELED
            assert "Withdrawn" in said(task)
            with pytest.raises(TaskNotCancelableError):
                await client.cancel_task(CancelTaskRequest(id=working.id), context=caller.context)
        assert (await api_view(caller, working.id))["status"] == "cancelled"

        def edited() -> bool:
            return not has_actions(caller.env.slack.message(CHANNEL, message["ts"]))

        assert await caller.env.slack.wait_for(edited, WAIT)


@pytest.mark.slow  # the shortest deadline, a second, waited out
async def test_an_expired_request_fails(start_env: StartEnv) -> None:
    async with calling(start_env) as caller:
        task = await asyncio.wait_for(sent(caller, "JSONRPC", asking(timeout_seconds=1)), WAIT)
        assert task.status.state == TaskState.TASK_STATE_FAILED
        assert "Expired" in said(task)


@pytest.mark.parametrize("binding", BINDINGS)
async def test_streaming_and_subscribing_stream_the_status_updates(
    start_env: StartEnv, binding: str
) -> None:
    async with calling(start_env) as caller, caller.client(binding, streaming=True) as client:
        streamed: list[StreamResponse] = []
        first = asyncio.Event()

        async def stream() -> None:
            async for event in caller.events(client, asking()):
                streamed.append(event)
                first.set()

        streaming = asyncio.create_task(stream())
        await asyncio.wait_for(first.wait(), WAIT)
        (opening,) = streamed
        assert opening.task.status.state == TaskState.TASK_STATE_WORKING
        task_id = opening.task.id
        subscribed: list[StreamResponse] = []
        subscribing = asyncio.create_task(collect(
            client.subscribe(SubscribeToTaskRequest(id=task_id), context=caller.context),
            subscribed))  # fmt: skip
        await caller.env.click(await posted(caller.env, task_id), "hitl_approve")
        await asyncio.wait_for(asyncio.gather(streaming, subscribing), WAIT)
        for events in (streamed, subscribed):
            kinds = [event.WhichOneof("payload") for event in events]
            assert kinds == ["task", "artifact_update", "status_update"]
            assert MessageToDict(events[1].artifact_update.artifact.parts[0].data)["approved"]
            assert events[2].status_update.status.state == TaskState.TASK_STATE_COMPLETED


async def collect(events: Any, into: list[StreamResponse]) -> None:
    async for event in events:
        into.append(event)


async def test_a_second_worker_answers_get_task_from_the_store(start_env: StartEnv) -> None:
    async with calling(start_env) as caller:
        working = await sent(caller, "JSONRPC", asking(), polling=True)
        await caller.env.click(await posted(caller.env, working.id), "hitl_approve")
        second = await start_env()  # another worker on the same database
        other = Caller(second, caller.token, caller.card, caller.http)
        other.card = rebased(caller.card, caller.env.server.url, second.server.url)
        async with other.client() as client:
            for _ in range(int(WAIT / 0.02)):
                task = await client.get_task(GetTaskRequest(id=working.id), context=other.context)
                if task.status.state != TaskState.TASK_STATE_WORKING:
                    break
                await asyncio.sleep(0.02)
            assert task.status.state == TaskState.TASK_STATE_COMPLETED
            assert answer_of(task)["approved"] is True
            with pytest.raises(TaskNotFoundError):
                await client.get_task(GetTaskRequest(id="no-such-task"), context=other.context)


def rebased(card: AgentCard, old: str, new: str) -> AgentCard:
    moved = AgentCard()
    moved.CopyFrom(card)
    for interface in moved.supported_interfaces:
        interface.url = interface.url.replace(old, new)
    return moved


@pytest.mark.parametrize("path", ["/a2a", "/a2a/rest/message:send", "/a2a/rest/tasks/x"])
@pytest.mark.parametrize("authorization", [None, "Bearer hitl_wrong", "Basic abc"])
async def test_a_call_without_a_valid_token_is_a_401_before_its_body_is_read(
    start_env: StartEnv, path: str, authorization: str | None
) -> None:
    async with calling(start_env) as caller:
        headers = {"Authorization": authorization} if authorization else {}
        method = "GET" if path.endswith("/x") else "POST"
        response = await caller.http.request(method, caller.env.server.url + path,
                                             content=b"{not json", headers=headers)  # fmt: skip
        assert response.status_code == 401
        assert response.json()["error"]["status"] == "UNAUTHENTICATED"


async def test_bad_input_is_one_a2a_error_never_a_500(
    start_env: StartEnv, caplog: pytest.LogCaptureFixture
) -> None:
    async with calling(start_env) as caller:
        headers = {"Authorization": f"Bearer {caller.token}", "A2A-Version": "1.0"}
        url = caller.env.server.url + "/a2a"
        garbage = await caller.http.post(url, content=b"{not json", headers=headers)
        assert garbage.status_code == 200 and garbage.json()["error"]["code"] == -32700
        rest = await caller.http.post(url + "/rest/message:send", content=b"[1", headers=headers)
        assert rest.status_code == 400
        for message, words in (
            (questioning("", {}), "needs a data part"),
            (questioning("Which?", {}), '"to" is missing'),
            (asking(tool="noSuchTool"), "unknown tool 'noSuchTool'"),
            (asking(arguments={"action": 5}), "invalid arguments for requestApproval"),
            (asking(to="nowhere:x"), "'nowhere' is not a surface"),
        ):
            with pytest.raises(InvalidParamsError) as refused:
                await sent(caller, "JSONRPC", message)
            assert words in str(refused.value), str(refused.value)
        deep = b'{"message": {"parts": [{"data": ' + b"[" * 50_000 + b"]" * 50_000 + b"}]}}"
        nested = await caller.http.post(url, content=deep, headers=headers)
        assert nested.status_code == 200 and nested.json()["error"]["code"] == -32600
        nested = await caller.http.post(url + "/rest/message:send", content=deep, headers=headers)
        assert nested.status_code == 400 and "nests deeper" in nested.json()["error"]["message"]
        typed = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": 5}}
        wrong = await caller.http.post(url, json=typed, headers=headers)
        assert wrong.status_code == 200 and wrong.json()["error"]["code"] == -32602
        assert not [r for r in caplog.records if r.exc_info], "a client's error logged a traceback"
        too_big = await caller.http.post(url, content=b"x" * 300_000, headers=headers)
        assert too_big.status_code == 413


async def test_a_request_slack_refuses_fails_as_undeliverable(start_env: StartEnv) -> None:
    async with calling(start_env) as caller:
        caller.env.slack.fail("chat.postMessage", "channel_not_found", times=20)
        task = await asyncio.wait_for(sent(caller, "JSONRPC", asking()), WAIT)
        assert task.status.state == TaskState.TASK_STATE_FAILED
        assert "Could not be delivered" in said(task)


async def test_a_message_sent_twice_is_one_task_in_its_context(start_env: StartEnv) -> None:
    async with calling(start_env) as caller:
        message = asking()
        message.context_id = "release-42"
        first = await sent(caller, "JSONRPC", message, polling=True)
        again = await sent(caller, "HTTP+JSON", message, polling=True)
        assert again.id == first.id and again.context_id == first.context_id == "release-42"
        doors = caller.env.server.service.doors
        assert doors is not None and len(await doors.doors.list("a2a-agent")) == 1


async def test_a_task_of_another_token_is_not_found(start_env: StartEnv) -> None:
    async with calling(start_env) as caller:
        working = await sent(caller, "JSONRPC", asking(), polling=True)
        other, _ = await Tokens(DoorTables(caller.env.store)).create("someone-else")
        stranger = Caller(caller.env, other, caller.card, caller.http)
        async with stranger.client() as client:
            with pytest.raises(TaskNotFoundError):
                await client.get_task(GetTaskRequest(id=working.id), context=stranger.context)
            with pytest.raises(TaskNotFoundError):
                await client.cancel_task(CancelTaskRequest(id=working.id), context=stranger.context)
        assert (await api_view(caller, working.id))["status"] == "pending"


async def test_a_call_without_the_a2a_version_header_is_refused_as_unsupported(
    start_env: StartEnv,
) -> None:
    async with calling(start_env) as caller:
        headers = {"Authorization": f"Bearer {caller.token}"}
        call = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}
        response = await caller.http.post(caller.env.server.url + "/a2a", json=call,
                                          headers=headers)  # fmt: skip
        assert response.status_code == 200
        assert response.json()["error"]["code"] == -32009  # VersionNotSupportedError
