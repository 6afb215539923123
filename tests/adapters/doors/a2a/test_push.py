"""A2A push notifications, end to end: configs made with the a2a-sdk's own client against the
served bridge (the fake Slack around it), and the settled task POSTed to a receiver served on
127.0.0.1 by the test (loopback allowed as the webhook tests allow it:
HITL_WEBHOOK_ALLOW_PRIVATE), signed as a webhook, with the config's token."""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from a2a.types import (
    AuthenticationInfo,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError
from aiohttp import web
from google.protobuf.json_format import Parse

from adapters.doors.api.webhooks import signature
from bot.store.doors import DoorTables
from tests.adapters.doors.a2a.conftest import Caller, asking, calling
from tests.adapters.doors.a2a.test_a2a import api_view, rebased, sent
from tests.adapters.doors.api.test_api import posted
from tests.adapters.surfaces.slack.conftest import WAIT, StartEnv

PRIVATE = {"HITL_WEBHOOK_ALLOW_PRIVATE": 1}
TOKEN = "listener-token-7"


@dataclass
class Receiver:
    """What the test's receiver got: each POST's headers and body."""

    url: str = ""
    got: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    async def hook(self, request: web.Request) -> web.Response:
        self.got.append((dict(request.headers), await request.read()))
        self.arrived.set()
        return web.Response(status=204)

    async def one(self) -> tuple[dict[str, str], StreamResponse]:
        await asyncio.wait_for(self.arrived.wait(), WAIT)
        await asyncio.sleep(0.2)  # a second POST would be a duplicate
        ((headers, body),) = self.got
        return headers, Parse(body, StreamResponse())  # the SDK's type, strictly


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    made = Receiver()
    app = web.Application()
    app.router.add_post("/a2a-hook", made.hook)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    made.url = f"http://{host}:{port}/a2a-hook"
    try:
        yield made
    finally:
        await runner.cleanup()


async def check_signed(caller: Caller, headers: dict[str, str], body: bytes) -> None:
    (token,) = await DoorTables(caller.env.store).list_tokens()
    expected = signature(token.webhook_secret, headers["X-Hitl-Timestamp"], body)
    assert headers["X-Hitl-Signature"] == expected
    assert headers["X-A2A-Notification-Token"] == TOKEN


async def test_the_card_offers_push_notifications(start_env: StartEnv) -> None:
    async with calling(start_env) as caller:
        assert caller.card.capabilities.push_notifications


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_a_settled_task_is_pushed_signed_with_the_config_s_token(
    start_env: StartEnv, receiver: Receiver, binding: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with calling(start_env, **PRIVATE) as caller, caller.client(binding) as client:
        working = await sent(caller, binding, asking(), polling=True)
        asked = TaskPushNotificationConfig(task_id=working.id, url=receiver.url, token=TOKEN)
        made = await client.create_task_push_notification_config(asked, context=caller.context)
        assert made.id and made.url == receiver.url and made.task_id == working.id
        assert not receiver.got  # nothing until it settles
        await caller.env.click(await posted(caller.env, working.id), "hitl_approve")
        headers, pushed = await receiver.one()
        await check_signed(caller, headers, receiver.got[0][1])
        assert pushed.task.id == working.id
        assert pushed.task.status.state == TaskState.TASK_STATE_COMPLETED
        lines = [e for e in await caller.env.store.list_audit(request_id=working.id)]
        (delivered,) = [e for e in lines if e.action == "webhook.delivered"]
        assert delivered.detail["push_config"] == made.id
        assert TOKEN not in repr(lines)  # the token is never audited
    assert TOKEN not in caplog.text  # nor logged, even at DEBUG


async def test_a_config_in_send_message_is_kept_and_pushed(
    start_env: StartEnv, receiver: Receiver
) -> None:
    async with calling(start_env, **PRIVATE) as caller, caller.client() as client:
        push = TaskPushNotificationConfig(url=receiver.url, token=TOKEN, id="mine")
        configuration = SendMessageConfiguration(
            task_push_notification_config=push, return_immediately=True
        )
        request = SendMessageRequest(message=asking(), configuration=configuration)
        (event,) = [e async for e in client.send_message(request, context=caller.context)]
        task: Task = event.task
        listed = await client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=task.id), context=caller.context
        )
        assert [(c.id, c.url) for c in listed.configs] == [("mine", receiver.url)]
        await caller.env.click(await posted(caller.env, task.id), "hitl_decline")
        await caller.env.submit(await caller.env.modal(), {"reason": {"reason": "Not today"}})
        _, pushed = await receiver.one()
        assert pushed.task.status.state == TaskState.TASK_STATE_REJECTED


async def test_a_refused_url_is_one_error_and_asks_nothing(start_env: StartEnv) -> None:
    async with calling(start_env) as caller, caller.client() as client:  # no loopback allowed
        working = await sent(caller, "JSONRPC", asking(), polling=True)
        for url in ("http://127.0.0.1:9/hook", "http://10.0.0.8/", "ftp://example.com/x", ""):
            asked = TaskPushNotificationConfig(task_id=working.id, url=url)
            with pytest.raises(InvalidParamsError) as refused:
                await client.create_task_push_notification_config(asked, context=caller.context)
            said = f"{refused.value} {refused.value.data}"  # the SDK's own check: in data
            assert "\n" not in said and "url" in said, said
        push = TaskPushNotificationConfig(url="http://127.0.0.1:9/hook")
        request = SendMessageRequest(
            message=asking(), configuration=SendMessageConfiguration(
                task_push_notification_config=push, return_immediately=True),
        )  # fmt: skip
        with pytest.raises(InvalidParamsError, match="push notification url refused"):
            [e async for e in client.send_message(request, context=caller.context)]
        doors = caller.env.server.service.doors
        assert doors is not None and len(await doors.doors.list("a2a-agent")) == 1


async def test_get_list_and_delete(start_env: StartEnv, receiver: Receiver) -> None:
    async with calling(start_env, **PRIVATE) as caller, caller.client() as client:
        working = await sent(caller, "JSONRPC", asking(), polling=True)
        context = caller.context
        for name in ("a", "b"):
            made = TaskPushNotificationConfig(task_id=working.id, id=name, url=receiver.url)
            await client.create_task_push_notification_config(made, context=context)
        got = await client.get_task_push_notification_config(
            GetTaskPushNotificationConfigRequest(task_id=working.id, id="b"), context=context
        )
        assert (got.id, got.url, got.token) == ("b", receiver.url, "")
        await client.delete_task_push_notification_config(
            DeleteTaskPushNotificationConfigRequest(task_id=working.id, id="a"), context=context
        )
        listed = await client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=working.id), context=context
        )
        assert [c.id for c in listed.configs] == ["b"]
        with pytest.raises(TaskNotFoundError):
            await client.get_task_push_notification_config(
                GetTaskPushNotificationConfigRequest(task_id=working.id, id="a"), context=context
            )
        with pytest.raises(TaskNotFoundError):  # another task, or another token's
            await client.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id="no-such-task"), context=context
            )
        await caller.env.click(await posted(caller.env, working.id), "hitl_approve")
        await receiver.one()  # "b" only


async def test_a_config_made_on_another_worker_is_pushed_by_the_worker_that_settles(
    start_env: StartEnv, receiver: Receiver
) -> None:
    async with calling(start_env, **PRIVATE) as caller:
        working = await sent(caller, "JSONRPC", asking(), polling=True)
        second = await start_env(**PRIVATE)  # another worker on the same database
        other = Caller(second, caller.token, caller.card, caller.http)
        other.card = rebased(caller.card, caller.env.server.url, second.server.url)
        async with other.client() as client:
            asked = TaskPushNotificationConfig(task_id=working.id, url=receiver.url, token=TOKEN)
            await client.create_task_push_notification_config(asked, context=other.context)
        await caller.env.click(await posted(caller.env, working.id), "hitl_approve")
        headers, pushed = await receiver.one()
        await check_signed(caller, headers, receiver.got[0][1])
        assert pushed.task.status.state == TaskState.TASK_STATE_COMPLETED


async def test_a_config_made_after_the_task_settled_is_pushed_at_once(
    start_env: StartEnv, receiver: Receiver
) -> None:
    async with calling(start_env, **PRIVATE) as caller, caller.client() as client:
        working = await sent(caller, "JSONRPC", asking(), polling=True)
        await caller.env.click(await posted(caller.env, working.id), "hitl_approve")
        for _ in range(int(WAIT / 0.02)):
            if (await api_view(caller, working.id))["status"] != "pending":
                break
            await asyncio.sleep(0.02)
        asked = TaskPushNotificationConfig(task_id=working.id, url=receiver.url, token=TOKEN)
        await client.create_task_push_notification_config(asked, context=caller.context)
        _, pushed = await receiver.one()
        assert pushed.task.status.state == TaskState.TASK_STATE_COMPLETED


async def test_a_click_on_another_worker_settles_and_notifies(
    start_env: StartEnv, receiver: Receiver
) -> None:
    async with calling(start_env, **PRIVATE) as caller, caller.client() as client:
        working = await sent(caller, "JSONRPC", asking(), polling=True)
        asked = TaskPushNotificationConfig(task_id=working.id, url=receiver.url, token=TOKEN)
        await client.create_task_push_notification_config(asked, context=caller.context)
        message = await posted(caller.env, working.id)
        second = await start_env(**PRIVATE)  # another worker on the same database
        await second.click(message, "hitl_approve")  # the person's click reaches the other
        headers, pushed = await receiver.one()
        await check_signed(caller, headers, receiver.got[0][1])
        assert pushed.task.status.state == TaskState.TASK_STATE_COMPLETED


SECRET = "s3cr3t-credential-9f2b"


@pytest.mark.parametrize(
    ("scheme", "credentials", "sent_as"),
    [
        ("Bearer", SECRET, f"Bearer {SECRET}"),
        ("bearer", SECRET, f"Bearer {SECRET}"),  # scheme names are case-insensitive
        ("Basic", "bob:" + SECRET, "Basic " + base64.b64encode(f"bob:{SECRET}".encode()).decode()),
    ],
)
@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_a_config_s_authentication_is_sent_on_delivery_and_never_logged(
    start_env: StartEnv,
    receiver: Receiver,
    binding: str,
    scheme: str,
    credentials: str,
    sent_as: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    async with calling(start_env, **PRIVATE) as caller, caller.client(binding) as client:
        working = await sent(caller, binding, asking(), polling=True)
        asked = TaskPushNotificationConfig(
            task_id=working.id, url=receiver.url, token=TOKEN,
            authentication=AuthenticationInfo(scheme=scheme, credentials=credentials),
        )  # fmt: skip
        made = await client.create_task_push_notification_config(asked, context=caller.context)
        assert made.authentication.scheme in ("Bearer", "Basic")  # told back to its owner
        await caller.env.click(await posted(caller.env, working.id), "hitl_approve")
        headers, pushed = await receiver.one()
        assert headers["Authorization"] == sent_as
        await check_signed(caller, headers, receiver.got[0][1])
        assert pushed.task.status.state == TaskState.TASK_STATE_COMPLETED
        lines = await caller.env.store.list_audit(request_id=working.id)
        assert SECRET not in repr(lines)
    assert SECRET not in caplog.text and base64.b64encode(SECRET.encode()).decode()[:12] not in (
        caplog.text
    )


async def test_an_authentication_the_door_cannot_send_is_one_error(start_env: StartEnv) -> None:
    async with calling(start_env) as caller, caller.client() as client:
        working = await sent(caller, "JSONRPC", asking(), polling=True)
        for scheme, credentials, words in (
            ("Digest", "abc", "scheme 'Digest' is not offered"),
            ("Bearer", "two words", "must be one token"),
            ("Bearer", "line\r\nX-Evil: 1", "must be one token"),
            ("Bearer", "", "must be one token"),
        ):
            asked = TaskPushNotificationConfig(
                task_id=working.id, url="https://example.com/hook",
                authentication=AuthenticationInfo(scheme=scheme, credentials=credentials),
            )  # fmt: skip
            with pytest.raises(InvalidParamsError, match=words):
                await client.create_task_push_notification_config(asked, context=caller.context)
