"""End to end over real HTTP: Slack's signed wire format in, the real SDKs out to the fakes.

Every test runs the service as `hitl-bridge serve` does (`Server.start`): a mention starts a
turn, the scripted model calls a human tool, the request is posted in the thread and edited
through its states, a person answers by clicking, submitting a modal or replying, and the
model reads the answer as the tool's result.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlencode

import pytest

from bot.records import RequestStatus
from tests.adapters.surfaces.slack.conftest import (
    ADMIN,
    ALICE,
    CHANNEL,
    JSON,
    SECRET,
    STRANGER,
    WAIT,
    Env,
    StartEnv,
    Thread,
    action_ids,
    has_actions,
)
from tests.adapters.surfaces.slack.updates import EVERY_KIND_FIELDS
from tests.fakes.anthropic_api import reply_text, reply_tool_use
from tests.fakes.slack_api import BOT_USER_ID, TEAM_ID
from tests.fakes.slack_signing import encode, event_callback, message_event, sign

FINAL = "All done, thanks."
Answer = Callable[[Env, Thread, JSON], Awaitable[None]]


# -- helpers -----------------------------------------------------------------------------------


async def start_turn(
    env: Env, tool: str, arguments: dict[str, Any], *, whom: str = f"<@{ALICE}>, this is for you."
) -> tuple[Thread, JSON]:
    """Mention the bot; the model calls `tool`; returns the thread and the executing request
    (whose status line says `whom` it waits for)."""
    env.model.script(reply_tool_use(tool, arguments), reply_text(FINAL))
    thread = await env.mention(f"please use {tool}")
    message = await thread.request()
    versions = env.slack.edits(CHANNEL, message["ts"])
    # Posted as "Preparing request…" while the call streamed in, then edited into the request.
    assert "Preparing request…" in versions[0]["text"]
    assert not has_actions(versions[0])
    assert versions[1] == message
    assert f"<@{ALICE}>" in message["text"]
    assert whom in json.dumps(message["blocks"])
    return thread, message


async def finish(env: Env, thread: Thread, message: JSON, marker: str) -> JSON:
    """Wait for the settled message and the agent's final reply; returns the tool result."""
    settled = await thread.settled(message, marker)
    assert not has_actions(settled)
    assert (await thread.reply())["text"] == FINAL
    assert len(env.requests) == 2
    return env.tool_result(2)


def answered_by(user: str) -> str:
    return f"Answered by <@{user}>"


def pdf(env: Env, file_id: str = "F0REPORT01", name: str = "report.pdf") -> JSON:
    """A file as Slack reports it in a file_input's state."""
    file = env.slack.add_file(file_id, name, b"%PDF-1.7 fake", mimetype="application/pdf")
    url = f"{env.slack.url}/files-pri/{TEAM_ID}-{file_id}/{name}"
    return {**file, "url_private": url, "url_private_download": url}


def file_state(*files: JSON) -> dict[str, Any]:
    return {"file": {"file": {"type": "file_input", "files": list(files)}}}


# -- each built-in tool, answered the way Slack lets a person answer it ------------------------


async def reply_in_thread(env: Env, thread: Thread, message: JSON) -> None:
    await env.reply_in_thread(thread, "Blue, please")


async def answer_button_and_modal(env: Env, thread: Thread, message: JSON) -> None:
    click = env.click_payload(message, "hitl_answer")
    assert (await env.post(click)).status == 200
    view = await env.modal()
    (opened,) = env.slack.calls_to("views.open")
    assert opened["trigger_id"] == click["trigger_id"]
    assert "Which colour?" in json.dumps(view["blocks"])  # the question, above the answer
    assert await env.submit(view, {"answer": {"answer": "Blue, please"}}) == {}


async def approve(env: Env, thread: Thread, message: JSON) -> None:
    assert action_ids(message) == ["hitl_approve", "hitl_decline"]
    await env.click(message, "hitl_approve")


async def pick_second_option(env: Env, thread: Thread, message: JSON) -> None:
    assert action_ids(message) == ["hitl_choose_0", "hitl_choose_1", "hitl_decline"]
    await env.click(message, "hitl_choose_1")


async def pick_from_select(env: Env, thread: Thread, message: JSON) -> None:
    assert action_ids(message) == ["hitl_choose", "hitl_decline"]
    await env.click(message, "hitl_choose", value="4")


async def fill_in_form(env: Env, thread: Thread, message: JSON) -> None:
    click = env.click_payload(message, "hitl_submit")
    assert (await env.post(click)).status == 200
    view = await env.modal()
    assert env.slack.calls_to("views.open")[0]["trigger_id"] == click["trigger_id"]
    values = {
        "name": {"name": "Ada"},
        "age": {"age": "36"},
        "email": {"email": "ada@example.com"},
    }
    assert await env.submit(view, values) == {}


async def upload_pdf(env: Env, thread: Thread, message: JSON) -> None:
    click = env.click_payload(message, "hitl_submit")
    assert (await env.post(click)).status == 200
    view = await env.modal()
    assert env.slack.calls_to("views.open")[0]["trigger_id"] == click["trigger_id"]
    assert await env.submit(view, file_state(pdf(env))) == {}


async def confirm_danger(env: Env, thread: Thread, message: JSON) -> None:
    (confirm, cancel, decline) = next(b for b in message["blocks"] if b["type"] == "actions")[
        "elements"
    ]
    assert confirm["action_id"] == "hitl_confirm" and confirm["style"] == "danger"
    assert confirm["confirm"]["style"] == "danger"  # Slack asks "are you sure?" first
    assert cancel["action_id"] == "hitl_cancel"
    assert decline["action_id"] == "hitl_decline"
    await env.click(message, "hitl_confirm")


FORM_ARGS = {
    "fields": [
        {"name": "name", "label": "Name", "type": "text"},
        {"name": "age", "label": "Age", "type": "number"},
        {"name": "email", "label": "Email", "type": "email"},
    ]
}
UPLOAD_ARGS = {"purpose": "The signed contract", "acceptedTypes": ["pdf"]}
SIX_OPTIONS = ["one", "two", "three", "four", "five", "six"]

FAKE_URL = "<fake slack>"  # stands for FakeSlack's address, known once it runs

CASES = [
    pytest.param("AskUserQuestion", {"question": "Which colour?"}, reply_in_thread,
                 {"answer": "Blue, please"}, id="ask-thread-reply"),
    pytest.param("AskUserQuestion", {"question": "Which colour?"}, answer_button_and_modal,
                 {"answer": "Blue, please"}, id="ask-answer-modal"),
    pytest.param("requestApproval", {"action": "Deploy v2", "reason": "Release day"}, approve,
                 {"approved": True}, id="approval-approve"),
    pytest.param("selectOption", {"question": "Where to?", "options": ["staging", "production"]},
                 pick_second_option, {"selectedIndex": 1, "selectedValue": "production"},
                 id="option-buttons"),
    pytest.param("selectOption", {"question": "Which one?", "options": SIX_OPTIONS},
                 pick_from_select, {"selectedIndex": 4, "selectedValue": "five"},
                 id="option-select"),
    pytest.param("collectUserData", FORM_ARGS, fill_in_form,
                 {"name": "Ada", "age": 36, "email": "ada@example.com"}, id="form-modal"),
    pytest.param("uploadFile", UPLOAD_ARGS, upload_pdf,
                 {"fileName": "report.pdf", "fileSize": 13,
                  "url": f"{FAKE_URL}/files-pri/{TEAM_ID}-F0REPORT01/report.pdf"},
                 id="upload-modal"),
    pytest.param("confirmAction", {"title": "Drop the table", "message": "This deletes every row.",
                 "severity": "danger"}, confirm_danger, {"confirmed": True}, id="confirm-danger"),
]  # fmt: skip


@pytest.mark.parametrize(("tool", "arguments", "answer", "expected"), CASES)
async def test_each_tool_round_trip(
    env: Env, tool: str, arguments: dict[str, Any], answer: Answer, expected: dict[str, Any]
) -> None:
    thread, message = await start_turn(env, tool, arguments)
    await answer(env, thread, message)
    result = await finish(env, thread, message, answered_by(ALICE))
    assert "is_error" not in result
    expected = json.loads(json.dumps(expected).replace(FAKE_URL, env.slack.url))
    assert json.loads(result["content"]) == expected
    record = await env.request_record(message)
    assert record.status is RequestStatus.RESOLVED and record.settled_by == ALICE
    assert env.slack.ephemerals == []  # nobody was told anything was wrong


# -- answers that need more than one step ------------------------------------------------------


async def test_a_decline_with_a_reason_reaches_the_model(env: Env) -> None:
    thread, message = await start_turn(
        env, "requestApproval", {"action": "Deploy v2", "reason": "Release day"}
    )
    click = env.click_payload(message, "hitl_decline")
    assert (await env.post(click)).status == 200
    view = await env.modal()
    assert view["callback_id"] == "hitl_modal:decline"
    assert "Deploy v2" in json.dumps(view["blocks"])  # what is being declined
    assert env.slack.calls_to("views.open")[0]["trigger_id"] == click["trigger_id"]
    assert has_actions(env.slack.message(CHANNEL, message["ts"]))  # a modal settles nothing yet

    assert await env.submit(view, {"reason": {"reason": "Not on a Friday"}}) == {}

    result = await finish(env, thread, message, f"Declined by <@{ALICE}>")
    assert result["is_error"] is True
    assert "Not on a Friday" in result["content"]
    assert (await env.request_record(message)).status is RequestStatus.REJECTED
    assert "Not on a Friday" in json.dumps(env.slack.message(CHANNEL, message["ts"])["blocks"])


async def test_invalid_form_values_are_shown_in_the_modal_then_fixed(env: Env) -> None:
    thread, message = await start_turn(env, "collectUserData", FORM_ARGS)
    await env.click(message, "hitl_submit")
    view = await env.modal()

    bad = {"name": {"name": "Ada"}, "age": {"age": "thirty"}, "email": {"email": "ada@"}}
    body = await env.submit(view, bad)

    assert body == {
        "response_action": "errors",
        "errors": {"age": "Enter a number", "email": "Enter a valid email address"},
    }
    record = await env.request_record(message)
    assert record.status is RequestStatus.PENDING
    assert has_actions(env.slack.message(CHANNEL, message["ts"]))
    assert len(env.requests) == 1  # the model is still waiting

    good = {"name": {"name": "Ada"}, "age": {"age": "36.5"}, "email": {"email": "a@b.io"}}
    assert await env.submit(view, good) == {}
    result = await finish(env, thread, message, answered_by(ALICE))
    assert json.loads(result["content"]) == {"name": "Ada", "age": 36.5, "email": "a@b.io"}


def every_kind_values(**changes: Any) -> dict[str, dict[str, Any]]:
    """A valid submission of the every-kind form, as values[block_id][action_id]."""
    values: dict[str, Any] = {
        "name": "Ada",
        "height": "1.75",
        "age": "36",
        "email": "ada@example.com",
        "site": "https://ada.example",
        "day": "2026-01-02",
        "at": "09:30",
        "when": {"type": "datetimepicker", "selected_date_time": 1767346200},
        "agree": "true",
        "size": "1",
        "tags": {"type": "multi_static_select", "selected_options": [
            {"text": {"type": "plain_text", "text": "1. red"}, "value": "0"},
            {"text": {"type": "plain_text", "text": "3. blue"}, "value": "2"},
        ]},
        "owner": ADMIN,
        **changes,
    }  # fmt: skip
    return {name: {name: value} for name, value in values.items() if value is not None}


async def test_a_form_of_every_field_kind_through_the_modal(env: Env) -> None:
    thread, message = await start_turn(env, "collectUserData", {"fields": EVERY_KIND_FIELDS})
    await env.click(message, "hitl_submit")
    view = await env.modal()
    kinds = {b["block_id"]: b["element"]["type"] for b in view["blocks"] if b["type"] == "input"}
    assert kinds == {
        "name": "plain_text_input", "notes": "plain_text_input", "height": "number_input",
        "age": "number_input", "email": "email_text_input", "site": "url_text_input",
        "day": "datepicker", "at": "timepicker", "when": "datetimepicker",
        "agree": "radio_buttons", "size": "static_select", "tags": "multi_static_select",
        "owner": "users_select",
    }  # fmt: skip

    bad = every_kind_values(name=None, height="3", age="12.5", email="ada@", site="ftp://x")
    body = await env.submit(view, bad)

    assert body == {
        "response_action": "errors",
        "errors": {
            "name": "Required",
            "height": "At most 2.5",
            "age": "Enter a whole number",
            "email": "Enter a valid email address",
            "site": "Enter a web address starting with https://",
        },
    }
    assert (await env.request_record(message)).status is RequestStatus.PENDING
    assert len(env.requests) == 1

    assert await env.submit(view, every_kind_values(agree="false")) == {}
    result = await finish(env, thread, message, answered_by(ALICE))
    assert json.loads(result["content"]) == {
        "name": "Ada", "height": 1.75, "age": 36, "email": "ada@example.com",
        "site": "https://ada.example", "day": "2026-01-02", "at": "09:30:00",
        "when": "2026-01-02T09:30:00Z", "agree": False, "size": "M", "tags": ["red", "blue"],
        "owner": ADMIN,
    }  # fmt: skip


async def test_a_file_of_the_wrong_type_is_refused_on_the_file_block(env: Env) -> None:
    thread, message = await start_turn(env, "uploadFile", UPLOAD_ARGS)
    await env.click(message, "hitl_submit")
    view = await env.modal()
    notes = env.slack.add_file("F0NOTES001", "notes.txt", b"hello", mimetype="text/plain")

    body = await env.submit(view, file_state({**notes, "url_private": "https://x/notes.txt"}))

    assert body["response_action"] == "errors"
    assert list(body["errors"]) == ["file"]
    assert "pdf" in body["errors"]["file"]
    assert (await env.request_record(message)).status is RequestStatus.PENDING
    assert len(env.requests) == 1

    assert await env.submit(view, file_state(pdf(env))) == {}
    result = await finish(env, thread, message, answered_by(ALICE))
    assert json.loads(result["content"])["fileName"] == "report.pdf"


# -- expiry ------------------------------------------------------------------------------------


async def test_an_unanswered_request_expires_and_a_late_click_is_told(start_env: StartEnv) -> None:
    env = await start_env(HITL_TIMEOUT_SECONDS=0.3)
    thread, message = await start_turn(
        env, "requestApproval", {"action": "Deploy v2", "reason": "Release day"}
    )

    expired = await thread.settled(message, "Expired")
    assert not has_actions(expired)
    assert (await thread.reply())["text"] == FINAL
    result = env.tool_result(2)
    assert result["is_error"] is True
    assert "timed out" in json.loads(result["content"])["error"]
    assert (await env.request_record(message)).status is RequestStatus.TIMED_OUT

    await env.click(message, "hitl_approve")

    (note,) = await env.slack.wait_for(lambda: env.slack.ephemerals, WAIT)
    assert note["user"] == ALICE and note["channel"] == CHANNEL
    assert note["text"].startswith("This request expired")
    assert len(env.slack.edits(CHANNEL, message["ts"])) == 3  # preparing, executing, expired
    assert len(env.requests) == 2


# -- who may answer ------------------------------------------------------------------------------


async def test_a_strangers_click_is_refused_privately_and_audited(env: Env) -> None:
    thread, message = await start_turn(
        env, "requestApproval", {"action": "Deploy v2", "reason": "Release day"}
    )

    await env.click(message, "hitl_approve", user=STRANGER)

    (note,) = await env.slack.wait_for(lambda: env.slack.ephemerals, WAIT)
    assert note["user"] == STRANGER
    assert note["text"].startswith(f"This request is for <@{ALICE}>")
    record = await env.request_record(message)
    assert record.status is RequestStatus.PENDING
    refused = [e for e in await env.store.list_audit(request_id=record.id)
               if e.action == "answer_refused"]  # fmt: skip
    assert [e.actor_id for e in refused] == [STRANGER]
    assert env.slack.message(CHANNEL, message["ts"]) == message  # not edited
    assert len(env.requests) == 1

    await env.click(message, "hitl_approve")  # the actor still can
    result = await finish(env, thread, message, answered_by(ALICE))
    assert json.loads(result["content"]) == {"approved": True}


async def test_a_strangers_modal_submission_is_refused(env: Env) -> None:
    thread, message = await start_turn(
        env, "requestApproval", {"action": "Deploy v2", "reason": "Release day"}
    )
    await env.click(message, "hitl_decline")
    view = await env.modal()

    body = await env.submit(view, {"reason": {"reason": "mine now"}}, user=STRANGER)

    assert body["response_action"] == "update"
    assert f"This request is for <@{ALICE}>" in json.dumps(body["view"])
    record = await env.request_record(message)
    assert record.status is RequestStatus.PENDING
    audit = await env.store.list_audit(request_id=record.id)
    assert [e.actor_id for e in audit if e.action == "answer_refused"] == [STRANGER]

    await env.click(message, "hitl_approve")
    await finish(env, thread, message, answered_by(ALICE))


async def test_a_strangers_thread_reply_answers_nothing(env: Env) -> None:
    env.model.script(reply_tool_use("AskUserQuestion", {"question": "Which colour?"}))
    thread = await env.mention("please ask me")
    message = await thread.request()

    await env.reply_in_thread(thread, "Red!", user=STRANGER)
    env.model.script(reply_text("Later reply."))
    later = await env.mention("something else")  # handled after the reply was
    assert (await later.reply())["text"] == "Later reply."

    record = await env.request_record(message)
    assert record.status is RequestStatus.PENDING
    audit = await env.store.list_audit(request_id=record.id)
    assert [e for e in audit if e.action == "answer_refused"] == []  # chatting is no attempt
    assert env.slack.ephemerals == []

    env.model.script(reply_text(FINAL), reply_text("Noted."))  # and the stranger's turn
    await env.reply_in_thread(thread, "Blue, please")
    await thread.settled(message, answered_by(ALICE))
    assert (await thread.reply())["text"] == FINAL
    assert json.loads(env.tool_result(3)["content"]) == {"answer": "Blue, please"}
    assert (await thread.reply(2))["text"] == "Noted."  # the stranger's words: a turn


@pytest.mark.parametrize("setting", ["HITL_ADMINS", "HITL_APPROVERS"])
async def test_an_admin_or_approver_may_answer_someone_elses_request(
    start_env: StartEnv, setting: str
) -> None:
    env = await start_env(**{setting: f"U0OTHER001, {ADMIN}"})
    thread, message = await start_turn(
        env, "requestApproval", {"action": "Deploy v2", "reason": "Release day"}
    )

    await env.click(message, "hitl_approve", user=ADMIN)

    result = await finish(env, thread, message, answered_by(ADMIN))
    assert json.loads(result["content"]) == {"approved": True}
    assert (await env.request_record(message)).settled_by == ADMIN
    assert env.slack.ephemerals == []


async def test_a_double_click_settles_once(env: Env) -> None:
    thread, message = await start_turn(
        env, "requestApproval", {"action": "Deploy v2", "reason": "Release day"}
    )
    clicks = [env.click_payload(message, "hitl_approve") for _ in range(2)]

    responses = await asyncio.gather(*(env.post(click) for click in clicks))

    assert [r.status for r in responses] == [200, 200]
    result = await finish(env, thread, message, answered_by(ALICE))
    assert json.loads(result["content"]) == {"approved": True}
    (note,) = await env.slack.wait_for(lambda: env.slack.ephemerals, WAIT)
    assert note["user"] == ALICE
    assert note["text"].startswith(f"This request was already answered by <@{ALICE}>")
    assert len(env.slack.calls_to("chat.update")) == 2  # preparing -> executing -> complete
    record = await env.request_record(message)
    assert [e.action for e in await env.store.list_audit(request_id=record.id)].count(
        "resolved"
    ) <= 1

    await env.click(message, "hitl_approve")  # a third, later click is told the same

    notes = await env.slack.wait_for(
        lambda: env.slack.ephemerals if len(env.slack.ephemerals) == 2 else [], WAIT
    )
    assert notes[1]["text"].startswith(f"This request was already answered by <@{ALICE}>")
    assert len(env.slack.calls_to("chat.update")) == 2
    assert len(env.requests) == 2


# -- delivery: retries, duplicates, signatures ----------------------------------------------------


async def settle_with_a_later_turn(env: Env) -> Thread:
    """Another mention, answered: by the time its reply is posted, deliveries sent before it
    have been handled (each is one quick claim; the later turn is a whole model round trip)."""
    env.model.script(reply_text("Later reply."))
    later = await env.mention("something else")
    assert (await later.reply())["text"] == "Later reply."
    return later


def last_user_text(n: int, env: Env) -> str:
    content = env.requests[n - 1].body["messages"][-1]["content"]
    return content if isinstance(content, str) else content[-1]["text"]


async def test_an_events_api_retry_runs_one_turn(env: Env) -> None:
    env.model.script(reply_text("Hello!"))
    root = env.slack.add_message(CHANNEL, f"<@{BOT_USER_ID}> hi", user=ALICE)
    event = message_event(
        f"<@{BOT_USER_ID}> hi", user=ALICE, channel=CHANNEL, ts=root["ts"], event_type="app_mention"
    )
    envelope = event_callback(event)
    thread = Thread(env, root["ts"])

    assert (await env.post(envelope)).status == 200
    assert (await thread.reply())["text"] == "Hello!"
    assert (await env.post(envelope, retry_num=1, retry_reason="http_timeout")).status == 200
    assert (await env.post(envelope, retry_num=2, retry_reason="http_timeout")).status == 200
    await settle_with_a_later_turn(env)

    assert [m["text"] for m in thread.texts()] == ["Hello!"]
    assert len(env.requests) == 2
    assert [last_user_text(1, env), last_user_text(2, env)] == ["hi", "something else"]


async def test_app_mention_and_message_for_one_slack_message_run_one_turn(env: Env) -> None:
    env.model.script(reply_text("Hello once!"))
    text = f"<@{BOT_USER_ID}> hi there"
    root = env.slack.add_message(CHANNEL, text, user=ALICE)
    mention = message_event(text, user=ALICE, channel=CHANNEL, ts=root["ts"],
                            event_type="app_mention")  # fmt: skip
    message = message_event(text, user=ALICE, channel=CHANNEL, ts=root["ts"])
    thread = Thread(env, root["ts"])

    responses = await asyncio.gather(
        env.post(event_callback(mention)), env.post(event_callback(message))
    )

    assert [r.status for r in responses] == [200, 200]
    assert (await thread.reply())["text"] == "Hello once!"
    await settle_with_a_later_turn(env)
    assert [m["text"] for m in thread.texts()] == ["Hello once!"]
    assert len(env.requests) == 2


# -- messages people send with a subtype: a reply also sent to the channel, a file ------------

DM = "D0ALICEDM01"  # Alice's direct messages with the bot


async def test_a_thread_broadcast_reply_answers_the_question(env: Env) -> None:
    thread, message = await start_turn(env, "AskUserQuestion", {"question": "Which colour?"})
    text = "Blue, please"
    msg = env.slack.add_message(
        CHANNEL, text, user=ALICE, thread_ts=thread.ts, subtype="thread_broadcast"
    )
    event = message_event(text, user=ALICE, channel=CHANNEL, ts=msg["ts"], thread_ts=thread.ts)
    event |= {"subtype": "thread_broadcast", "root": env.slack.message(CHANNEL, thread.ts)}
    assert (await env.post(event_callback(event))).status == 200

    result = await finish(env, thread, message, answered_by(ALICE))
    assert json.loads(result["content"]) == {"answer": "Blue, please"}
    assert (await env.request_record(message)).settled_by == ALICE


async def test_a_direct_message_with_a_file_starts_a_turn(env: Env) -> None:
    env.model.script(reply_text("Got your log."))
    file = {**pdf(env, "F0DEPLOYLOG", "deploy.log"), "permalink": "https://files.example/deploy"}
    msg = env.slack.add_message(DM, "what failed here?", user=ALICE, subtype="file_share")
    event = message_event(
        "what failed here?", user=ALICE, channel=DM, ts=msg["ts"], channel_type="im"
    )
    event |= {"subtype": "file_share", "files": [file], "upload": False, "display_as_bot": False}
    assert (await env.post(event_callback(event))).status == 200

    said = await env.slack.wait_for(lambda: env.replies_said(DM), WAIT)  # once whole
    assert said == ["Got your log."]
    reply = [m for m in env.slack.messages(DM) if m.get("user") == BOT_USER_ID]
    assert "thread_ts" not in reply[0]  # a DM outside threads is answered in the DM
    assert last_user_text(1, env) == (
        "what failed here?\n[file: deploy.log https://files.example/deploy]"
    )
    (run,) = env.requests
    assert run.body["messages"][0]["role"] == "user"


@pytest.mark.parametrize(
    "notice",
    [
        {"subtype": "message_changed", "message": {"text": "edited", "user": ALICE}},
        {"subtype": "message_deleted", "previous_message": {"text": "gone", "user": ALICE}},
        {"subtype": "bot_message", "bot_id": "B0OTHERBOT1", "user": "U0OTHERBOT1"},
        {"subtype": "channel_join"},
    ],
    ids=lambda notice: notice["subtype"],
)
async def test_notices_and_bots_messages_start_nothing(env: Env, notice: JSON) -> None:
    msg = env.slack.add_message(DM, "hello?", user=ALICE)
    event = message_event("hello?", user=ALICE, channel=DM, ts=msg["ts"], channel_type="im")
    assert (await env.post(event_callback(event | notice))).status == 200

    await settle_with_a_later_turn(env)
    assert len(env.requests) == 1  # only the later turn's
    assert [m for m in env.slack.messages(DM) if m.get("user") == BOT_USER_ID] == []


@pytest.mark.parametrize("problem", ["bad signature", "no signature", "stale timestamp"])
async def test_unsigned_or_stale_requests_are_refused(env: Env, problem: str) -> None:
    root = env.slack.add_message(CHANNEL, f"<@{BOT_USER_ID}> forged", user=ALICE)
    event = message_event(f"<@{BOT_USER_ID}> forged", user=ALICE, channel=CHANNEL,
                          ts=root["ts"], event_type="app_mention")  # fmt: skip
    body, content_type = encode(event_callback(event))
    headers = {"Content-Type": content_type}
    if problem == "bad signature":
        headers |= sign(body, "not-the-secret")
    elif problem == "stale timestamp":
        headers |= sign(body, SECRET, timestamp=int(time.time()) - 6 * 60)

    async with env.http.post(env.events_url, data=body, headers=headers) as response:
        assert response.status == 401

    # A click forged the same way settles nothing either.
    env.model.script(reply_tool_use("confirmAction", {"title": "T", "message": "M"}))
    env.model.script(reply_text(FINAL))
    thread = await env.mention("confirm something")
    message = await thread.request()
    click, click_type = encode(env.click_payload(message, "hitl_confirm"))
    click_headers = {"Content-Type": click_type}
    if problem == "bad signature":
        click_headers |= sign(click, "not-the-secret")
    elif problem == "stale timestamp":
        click_headers |= sign(click, SECRET, timestamp=int(time.time()) - 6 * 60)
    async with env.http.post(env.events_url, data=click, headers=click_headers) as response:
        assert response.status == 401

    await env.click(message, "hitl_cancel")  # a signed click goes through
    result = await finish(env, thread, message, answered_by(ALICE))
    assert json.loads(result["content"]) == {"confirmed": False}
    assert last_user_text(1, env) == "confirm something"  # the forged mention ran no turn
    assert Thread(env, root["ts"]).bot_messages() == []
    assert env.slack.ephemerals == []


# -- Slack's rate limits and the ack -----------------------------------------------------------


async def test_a_rate_limited_edit_is_retried_and_lands(env: Env) -> None:
    thread, message = await start_turn(
        env, "requestApproval", {"action": "Deploy v2", "reason": "Release day"}
    )
    env.slack.rate_limit("chat.update", times=1, retry_after=0)

    await env.click(message, "hitl_approve")

    result = await finish(env, thread, message, answered_by(ALICE))
    assert json.loads(result["content"]) == {"approved": True}
    assert len(env.slack.calls_to("chat.update")) == 3  # executing, the 429, complete


@pytest.mark.slow  # three Retry-After: 1 waits
async def test_clicks_are_acked_before_the_slow_work(env: Env) -> None:
    """Slack waits 3 s for the ack: it must not wait for our Web API calls (made slow here by
    429s with Retry-After: 1, which slack_sdk sleeps through before trying again)."""
    thread, message = await start_turn(
        env, "requestApproval", {"action": "Deploy v2", "reason": "Release day"}
    )

    env.slack.rate_limit("chat.postEphemeral", retry_after=1)
    await env.click(message, "hitl_approve", user=STRANGER)
    assert env.slack.ephemerals == []  # acked first
    await env.slack.wait_for(lambda: env.slack.ephemerals, WAIT)  # told after

    env.slack.rate_limit("views.open", retry_after=1)
    await env.click(message, "hitl_decline")
    assert env.slack.views == {}
    view = await env.modal()

    env.slack.rate_limit("chat.update", retry_after=1)
    assert await env.submit(view, {"reason": {"reason": "no"}}) == {}
    assert has_actions(env.slack.message(CHANNEL, message["ts"]))
    result = await finish(env, thread, message, "Declined")
    assert result["is_error"] is True and "no" in result["content"]


# -- model-written text is inert -------------------------------------------------------------------

EVIL = "Ping <!channel> and @here, <@U999> too: <https://evil.example|click me> & more"


def assert_inert(text: str) -> None:
    for live in ("<!channel>", "<@U999>", "<https://evil", "@here"):
        assert live not in text, f"{live!r} reached Slack in {text!r}"


async def test_model_written_text_is_escaped(env: Env) -> None:
    env.model.script(
        reply_tool_use("AskUserQuestion", {"question": EVIL}),
        reply_text(EVIL),
    )
    thread = await env.mention("be naughty")
    message = await thread.request()

    for version in env.slack.edits(CHANNEL, message["ts"]):
        assert_inert(json.dumps(version, ensure_ascii=False))
    assert "&lt;!channel&gt;" in json.dumps(message["blocks"])
    assert "&lt;@U999&gt;" in json.dumps(message["blocks"])

    await env.reply_in_thread(thread, "ok")
    await thread.settled(message, answered_by(ALICE))
    reply = await thread.reply()
    assert_inert(reply["text"])
    # The model's reply: the broadcast a word that pings nobody, the link showing its target.
    assert reply["text"].startswith("Ping @\u2060channel and @\u2060here, &lt;@U999&gt; too")
    assert "click me (https://evil.example) &amp; more" in reply["text"]
    for version in env.slack.edits(CHANNEL, message["ts"]):
        assert_inert(json.dumps(version, ensure_ascii=False))


# -- health ------------------------------------------------------------------------------------


async def test_healthz_is_ok_once_started(env: Env) -> None:
    async with env.http.get(f"{env.server.url}/healthz") as response:
        assert response.status == 200
        assert await response.json() == {"ok": True}


# -- the slash command -------------------------------------------------------------------------


async def test_the_slash_command_lists_what_waits_in_the_channel(env: Env) -> None:
    command = {
        "command": "/hitl", "text": "pending", "channel_id": CHANNEL, "user_id": ALICE,
        "team_id": "T0FAKE", "trigger_id": env.slack.new_trigger_id(),
        "response_url": env.slack.new_response_url(CHANNEL, "1.0"),
    }  # fmt: skip
    body = urlencode(command).encode()
    kind = "application/x-www-form-urlencoded"
    empty = await env.post(body, content_type=kind)
    assert empty.status == 200
    assert "Nothing is waiting" in (await empty.json())["text"]

    await start_turn(env, "requestApproval", {"action": "Deploy v2", "reason": "Release day"})
    listed = await (await env.post(body, content_type=kind)).json()
    assert listed["response_type"] == "ephemeral"
    assert "1 request(s) waiting" in listed["text"] and f"<@{ALICE}>" in listed["text"]
