"""A2A 1.0 to the letter, as its TCK checks it (bench/a2a_tck.py runs the kit itself): each
behaviour here with the a2a-sdk's own client, or raw HTTP where the kit sends raw HTTP, against
the served bridge."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from a2a.server.routes import create_rest_routes
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    ListTasksResponse,
    TaskState,
)
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError, UnsupportedOperationError
from google.protobuf.timestamp_pb2 import Timestamp
from starlette.routing import Route

from adapters.doors.a2a.handler import PersonHandler
from bot.doors.tokens import Tokens
from bot.store.doors import DoorTables
from tests.adapters.doors.a2a.conftest import TO, Caller, asking, calling
from tests.adapters.doors.a2a.test_a2a import BINDINGS, rebased, sent
from tests.adapters.doors.api.test_api import posted
from tests.adapters.surfaces.slack.conftest import WAIT, StartEnv

JSON = dict[str, Any]


def headers(caller: Caller) -> dict[str, str]:
    return {"Authorization": f"Bearer {caller.token}", "A2A-Version": "1.0"}


async def rpc(caller: Caller, method: str, params: JSON) -> JSON:
    call = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    response = await caller.http.post(caller.env.server.url + "/a2a", json=call,
                                      headers=headers(caller))  # fmt: skip
    assert response.status_code == 200
    body: JSON = response.json()
    return body


# -- a message naming a task ------------------------------------------------------------------


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_message_naming_an_unknown_or_another_token_s_task_is_task_not_found(
    start_env: StartEnv, binding: str
) -> None:
    async with calling(start_env) as caller:
        theirs = await sent(caller, binding, asking(), polling=True)
        other, _ = await Tokens(DoorTables(caller.env.store)).create("someone-else")
        stranger = Caller(caller.env, other, caller.card, caller.http)
        for who, task_id in ((caller, "no-such-task"), (stranger, theirs.id)):
            message = asking()
            message.task_id = task_id
            with pytest.raises(TaskNotFoundError) as refused:
                await sent(who, binding, message, polling=True)
            assert "no-such-task" in str(refused.value) or theirs.id in str(refused.value)


async def test_a_message_naming_a_task_answers_in_each_binding_s_own_words(
    start_env: StartEnv,
) -> None:
    async with calling(start_env) as caller:
        message = {"messageId": "m1", "role": "ROLE_USER", "taskId": "no-such-task",
                   "parts": [{"text": "hello"}]}  # fmt: skip
        body = await rpc(caller, "SendMessage", {"message": message})
        assert body["error"]["code"] == -32001
        url = caller.env.server.url + "/a2a/rest/message:send"
        rest = await caller.http.post(url, json={"message": message}, headers=headers(caller))
        assert rest.status_code == 404


async def test_a_message_to_the_token_s_own_task_is_unsupported_or_a_context_mismatch(
    start_env: StartEnv,
) -> None:
    async with calling(start_env) as caller:
        task = await sent(caller, "JSONRPC", asking(), polling=True)
        again = asking()
        again.task_id = task.id
        with pytest.raises(UnsupportedOperationError):
            await sent(caller, "JSONRPC", again, polling=True)
        again.context_id = "another-context"
        with pytest.raises(InvalidParamsError) as refused:
            await sent(caller, "JSONRPC", again, polling=True)
        assert "context" in str(refused.value)


# -- ListTasks ----------------------------------------------------------------------------------


async def listed(caller: Caller, binding: str, **params: Any) -> ListTasksResponse:
    async with caller.client(binding) as client:
        return await client.list_tasks(ListTasksRequest(**params), context=caller.context)


@pytest.mark.parametrize("binding", BINDINGS)
async def test_list_tasks_lists_the_token_s_own_tasks_newest_status_first_in_pages(
    start_env: StartEnv, binding: str
) -> None:
    async with calling(start_env) as caller:
        other, _ = await Tokens(DoorTables(caller.env.store)).create("someone-else")
        stranger = Caller(caller.env, other, caller.card, caller.http)
        await sent(stranger, binding, asking(), polling=True)  # not the caller's: never listed
        in_context = []
        for _ in range(3):
            message = asking()
            message.context_id = "release-42"
            in_context.append((await sent(caller, binding, message, polling=True)).id)
        alone = (await sent(caller, binding, asking(), polling=True)).id
        answered = in_context[0]  # settled last: its status is the newest
        await caller.env.click(await posted(caller.env, answered), "hitl_approve")
        await wait_settled(caller, answered)
        everything = await listed(caller, binding)
        ids = [task.id for task in everything.tasks]
        assert ids == [answered, alone, *reversed(in_context[1:])]
        assert everything.total_size == 4 and everything.next_page_token == ""
        assert not any(task.artifacts for task in everything.tasks)  # not asked for
        with_answers = await listed(caller, binding, include_artifacts=True)
        assert [len(task.artifacts) for task in with_answers.tasks] == [1, 0, 0, 0]
        pages, token = [], ""
        while True:
            page = await listed(caller, binding, page_size=2, context_id="release-42",
                                page_token=token)  # fmt: skip
            assert page.page_size == 2 and page.total_size == 3
            pages.append([task.id for task in page.tasks])
            token = page.next_page_token
            if not token:
                break
        assert pages == [[answered, in_context[2]], [in_context[1]]]
        assert [t.id for t in (await listed(caller, binding, context_id=alone)).tasks] == [alone]
        done = await listed(caller, binding, status=TaskState.TASK_STATE_COMPLETED)
        assert [task.id for task in done.tasks] == [answered]
        working = await listed(caller, binding, status=TaskState.TASK_STATE_WORKING)
        assert len(working.tasks) == 3
        never = await listed(caller, binding, status=TaskState.TASK_STATE_INPUT_REQUIRED)
        assert not never.tasks and never.next_page_token == ""
        later = Timestamp()
        later.FromDatetime(datetime.now(UTC) + timedelta(hours=1))
        assert not (await listed(caller, binding, status_timestamp_after=later)).tasks
        earlier = Timestamp()
        earlier.FromDatetime(datetime.now(UTC) - timedelta(hours=1))
        assert len((await listed(caller, binding, status_timestamp_after=earlier)).tasks) == 4


async def wait_settled(caller: Caller, task_id: str) -> None:
    async with caller.client() as client:
        for _ in range(int(WAIT / 0.02)):
            task = await client.get_task(GetTaskRequest(id=task_id), context=caller.context)
            if task.status.state != TaskState.TASK_STATE_WORKING:
                return
            await asyncio.sleep(0.02)
    raise AssertionError(f"task {task_id} never settled")


async def test_list_tasks_answers_the_same_on_every_worker_and_refuses_bad_pages(
    start_env: StartEnv,
) -> None:
    async with calling(start_env) as caller:
        for _ in range(3):
            await sent(caller, "JSONRPC", asking(), polling=True)
        first = await rpc(caller, "ListTasks", {"pageSize": 2})
        result = first["result"]
        assert len(result["tasks"]) == 2 and result["nextPageToken"]
        assert all("artifacts" not in task for task in result["tasks"])
        second = await start_env()  # another worker on the same database
        other = Caller(second, caller.token, caller.card, caller.http)
        other.card = rebased(caller.card, caller.env.server.url, second.server.url)
        rest = await other.http.get(second.server.url + "/a2a/rest/tasks", headers=headers(other),
                                    params={"pageSize": 2})  # fmt: skip
        assert rest.status_code == 200
        assert [t["id"] for t in rest.json()["tasks"]] == [t["id"] for t in result["tasks"]]
        last = await listed(other, "JSONRPC", page_size=2, page_token=result["nextPageToken"])
        assert len(last.tasks) == 1 and last.next_page_token == ""
        raw = await rpc(caller, "ListTasks", {"pageToken": result["nextPageToken"]})
        assert raw["result"]["nextPageToken"] == ""  # present, empty, on the last page
        for params in ({"pageSize": 0}, {"pageSize": 101}, {"pageToken": "not-ours"},
                       {"historyLength": -1}):  # fmt: skip
            refused = await rpc(caller, "ListTasks", params)
            assert refused["error"]["code"] == -32602, (params, refused)
        url, token = caller.env.server.url + "/a2a/rest/tasks", {"pageToken": "bm90LW91cnM"}
        bad = await caller.http.get(url, params=token, headers=headers(caller))
        assert bad.status_code == 400


# -- media types --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "part",
    [
        {"raw": "dGNr", "mediaType": "application/x-unsupported-tck-type"},
        {"url": "https://example.com/plan.pdf", "mediaType": "application/pdf"},
        {"text": "Which region?", "mediaType": "image/png"},
        {"data": {"tool": "ask_question", "to": TO}, "mediaType": "text/csv"},
    ],
)
async def test_a_part_of_a_media_type_the_door_does_not_take_is_content_type_not_supported(
    start_env: StartEnv, part: JSON
) -> None:
    async with calling(start_env) as caller:
        message = {"messageId": "m1", "role": "ROLE_USER", "parts": [part],
                   "metadata": {"to": TO}}  # fmt: skip
        body = await rpc(caller, "SendMessage", {"message": message})
        assert body["error"]["code"] == -32005, body
        url = caller.env.server.url + "/a2a/rest/message:send"
        rest = await caller.http.post(url, json={"message": message}, headers=headers(caller))
        assert rest.status_code == 415
        doors = caller.env.server.service.doors
        assert doors is not None and not await doors.doors.list("a2a-agent")  # nothing asked


async def test_a_body_sent_as_another_content_type_is_content_type_not_supported(
    start_env: StartEnv,
) -> None:
    async with calling(start_env) as caller:
        call = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}
        sent_as = {**headers(caller), "Content-Type": "text/plain"}
        url = caller.env.server.url + "/a2a"
        body = await caller.http.post(url, content=json.dumps(call), headers=sent_as)
        assert body.status_code == 200 and body.json()["error"]["code"] == -32005
        rest = await caller.http.post(url + "/rest/message:send", content=b"{}", headers=sent_as)
        assert rest.status_code == 415
        assert rest.json()["error"]["details"][0]["reason"] == "CONTENT_TYPE_NOT_SUPPORTED"


async def test_the_http_json_errors_take_the_spec_s_statuses(start_env: StartEnv) -> None:
    async with calling(start_env) as caller:
        task = await sent(caller, "JSONRPC", asking(), polling=True)
        url = f"{caller.env.server.url}/a2a/rest/tasks/{task.id}:cancel"
        first = await caller.http.post(url, json={}, headers=headers(caller))
        assert first.status_code == 200
        again = await caller.http.post(url, json={}, headers=headers(caller))
        assert again.status_code == 409  # TaskNotCancelableError, §5.4 (the SDK says 400)
        assert again.json()["error"]["status"] == "FAILED_PRECONDITION"
        subscribe = await caller.http.get(f"{caller.env.server.url}/a2a/rest/tasks/{task.id}"
                                          ":subscribe", headers=headers(caller))  # fmt: skip
        assert subscribe.status_code == 400  # UnsupportedOperationError: the task has ended
        assert subscribe.json()["error"]["status"] == "UNIMPLEMENTED"


# -- the AgentCard ------------------------------------------------------------------------------


async def test_the_card_has_an_etag_and_a_max_age_and_answers_304_when_unchanged(
    start_env: StartEnv,
) -> None:
    async with calling(start_env) as caller:
        url = caller.env.server.url + "/.well-known/agent-card.json"
        first = await caller.http.get(url)
        etag = first.headers["ETag"]
        assert etag.startswith('"') and etag.endswith('"')
        assert "max-age=" in first.headers["Cache-Control"]
        again = await caller.http.get(url, headers={"If-None-Match": etag})
        assert again.status_code == 304 and not again.content
        assert again.headers["ETag"] == etag and "max-age=" in again.headers["Cache-Control"]
        listed = await caller.http.get(url, headers={"If-None-Match": f'"other", {etag}'})
        assert listed.status_code == 304
        weak = await caller.http.get(url, headers={"If-None-Match": f"W/{etag}"})
        assert weak.status_code == 304  # If-None-Match compares weakly (RFC 9110 §13.1.2)
        stale = await caller.http.get(url, headers={"If-None-Match": '"stale"'})
        assert stale.status_code == 200 and stale.json() == first.json()


async def test_the_card_s_urls_never_come_from_the_host_header(start_env: StartEnv) -> None:
    async with calling(start_env) as caller:
        url = caller.env.server.url + "/.well-known/agent-card.json"
        card = (await caller.http.get(url, headers={"Host": "evil.example.com"})).json()
        urls = [i["url"] for i in card["supportedInterfaces"]] + [card["provider"]["url"]]
        assert all(u.startswith(caller.env.server.url) for u in urls), urls
        public = await start_env(HITL_PUBLIC_URL="https://hitl.example.org/")
        named = (await caller.http.get(public.server.url + "/.well-known/agent-card.json",
                                       headers={"Host": "evil.example.com"})).json()  # fmt: skip
        assert named["supportedInterfaces"][0]["url"] == "https://hitl.example.org/a2a"


async def test_serve_warns_once_at_start_when_the_public_url_is_unset(
    start_env: StartEnv, caplog: pytest.LogCaptureFixture
) -> None:
    await start_env()
    warned = [r for r in caplog.records if "HITL_PUBLIC_URL is unset" in r.getMessage()]
    assert len(warned) == 1 and warned[0].levelname == "WARNING"
    caplog.clear()
    await start_env(HITL_PUBLIC_URL="https://hitl.example.org")
    assert not [r for r in caplog.records if "HITL_PUBLIC_URL" in r.getMessage()]


# -- the HTTP+JSON binding's routes -------------------------------------------------------------


async def test_every_http_json_route_is_mounted_delete_included(start_env: StartEnv) -> None:
    async with calling(start_env, HITL_WEBHOOK_ALLOW_PRIVATE=1) as caller:
        task = await sent(caller, "JSONRPC", asking(), polling=True)
        base = caller.env.server.url + "/a2a/rest"
        config = {"url": "http://127.0.0.1:9/hook", "id": "c1"}
        made = await caller.http.post(f"{base}/tasks/{task.id}/pushNotificationConfigs",
                                      json=config, headers=headers(caller))  # fmt: skip
        assert made.status_code == 200, made.text
        for route in create_rest_routes(PersonHandler.__new__(PersonHandler)):
            if not isinstance(route, Route):  # the tenant's Mount: the same routes again
                continue
            path = route.path.replace("{id}", task.id).replace("{push_id}", "c1")
            for method in sorted(route.methods or ()):
                if method == "HEAD" or path.endswith((":send", ":stream", ":subscribe")):
                    continue  # asking or streaming: tested as themselves
                got = await caller.http.request(method, base + path, headers=headers(caller),
                                                json={} if method == "POST" else None)  # fmt: skip
                assert got.status_code != 405, (method, path)
        gone = await caller.http.get(f"{base}/tasks/{task.id}/pushNotificationConfigs",
                                     headers=headers(caller))  # fmt: skip
        assert gone.json().get("configs", []) == []  # the DELETE above removed it


# -- the A2A-Version header ---------------------------------------------------------------------


async def test_an_unsupported_a2a_version_is_cut_and_its_warning_said_once_per_value(
    start_env: StartEnv, caplog: pytest.LogCaptureFixture
) -> None:
    async with calling(start_env) as caller:
        caplog.clear()
        huge = "9." + "x" * 8000
        call = {"jsonrpc": "2.0", "id": 7, "method": "GetTask", "params": {"id": "x"}}
        url = caller.env.server.url + "/a2a"
        for version in [huge] * 20 + ["0.3"] * 5:
            sent_with = {**headers(caller), "A2A-Version": version}
            body = (await caller.http.post(url, json=call, headers=sent_with)).json()
            assert body["error"]["code"] == -32009 and body["id"] == 7
            assert len(body["error"]["message"]) < 200
            rest = await caller.http.get(url + "/rest/tasks/x", headers=sent_with)
            assert rest.status_code == 400 and "x" * 100 not in rest.text
        said = [r for r in caplog.records if "A2A-Version" in r.getMessage()]
        assert len(said) == 2, [r.getMessage()[:100] for r in said]  # one a distinct value
        assert all(len(r.getMessage()) < 300 for r in caplog.records)
        assert "x" * 100 not in caplog.text
        fine = await caller.http.post(
            url, json=call, headers={**headers(caller), "A2A-Version": "1.0"}
        )
        assert fine.json()["error"]["code"] == -32001  # past the check: the task is not found


async def test_a_message_naming_nobody_asks_the_default_addressee(start_env: StartEnv) -> None:
    async with calling(start_env, HITL_A2A_DEFAULT_TO=TO) as caller:
        message = {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "Which region?"}]}
        params = {"message": message, "configuration": {"returnImmediately": True}}
        body = await rpc(caller, "SendMessage", params)
        task = body["result"]["task"]
        assert task["status"]["state"] == "TASK_STATE_WORKING"
        assert task["metadata"]["hitl"]["to"] == TO


async def test_http_json_answers_as_application_json_and_fields_are_camel_case(
    start_env: StartEnv,
) -> None:
    async with calling(start_env) as caller:
        url = caller.env.server.url + "/a2a/rest/message:send"
        message = {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "Which region?"}],
                   "metadata": {"to": TO}}  # fmt: skip
        params = {"message": message, "configuration": {"returnImmediately": True}}
        made = await caller.http.post(url, json=params, headers=headers(caller))
        assert made.headers["Content-Type"] == "application/json"  # §11.1, the SDK's a2a+json
        task = made.json()["task"]
        got = await caller.http.get(f"{caller.env.server.url}/a2a/rest/tasks/{task['id']}",
                                    headers=headers(caller))  # fmt: skip
        assert got.headers["Content-Type"] == "application/json"
        told = got.json()["metadata"]["hitl"]
        assert told["requestId"] == task["id"] and "createdAt" in told and "expiresAt" in told
        assert not [key for key in told if "_" in key]


async def test_list_tasks_by_context_never_lists_a_task_whose_id_is_not_its_context(
    start_env: StartEnv,
) -> None:
    async with calling(start_env) as caller:
        first = asking()
        first.context_id = "ctx-a"
        a = await sent(caller, "JSONRPC", first, polling=True)
        second = asking()
        second.context_id = a.id  # a context named after another task's id
        b = await sent(caller, "JSONRPC", second, polling=True)
        async with caller.client() as client:  # a settles last: its status is the newest
            await client.cancel_task(CancelTaskRequest(id=a.id), context=caller.context)
        page = await listed(caller, "JSONRPC", context_id=a.id, page_size=1)
        assert not page.tasks and page.next_page_token  # a read, not a's context: not listed
        last = await listed(caller, "JSONRPC", context_id=a.id, page_size=1,
                            page_token=page.next_page_token)  # fmt: skip
        assert [task.id for task in last.tasks] == [b.id] and last.next_page_token == ""
