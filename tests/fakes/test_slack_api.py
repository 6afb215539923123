"""The real slack_sdk client and slack-bolt against FakeSlack and the signing helpers."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from tests.conformance import conformance_file
from tests.fakes.slack_api import BOT_USER_ID, TEAM_ID, FakeSlack, block_errors, view_errors
from tests.fakes.slack_signing import (
    block_actions_payload,
    event_callback,
    message_event,
    post_signed,
    sign,
    url_verification,
    view_submission_payload,
)

SECRET = "fake-signing-secret"
BUTTONS: list[dict[str, Any]] = [
    {"type": "section", "block_id": "ask", "text": {"type": "mrkdwn", "text": "Deploy?"}},
    {
        "type": "actions",
        "block_id": "act",
        "elements": [
            {"type": "button", "action_id": "approve", "value": "req-1", "style": "primary",
             "text": {"type": "plain_text", "text": "Approve"}},
            {"type": "button", "action_id": "deny", "value": "req-1",
             "text": {"type": "plain_text", "text": "Deny"}},
        ],
    },
]  # fmt: skip
MODAL: dict[str, Any] = {
    "type": "modal",
    "callback_id": "why",
    "private_metadata": "req-1",
    "title": {"type": "plain_text", "text": "Reason"},
    "submit": {"type": "plain_text", "text": "Send"},
    "blocks": [
        {"type": "input", "block_id": "reason", "label": {"type": "plain_text", "text": "Why?"},
         "element": {"type": "plain_text_input", "action_id": "text"}},
    ],
}  # fmt: skip


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(users={"U0ALICE": "alice"}) as fake:
        yield fake


@pytest.fixture
def client(fake: FakeSlack) -> AsyncWebClient:
    return AsyncWebClient(token=fake.token, base_url=fake.base_url)


async def error_of(call: Any) -> dict[str, Any]:
    with pytest.raises(SlackApiError) as raised:
        await call
    return dict(raised.value.response.data)


async def test_post_update_thread_and_history(fake: FakeSlack, client: AsyncWebClient) -> None:
    parent = await client.chat_postMessage(channel="C1", text="hi")
    assert parent["ts"] == "1700000000.000100" and parent["message"]["user"] == BOT_USER_ID
    reply = await client.chat_postMessage(
        channel="C1", text="Deploy?", blocks=BUTTONS, thread_ts=parent["ts"]
    )
    assert float(reply["ts"]) > float(parent["ts"])
    human = fake.add_message("C1", "go ahead", user="U0ALICE", thread_ts=parent["ts"])

    await client.chat_update(channel="C1", ts=reply["ts"], text="Approved", blocks=[])
    assert [v["text"] for v in fake.edits("C1", reply["ts"])] == ["Deploy?", "Approved"]
    assert fake.edits("C1", reply["ts"])[0]["blocks"] == BUTTONS
    assert fake.message("C1", reply["ts"])["thread_ts"] == parent["ts"]

    replies = await client.conversations_replies(channel="C1", ts=parent["ts"])  # a GET
    assert [m["ts"] for m in replies["messages"]] == [parent["ts"], reply["ts"], human["ts"]]
    assert replies["messages"][0]["reply_count"] == 2
    assert (await error_of(client.chat_update(channel="C1", ts="1.2", text="x")))["error"] == (
        "message_not_found"
    )
    await client.chat_delete(channel="C1", ts=reply["ts"])
    assert [m["ts"] for m in fake.messages("C1")] == [parent["ts"], human["ts"]]
    assert [m for m, _ in fake.calls].count("chat.postMessage") == 2


async def test_form_bodies_and_lookups(fake: FakeSlack, client: AsyncWebClient) -> None:
    form = {"channel": "C1", "text": "x", "blocks": json.dumps(BUTTONS)}
    posted = await client.api_call("chat.postMessage", data=form)
    assert fake.message("C1", posted["ts"])["blocks"] == BUTTONS
    assert fake.calls_to("chat.postMessage")[0]["blocks"] == BUTTONS

    assert (await client.users_info(user="U0ALICE"))["user"]["name"] == "alice"
    assert (await error_of(client.users_info(user="U0NOBODY")))["error"] == "user_not_found"
    auth = await client.auth_test()
    assert (auth["user_id"], auth["team_id"], auth["bot_id"]) == (BOT_USER_ID, TEAM_ID, fake.bot_id)

    fake.add_file("F1", "report.csv", b"a,b\n", mimetype="text/csv")
    info = (await client.files_info(file="F1"))["file"]
    assert (info["name"], info["size"], info["mimetype"]) == ("report.csv", 4, "text/csv")
    async with aiohttp.ClientSession() as session:
        bearer = {"Authorization": f"Bearer {fake.token}"}
        async with session.get(info["url_private"], headers=bearer) as resp:
            assert await resp.read() == b"a,b\n"
    assert (await error_of(client.files_info(file="F2")))["error"] == "file_not_found"


async def test_ephemeral(fake: FakeSlack, client: AsyncWebClient) -> None:
    sent = await client.chat_postEphemeral(channel="C1", user="U0ALICE", text="only you")
    assert fake.ephemerals == [
        {"channel": "C1", "user": "U0ALICE", "text": "only you", "message_ts": sent["message_ts"]}
    ]
    assert fake.messages("C1") == []


async def test_response_url(fake: FakeSlack, client: AsyncWebClient) -> None:
    ts = (await client.chat_postMessage(channel="C1", text="Deploy?", blocks=BUTTONS))["ts"]
    webhook = AsyncWebhookClient(fake.new_response_url("C1", ts))
    assert (await webhook.send(text="Approved", replace_original=True)).status_code == 200
    assert fake.message("C1", ts)["text"] == "Approved" and len(fake.edits("C1", ts)) == 2
    assert fake.responses[0]["replace_original"] is True
    for _ in range(4):
        await webhook.send(text="again")
    assert (await webhook.send(text="sixth")).status_code == 404  # 5 uses only


async def test_views_need_a_fresh_trigger(fake: FakeSlack, client: AsyncWebClient) -> None:
    trigger = fake.new_trigger_id()
    view = (await client.views_open(trigger_id=trigger, view=MODAL))["view"]
    assert view["id"].startswith("V") and view["callback_id"] == "why" and view["hash"]
    assert fake.views[view["id"]]["private_metadata"] == "req-1"

    reused = await error_of(client.views_open(trigger_id=trigger, view=MODAL))
    stale = await error_of(client.views_open(trigger_id=fake.new_trigger_id(age=3.5), view=MODAL))
    unknown = await error_of(client.views_open(trigger_id="123.456.abc", view=MODAL))
    assert [e["error"] for e in (reused, stale, unknown)] == [
        "expired_trigger_id",
        "expired_trigger_id",
        "invalid_trigger_id",
    ]

    titled = {**MODAL, "title": {"type": "plain_text", "text": "Done"}}
    updated = await client.views_update(view_id=view["id"], view=titled, hash=view["hash"])
    assert updated["view"]["title"]["text"] == "Done" and updated["view"]["id"] == view["id"]
    conflict = await error_of(client.views_update(view_id=view["id"], view=MODAL, hash="old"))
    assert conflict["error"] == "hash_conflict"

    pushed = await client.views_push(trigger_id=fake.new_trigger_id(view_id=view["id"]), view=MODAL)
    assert pushed["view"]["previous_view_id"] == view["id"]


async def test_views_publish_keeps_one_home_per_user(
    fake: FakeSlack, client: AsyncWebClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    schema = conformance_file("slack/blockkit-modal.schema.json")
    if schema is not None:
        monkeypatch.setenv("HITL_SLACK_SCHEMA_DIR", str(schema.parent))
    # Two requests' buttons: an action_id is unique within its block, not across blocks.
    second = {**BUTTONS[1], "block_id": "act2"}
    home = {"type": "home", "blocks": [*BUTTONS, second]}
    first = (await client.views_publish(user_id="U0ALICE", view=home))["view"]
    assert first["type"] == "home" and fake.homes["U0ALICE"]["blocks"] == home["blocks"]
    again = await client.views_publish(user_id="U0ALICE", view=home, hash=first["hash"])
    assert again["view"]["id"] == first["id"] and again["view"]["hash"] != first["hash"]

    stale = await error_of(client.views_publish(user_id="U0ALICE", view=home, hash=first["hash"]))
    nobody = await error_of(client.views_publish(user_id="U0NOBODY", view=home))
    modal = await error_of(client.views_publish(user_id="U0ALICE", view=MODAL))
    long = {"type": "home", "blocks": [{"type": "divider"}] * 101}
    too_long = await error_of(client.views_publish(user_id="U0ALICE", view=long))
    assert [e["error"] for e in (stale, nobody, modal, too_long)] == [
        "hash_conflict", "user_not_found", "invalid_arguments", "invalid_arguments",
    ]  # fmt: skip
    assert too_long["errors"] == [
        "must provide an array with no more than 100 items [json-pointer:/view/blocks]"
    ]
    if schema is not None:
        odd = {"type": "home", "blocks": [{**BUTTONS[0], "colour": "red"}]}
        error = await error_of(client.views_publish(user_id="U0ALICE", view=odd))
        assert error["errors"][0].endswith("/blocks/0]")


async def test_block_kit_violations(client: AsyncWebClient) -> None:
    dup = [{**BUTTONS[1], "elements": [BUTTONS[1]["elements"][0]] * 2}]
    error = await error_of(client.chat_postMessage(channel="C1", text="x", blocks=dup))
    assert error["error"] == "invalid_blocks"
    assert error["errors"] == [
        "duplicate action_id 'approve' [json-pointer:/blocks/0/elements/1/action_id]"
    ]
    divider = {"type": "divider"}
    error = await error_of(client.chat_postMessage(channel="C1", text="x", blocks=[divider] * 51))
    assert error["errors"] == [
        "must provide an array with no more than 50 items [json-pointer:/blocks]"
    ]
    long_text = await error_of(client.chat_postMessage(channel="C1", text="x" * 40_001))
    assert long_text["error"] == "msg_too_long"

    no_submit = {k: v for k, v in MODAL.items() if k != "submit"}
    error = await error_of(client.views_open(trigger_id="t", view=no_submit))
    assert error["error"] == "invalid_arguments" and "submit" in error["errors"][0]


async def test_conformance_schemas_when_configured(
    client: AsyncWebClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    schema = conformance_file("slack/blockkit-message.schema.json")
    if schema is None:
        pytest.skip("no conformance data (HITL_CONFORMANCE_DIR)")
    monkeypatch.setenv("HITL_SLACK_SCHEMA_DIR", str(schema.parent))
    assert (await client.chat_postMessage(channel="C1", text="x", blocks=BUTTONS))["ok"]
    odd = [{**BUTTONS[0], "colour": "red"}]  # the built-in checks don't look at this
    error = await error_of(client.chat_postMessage(channel="C1", text="x", blocks=odd))
    assert error["error"] == "invalid_blocks" and error["errors"][0].endswith("/blocks/0]")


def test_block_errors_standalone() -> None:
    header = {"type": "header", "text": {"type": "plain_text", "text": "h" * 151}}
    button = {"type": "button", "action_id": "a" * 256, "value": "v" * 2001,
              "text": {"type": "plain_text", "text": "b" * 76}}  # fmt: skip
    section = {"type": "section", "block_id": "s", "text": {"type": "mrkdwn", "text": "s" * 3001}}
    blocks = [header, {"type": "actions", "elements": [button]}, section, section]
    assert block_errors(BUTTONS) == []
    assert [e.split(" [")[0] for e in block_errors(blocks)] == [
        "must be less than 151 characters",
        "must be less than 256 characters",
        "must be less than 76 characters",
        "must be less than 2001 characters",
        "must be less than 3001 characters",
        "duplicate block_id 's'",
        "must be less than 3001 characters",
    ]
    assert view_errors(MODAL) == []
    long_title = {**MODAL, "title": {"type": "plain_text", "text": "t" * 25}}
    assert view_errors(long_title) == [
        "must be less than 25 characters [json-pointer:/view/title/text]"
    ]
    mrkdwn_button = {**button, "action_id": "b", "value": "v"}
    mrkdwn_button["text"] = {"type": "mrkdwn", "text": ""}
    assert block_errors([{"type": "actions", "elements": [mrkdwn_button]}]) == [
        "'plain_text' was expected [json-pointer:/blocks/0/elements/0/text/type]",
        "must be more than 0 characters [json-pointer:/blocks/0/elements/0/text/text]",
    ]


async def test_rate_limit_then_retry(fake: FakeSlack, client: AsyncWebClient) -> None:
    fake.rate_limit("chat.postMessage", retry_after=0)
    error = await error_of(client.chat_postMessage(channel="C1", text="x"))
    assert error == {"ok": False, "error": "ratelimited"}

    client.retry_handlers.append(AsyncRateLimitErrorRetryHandler(max_retry_count=1))
    fake.rate_limit("chat.postMessage", retry_after=0)
    assert (await client.chat_postMessage(channel="C1", text="x"))["ok"]
    assert len(fake.calls_to("chat.postMessage")) == 3 and len(fake.messages("C1")) == 1

    fake.fail("chat.update", status=500)
    with pytest.raises(SlackApiError) as raised:
        await client.chat_update(channel="C1", ts="1.2", text="x")
    assert raised.value.response.status_code == 500


async def test_auth_and_unknown_method(fake: FakeSlack) -> None:
    wrong = AsyncWebClient(token="xoxb-wrong", base_url=fake.base_url)
    assert (await error_of(wrong.auth_test()))["error"] == "invalid_auth"
    anonymous = AsyncWebClient(base_url=fake.base_url)
    assert (await error_of(anonymous.auth_test()))["error"] == "not_authed"
    client = AsyncWebClient(token=fake.token, base_url=fake.base_url)
    assert (await error_of(client.api_call("chat.frobnicate")))["error"] == "unknown_method"


async def test_wait_for_call(fake: FakeSlack, client: AsyncWebClient) -> None:
    async def later() -> None:
        await asyncio.sleep(0.05)
        await client.chat_postMessage(channel="C1", text="late")

    task = asyncio.create_task(later())
    args = await fake.wait_for_call("chat.postMessage", timeout=2)
    assert args[0]["text"] == "late"
    msg = await fake.wait_for(lambda: fake.messages("C1")[0])
    assert msg["text"] == "late"
    await task
    with pytest.raises(TimeoutError):
        await fake.wait_for_call("chat.update", timeout=0.05)


def test_signature_verifier_accepts_sign() -> None:
    body = b'{"type":"event_callback"}'
    verifier = SignatureVerifier(SECRET)
    assert verifier.is_valid_request(body, sign(body, SECRET))
    assert not verifier.is_valid_request(body + b" ", sign(body, SECRET))
    assert not verifier.is_valid_request(body, sign(body, "other-secret"))
    assert not verifier.is_valid_request(body, sign(body, SECRET, int(time.time()) - 600))


async def test_bolt_app_accepts_signed_requests(fake: FakeSlack) -> None:
    """Events, clicks and submissions reach Bolt's listeners; unsigned requests don't."""
    app = AsyncApp(
        client=AsyncWebClient(token=fake.token, base_url=fake.base_url), signing_secret=SECRET
    )
    seen: dict[str, Any] = {}

    @app.event("app_mention")
    async def on_mention(event: dict[str, Any], say: Any, request: Any) -> None:
        seen["retry"] = request.headers.get("x-slack-retry-num")
        await say(text="Deploy?", blocks=BUTTONS, thread_ts=event["ts"])

    @app.action("approve")
    async def on_approve(ack: Any, body: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        trigger, metadata = body["trigger_id"], body["actions"][0]["value"]
        await client.views_open(trigger_id=trigger, view={**MODAL, "private_metadata": metadata})

    @app.view("why")
    async def on_submit(ack: Any, view: dict[str, Any]) -> None:
        await ack()
        seen["reason"] = view["state"]["values"]["reason"]["text"]["value"]

    runner = web.AppRunner(app.web_app(), access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        url = "http://{}:{}/slack/events".format(*runner.addresses[0][:2])
        async with aiohttp.ClientSession() as session:
            challenge = await post_signed(session, url, url_verification("c-1"), SECRET)
            assert json.loads(await challenge.text()) == {"challenge": "c-1"}
            mention = message_event(f"<@{BOT_USER_ID}> deploy", user="U0ALICE", channel="C1")
            envelope = event_callback({**mention, "type": "app_mention"})
            assert (await post_signed(session, url, envelope, "wrong-secret")).status == 401
            assert (await post_signed(session, url, envelope, SECRET, retry_num=1)).status == 200
            (posted,) = await fake.wait_for_call("chat.postMessage")
            assert posted["thread_ts"] == mention["ts"] and seen["retry"] == ["1"]

            ts = fake.messages("C1")[0]["ts"]
            click = block_actions_payload(
                message=fake.message("C1", ts),
                channel_id="C1",
                action_id="approve",
                user_id="U0ALICE",
                trigger_id=fake.new_trigger_id(),
            )
            assert click["actions"][0]["value"] == "req-1"
            assert (await post_signed(session, url, click, SECRET)).status == 200
            view = (await fake.wait_for(lambda: list(fake.views.values())))[0]
            assert view["private_metadata"] == "req-1"

            submit = view_submission_payload(
                view=view, user_id="U0ALICE", values={"reason": {"text": "ship it"}}
            )
            assert (await post_signed(session, url, submit, SECRET)).status == 200
            assert seen["reason"] == "ship it"
    finally:
        await runner.cleanup()


# -- assistant.threads.* ---------------------------------------------------------------------------


async def test_set_status_is_recorded_per_thread_and_cleared_by_an_empty_status(
    fake: FakeSlack, client: AsyncWebClient
) -> None:
    await client.assistant_threads_setStatus(
        channel_id="C1", thread_ts="1.0", status="is thinking…", loading_messages=["Thinking…"]
    )
    await client.assistant_threads_setStatus(channel_id="C1", thread_ts="1.0", status="")
    assert fake.status_history("C1", "1.0") == ["is thinking…", ""]
    assert fake.statuses["C1", "1.0"][0]["loading_messages"] == ["Thinking…"]
    assert fake.status_history("C1", "2.0") == [] and fake.refused == []


async def test_set_status_refuses_what_slack_refuses(
    fake: FakeSlack, client: AsyncWebClient
) -> None:
    too_many = [f"step {n}" for n in range(11)]
    refused = await error_of(client.assistant_threads_setStatus(
        channel_id="C1", thread_ts="1.0", status="busy", loading_messages=too_many
    ))  # fmt: skip
    assert refused["error"] == "invalid_arguments"
    missing = await error_of(client.api_call(
        "assistant.threads.setStatus", json={"channel_id": "C1", "status": "busy"}
    ))  # fmt: skip
    assert missing["error"] == "invalid_arguments"
    assert fake.status_history("C1", "1.0") == []
    assert fake.refused == [("assistant.threads.setStatus", "invalid_arguments")] * 2


async def test_set_status_needs_chat_write_or_assistant_write(fake: FakeSlack) -> None:
    client = AsyncWebClient(token=fake.token, base_url=fake.base_url)
    fake.scopes = ("chat:write",)  # enough since 2026-03
    await client.assistant_threads_setStatus(channel_id="C1", thread_ts="1.0", status="hi")
    fake.scopes = ("commands",)
    call = client.assistant_threads_setStatus(channel_id="C1", thread_ts="1.0", status="hi")
    assert (await error_of(call))["error"] == "missing_scope"


async def test_suggested_prompts_at_most_four_each_a_title_and_a_message(
    fake: FakeSlack, client: AsyncWebClient
) -> None:
    prompt = {"title": "Pending", "message": "What waits for me?"}
    await client.assistant_threads_setSuggestedPrompts(
        channel_id="D1", thread_ts="1.0", prompts=[prompt], title="Try"
    )
    assert fake.prompts["D1", "1.0"] == [{"prompts": [prompt], "title": "Try"}]
    for bad in ([prompt] * 5, [{"title": "no message"}], []):
        call = client.assistant_threads_setSuggestedPrompts(channel_id="D1", prompts=bad)
        assert (await error_of(call))["error"] == "invalid_arguments"
    fake.scopes = ("chat:write",)
    call = client.assistant_threads_setSuggestedPrompts(channel_id="D1", prompts=[prompt])
    assert (await error_of(call))["error"] == "missing_scope"


async def test_set_title_needs_the_thread_and_a_title(
    fake: FakeSlack, client: AsyncWebClient
) -> None:
    await client.assistant_threads_setTitle(channel_id="D1", thread_ts="1.0", title="Deploys")
    assert fake.titles["D1", "1.0"] == ["Deploys"]
    call = client.assistant_threads_setTitle(channel_id="D1", thread_ts="", title="Deploys")
    assert (await error_of(call))["error"] == "invalid_arguments"


# -- streamed messages (chat.startStream / appendStream / stopStream) --------------------------


async def test_a_stream_grows_one_message_with_text_and_task_cards(
    fake: FakeSlack, client: AsyncWebClient
) -> None:
    root = await client.chat_postMessage(channel="C1", text="question")
    started = await client.chat_startStream(
        channel="C1", thread_ts=root["ts"], recipient_user_id="U0ALICE",
        recipient_team_id=TEAM_ID, task_display_mode="timeline", markdown_text="Hel",
    )  # fmt: skip
    ts = started["ts"]
    task = {"type": "task_update", "id": "call_1", "title": "lookup", "status": "in_progress"}
    await client.chat_appendStream(channel="C1", ts=ts, markdown_text="lo", chunks=[task])
    assert fake.streaming("C1", ts) is True
    assert fake.message("C1", ts)["text"] == "Hello"
    done = {**task, "status": "complete", "output": "3 rows"}
    await client.chat_stopStream(channel="C1", ts=ts, markdown_text=" world", chunks=[done])
    message = fake.message("C1", ts)
    assert message["text"] == "Hello world" and message["thread_ts"] == root["ts"]
    assert message["tasks"] == {"call_1": {"title": "lookup", "status": "complete",
                                           "output": "3 rows"}}  # fmt: skip
    assert fake.streaming("C1", ts) is False and fake.streaming("C1", root["ts"]) is None
    assert fake.refused == []


async def test_a_stream_refuses_what_slack_refuses(fake: FakeSlack, client: AsyncWebClient) -> None:
    no_user = client.chat_startStream(channel="C1", thread_ts="1.2", recipient_team_id=TEAM_ID)
    assert (await error_of(no_user))["error"] == "missing_recipient_user_id"
    no_team = client.chat_startStream(channel="C1", thread_ts="1.2", recipient_user_id="U0ALICE")
    assert (await error_of(no_team))["error"] == "missing_recipient_team_id"
    in_dm = await client.chat_startStream(channel="D0ALICE", thread_ts="1.2")  # a DM: no need
    bad = {"type": "task_update", "id": "t", "title": "x", "status": "running"}
    bad_chunk = client.chat_appendStream(channel="D0ALICE", ts=in_dm["ts"], chunks=[bad])
    assert (await error_of(bad_chunk))["error"] == "invalid_chunks"
    empty = client.chat_appendStream(channel="D0ALICE", ts=in_dm["ts"])
    assert (await error_of(empty))["error"] == "invalid_arguments"
    await client.chat_stopStream(channel="D0ALICE", ts=in_dm["ts"])
    after_stop = client.chat_appendStream(channel="D0ALICE", ts=in_dm["ts"], markdown_text="x")
    assert (await error_of(after_stop))["error"] == "message_not_in_streaming_state"
    unknown = client.chat_stopStream(channel="D0ALICE", ts="9.9")
    assert (await error_of(unknown))["error"] == "message_not_in_streaming_state"
    assert [error for _, error in fake.refused] == [
        "missing_recipient_user_id", "missing_recipient_team_id", "invalid_chunks",
        "invalid_arguments", "message_not_in_streaming_state", "message_not_in_streaming_state",
    ]  # fmt: skip


async def test_a_stream_can_be_made_to_fail(fake: FakeSlack, client: AsyncWebClient) -> None:
    fake.fail("chat.startStream", "not_allowed")
    refused = client.chat_startStream(channel="D0ALICE", thread_ts="1.2", markdown_text="hi")
    assert (await error_of(refused))["error"] == "not_allowed"
    assert fake.refused == []  # injected by the test, not refused by the fake's rules
