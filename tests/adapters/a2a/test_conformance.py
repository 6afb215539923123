"""A2A 1.0 to the letter, as its TCK checks it (bench/a2a_tck.py runs the kit itself): each
behaviour here with the a2a-sdk's own client, or raw HTTP where the kit sends raw HTTP, against
the served bridge."""

from __future__ import annotations

from typing import Any

import pytest
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError, UnsupportedOperationError

from bot.doors.tokens import Tokens
from bot.store.doors import DoorTables
from tests.adapters.a2a.conftest import Caller, asking, calling
from tests.adapters.a2a.test_a2a import BINDINGS, sent
from tests.adapters.slack.conftest import StartEnv

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
