"""End to end over real HTTP: Bot Framework activities in, the real Teams SDK out to the fakes.

Every test runs the service as `hitl-bridge serve` does (`Server.start`, Teams enabled): a
message starts a turn, the scripted model calls a human tool, the request's card is posted in
the conversation and updated in place through its states, the actor's Teams client fetches the
live card with an automatic refresh, a person answers with an `adaptiveCard/action` invoke,
and the model reads the answer as the tool's result.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import aiohttp
import jwt
import pytest
from aiohttp import web
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from microsoft_teams.api import ActivityTypeAdapter
from microsoft_teams.api.auth.cloud_environment import PUBLIC, CloudEnvironment
from pydantic import ValidationError

from adapters.serve.http_server import build_web_app
from adapters.serve.settings import Settings
from adapters.surfaces.console.demo import SYSTEM_PROMPT
from adapters.surfaces.teams.app import UNAUTHENTICATED_WARNING, TeamsAdapter
from adapters.surfaces.teams.config import TeamsConfig, teams_config
from bot import AIChannel, AnthropicAIProvider, Bridge, ConfigurationError, HumanInputToolHandler
from bot.records import RequestStatus
from bot.requests.access import AnswerPolicy
from bot.store import open_store, upgrade
from tests.adapters.surfaces.teams.conftest import (
    ADMIN,
    ALICE,
    CARD_TYPE,
    CHANNEL,
    GROUP,
    JSON,
    MODEL,
    PERSONAL,
    STRANGER,
    Chat,
    Env,
    StartEnv,
    inputs_of,
    invoke_activity,
    is_live,
    message_activity,
    message_calls,
    request_id_of,
    text_of,
    verbs,
)
from tests.fakes.anthropic_api import FakeAnthropic, reply_text, reply_tool_use
from tests.fakes.bot_connector import FakeBotConnector, card_errors, cards_of

FINAL = "All done, thanks."
ANSWERED_BY_ALICE = f"Answered by {ALICE.name}"


# -- helpers -----------------------------------------------------------------------------------


async def start_turn(
    env: Env,
    tool: str,
    arguments: dict[str, Any],
    *,
    conversation_id: str = PERSONAL,
    user_ids: int = 1,
    whom: str = f"{ALICE.name}, this is for you.",
) -> tuple[Chat, str, JSON]:
    """Alice writes; the model calls `tool`: the chat, the card's activity id and the card
    as posted while executing (read-only, refreshing for Alice; saying `whom` it waits for)."""
    env.model.script(reply_tool_use(tool, arguments), reply_text(FINAL))
    chat = await env.say(f"please use {tool}", conversation_id=conversation_id)
    activity_id, card = await chat.request()
    versions = chat.versions(activity_id)
    # Posted as "Preparing request…" while the call streamed in, then updated into the request.
    assert "Preparing request…" in text_of(versions[0])
    assert not versions[0].get("refresh") and not is_live(versions[0])
    assert versions[1] == card
    assert not is_live(card)  # the card everyone sees is read-only
    assert card["refresh"]["userIds"][0] == ALICE.id
    assert len(card["refresh"]["userIds"]) == user_ids  # the actor (and deciders known)
    assert card["refresh"]["action"]["verb"] == "hitl_refresh"
    assert whom in text_of(card)  # whom it waits for
    return chat, activity_id, card


async def live_card(chat: Chat, card: JSON) -> JSON:
    """What Alice's Teams client shows: the card its automatic refresh fetched."""
    reply = await chat.invoke("hitl_refresh", request_id_of(card), trigger="automatic")
    live = reply.card
    assert is_live(live)
    assert f"{ALICE.name}, this is for you." in text_of(live)
    assert live["refresh"] == card["refresh"]  # it keeps refreshing while pending
    return live


async def finish(env: Env, chat: Chat, activity_id: str, marker: str) -> JSON:
    """Wait for the settled card and the agent's final reply; returns the tool result."""
    settled = await chat.settled(activity_id, marker)
    assert not is_live(settled)
    assert await chat.reply() == FINAL
    assert len(env.requests) == 2
    return env.tool_result(2)


def assert_settled_reply(reply: Any, marker: str) -> JSON:
    """An invoke answered with the settled card (no controls, no refresh) saying `marker`."""
    card: JSON = reply.card
    assert not is_live(card) and "refresh" not in card
    assert marker in text_of(card), text_of(card)
    return card


# -- each built-in tool, answered the way Teams lets a person answer it ------------------------


FORM_ARGS = {
    "fields": [
        {"name": "name", "label": "Name", "type": "text"},
        {"name": "age", "label": "Age", "type": "number"},
        {"name": "email", "label": "Email", "type": "email"},
    ]
}
CONTRACT_URL = "https://contoso.sharepoint.com/sites/legal/Shared%20Documents/contract.pdf"
SIX_OPTIONS = ["one", "two", "three", "four", "five", "six"]
DANGER = {"title": "Drop the table", "message": "This deletes every row.", "severity": "danger"}
BUILTIN_ARGS: dict[str, dict[str, Any]] = {
    "AskUserQuestion": {"question": "Which colour?"},
    "requestApproval": {"action": "Deploy v2", "reason": "Release day"},
    "selectOption": {"question": "Where to?", "options": ["staging", "production"]},
    "collectUserData": FORM_ARGS,
    "uploadFile": {"purpose": "The signed contract", "acceptedTypes": ["pdf"]},
    "confirmAction": DANGER,
}

CASES = [
    pytest.param("AskUserQuestion", {"question": "Which colour?"}, ["hitl_answer", "hitl_decline"],
                 "hitl_answer", {"answer.answer": "Blue, please"}, {"answer": "Blue, please"},
                 id="ask"),
    pytest.param("requestApproval", {"action": "Deploy v2", "reason": "Release day"},
                 ["hitl_approve", "hitl_decline"], "hitl_approve", {}, {"approved": True},
                 id="approval"),
    pytest.param("selectOption", {"question": "Where to?", "options": ["staging", "production"]},
                 ["hitl_choose", "hitl_decline"], "hitl_choose", {"choice.choice": "1"},
                 {"selectedIndex": 1, "selectedValue": "production"}, id="option"),
    pytest.param("selectOption", {"question": "Which one?", "options": SIX_OPTIONS},
                 ["hitl_choose", "hitl_decline"], "hitl_choose", {"choice.choice": "4"},
                 {"selectedIndex": 4, "selectedValue": "five"}, id="option-of-six"),
    pytest.param("collectUserData", FORM_ARGS, ["hitl_submit", "hitl_decline"], "hitl_submit",
                 {"form.name": "Ada", "form.age": "36", "form.email": "ada@example.com"},
                 {"name": "Ada", "age": 36, "email": "ada@example.com"}, id="form"),
    pytest.param("uploadFile", {"purpose": "The signed contract", "acceptedTypes": ["pdf"]},
                 ["hitl_submit", "hitl_decline"], "hitl_submit", {"upload.file.url": CONTRACT_URL},
                 {"fileName": "contract.pdf", "fileSize": 0, "url": CONTRACT_URL}, id="upload"),
    pytest.param("confirmAction", DANGER, ["hitl_confirm", "hitl_cancel", "hitl_decline"],
                 "hitl_confirm", {}, {"confirmed": True}, id="confirm-danger"),
    pytest.param("confirmAction", DANGER, ["hitl_confirm", "hitl_cancel", "hitl_decline"],
                 "hitl_cancel", {}, {"confirmed": False}, id="confirm-cancel"),
]  # fmt: skip


@pytest.mark.parametrize(("tool", "arguments", "buttons", "verb", "inputs", "expected"), CASES)
async def test_each_tool_round_trip(
    env: Env,
    tool: str,
    arguments: dict[str, Any],
    buttons: list[str],
    verb: str,
    inputs: dict[str, str],
    expected: dict[str, Any],
) -> None:
    chat, activity_id, card = await start_turn(env, tool, arguments)
    live = await live_card(chat, card)
    assert verbs(live) == buttons
    assert set(inputs) <= set(inputs_of(live))

    reply = await chat.invoke(verb, request_id_of(card), inputs=inputs)

    answered = assert_settled_reply(reply, ANSWERED_BY_ALICE)
    result = await finish(env, chat, activity_id, ANSWERED_BY_ALICE)
    assert chat.card(activity_id) == answered  # everyone's card: the same settled one
    assert "is_error" not in result
    assert json.loads(result["content"]) == expected
    record = await env.record(request_id_of(card))
    assert record.status is RequestStatus.RESOLVED and record.settled_by == ALICE.aad
    assert record.message_refs["teams"]["activity_id"] == activity_id
    # Posted once, updated in place: preparing -> executing -> answered.
    assert len(chat.versions(activity_id)) == 3
    # The reply's POST is its streamed message's final one (typing and Stop left out).
    assert sorted(c.method for c in message_calls(env.connector)) == ["POST", "POST", "PUT", "PUT"]


async def test_a_danger_confirmation_asks_again_and_is_destructive(env: Env) -> None:
    chat, _, card = await start_turn(env, "confirmAction", DANGER)
    live = await live_card(chat, card)
    confirm, cancel, decline = live["actions"]
    assert (confirm["type"], confirm["style"]) == ("Action.ShowCard", "destructive")
    assert "Are you sure? This cannot be undone." in text_of(confirm)
    (execute,) = confirm["card"]["actions"]
    assert (execute["verb"], execute["style"]) == ("hitl_confirm", "destructive")
    assert cancel["verb"] == "hitl_cancel" and decline["type"] == "Action.ShowCard"


@pytest.mark.parametrize("tool", list(BUILTIN_ARGS))
async def test_every_builtin_tool_can_be_declined_with_a_reason(env: Env, tool: str) -> None:
    chat, activity_id, card = await start_turn(env, tool, BUILTIN_ARGS[tool])
    live = await live_card(chat, card)
    assert verbs(live)[-1] == "hitl_decline" and "decline.reason" in inputs_of(live)

    reply = await chat.invoke(
        "hitl_decline", request_id_of(card), inputs={"decline.reason": "Too vague"}
    )

    declined = f"Declined by {ALICE.name}"  # the core's words, as on Slack
    assert_settled_reply(reply, declined)
    settled = await chat.settled(activity_id, declined)
    assert "Too vague" in text_of(settled)
    result = await finish(env, chat, activity_id, declined)
    assert result["is_error"] is True
    assert "Too vague" in json.loads(result["content"])["error"]
    record = await env.record(request_id_of(card))
    assert (record.status, record.reason) == (RequestStatus.REJECTED, "Too vague")


async def test_invalid_inputs_return_the_live_card_with_errors_under_their_fields(
    env: Env,
) -> None:
    chat, activity_id, card = await start_turn(env, "collectUserData", FORM_ARGS)
    request_id = request_id_of(card)
    bad = {"form.name": "Ada", "form.age": "thirty", "form.email": "ada@"}

    reply = await chat.invoke("hitl_submit", request_id, inputs=bad)

    live = reply.card
    assert is_live(live) and verbs(live) == ["hitl_submit", "hitl_decline"]
    body = live["body"]
    ids = [e.get("id") or e.get("text") for e in body]
    age, email = ids.index("form.age"), ids.index("form.email")
    assert ids[age + 1] == "⚠️ Enter a number"  # each error under its own field
    assert ids[email + 1] == "⚠️ Enter a valid email address"
    kept = inputs_of(live)
    assert (kept["form.name"].get("value"), kept["form.email"].get("value")) == ("Ada", "ada@")
    assert "value" not in kept["form.age"]  # not a number: Input.Number cannot show it
    assert (await env.record(request_id)).status is RequestStatus.PENDING
    assert chat.card(activity_id) == card  # nothing settled, nothing updated
    assert len(env.requests) == 1  # the model is still waiting

    good = {"form.name": "Ada", "form.age": "36.5", "form.email": "a@b.io"}
    assert_settled_reply(await chat.invoke("hitl_submit", request_id, inputs=good), "Ada")
    result = await finish(env, chat, activity_id, ANSWERED_BY_ALICE)
    assert json.loads(result["content"]) == {"name": "Ada", "age": 36.5, "email": "a@b.io"}


async def test_a_file_link_of_the_wrong_type_is_refused_on_the_card(env: Env) -> None:
    args = {"purpose": "The signed contract", "acceptedTypes": ["pdf"]}
    chat, activity_id, card = await start_turn(env, "uploadFile", args)
    notes = "https://contoso.sharepoint.com/sites/legal/notes.txt"

    reply = await chat.invoke("hitl_submit", request_id_of(card), inputs={"upload.file.url": notes})

    live = reply.card
    assert is_live(live) and "not one of the accepted types" in text_of(live)
    assert inputs_of(live)["upload.file.url"]["value"] == notes
    assert (await env.record(request_id_of(card))).status is RequestStatus.PENDING
    reply = await chat.invoke(
        "hitl_submit", request_id_of(card), inputs={"upload.file.url": CONTRACT_URL}
    )
    assert_settled_reply(reply, ANSWERED_BY_ALICE)
    result = await finish(env, chat, activity_id, ANSWERED_BY_ALICE)
    assert json.loads(result["content"])["fileName"] == "contract.pdf"


async def test_one_of_a_hundred_options_sharing_their_start_is_chosen(env: Env) -> None:
    start = "Roll back the payments service in eu-west-1 to the release tagged on Monday, "
    options = [f"{start}build {i}" for i in range(100)]
    chat, activity_id, card = await start_turn(
        env, "selectOption", {"question": "Which build?", "options": options}
    )
    live = await live_card(chat, card)
    (choice,) = [i for i in inputs_of(live).values() if i["type"] == "Input.ChoiceSet"]
    titles = [c["title"] for c in choice["choices"]]
    assert len(titles) == 100 and len(set(titles)) == 100  # told apart by their numbers
    assert titles[86].startswith("87. Roll back")

    reply = await chat.invoke("hitl_choose", request_id_of(card), inputs={"choice.choice": "86"})

    assert_settled_reply(reply, ANSWERED_BY_ALICE)
    result = await finish(env, chat, activity_id, ANSWERED_BY_ALICE)
    assert json.loads(result["content"]) == {"selectedIndex": 86, "selectedValue": options[86]}


EVERY_FIELD = {
    "fields": [
        {"name": "title", "label": "Title", "type": "text"},
        {"name": "notes", "label": "Notes", "type": "long_text", "required": False},
        {"name": "budget", "label": "Budget", "type": "number", "min": 0},
        {"name": "seats", "label": "Seats", "type": "integer", "max": 10},
        {"name": "contact", "label": "Contact", "type": "email"},
        {"name": "site", "label": "Site", "type": "url"},
        {"name": "day", "label": "Day", "type": "date"},
        {"name": "at", "label": "At", "type": "time"},
        {"name": "starts", "label": "Starts", "type": "datetime"},
        {"name": "remote", "label": "Remote", "type": "boolean"},
        {"name": "room", "label": "Room", "type": "choice", "options": ["Blue", "Green"]},
        {"name": "topics", "label": "Topics", "type": "choices", "options": ["a", "b", "c"]},
        {"name": "owner", "label": "Owner", "type": "user"},
    ]
}


async def test_a_form_of_every_field_type_end_to_end(env: Env) -> None:
    chat, activity_id, card = await start_turn(env, "collectUserData", EVERY_FIELD)
    live = await live_card(chat, card)
    drawn = inputs_of(live)
    assert drawn["form.owner"]["choices"] == [{"title": ALICE.name, "value": ALICE.aad}]
    entered = {
        "form.title": "Offsite", "form.notes": "", "form.budget": "1200.5", "form.seats": "8",
        "form.contact": "ada@example.com", "form.site": "https://example.com/offsite",
        "form.day": "2026-05-04", "form.at": "09:30", "form.starts.date": "2026-05-04",
        "form.starts.time": "08:00", "form.remote": "true", "form.room": "1",
        "form.topics": "0,2", "form.owner": ALICE.aad, "form.owner.other": "",
    }  # fmt: skip
    assert set(entered) <= set(drawn)
    too_many = {**entered, "form.seats": "11", "form.starts.time": ""}
    invalid = (await chat.invoke("hitl_submit", request_id_of(card), inputs=too_many)).card
    assert "At most 10" in text_of(invalid) and "Enter a date and time" in text_of(invalid)
    assert inputs_of(invalid)["form.topics"]["value"] == "0,2"

    reply = await chat.invoke("hitl_submit", request_id_of(card), inputs=entered)

    assert_settled_reply(reply, ANSWERED_BY_ALICE)
    result = await finish(env, chat, activity_id, ANSWERED_BY_ALICE)
    assert json.loads(result["content"]) == {
        "title": "Offsite", "budget": 1200.5, "seats": 8, "contact": "ada@example.com",
        "site": "https://example.com/offsite", "day": "2026-05-04", "at": "09:30:00",
        "starts": "2026-05-04T08:00:00Z", "remote": True, "room": "Green",
        "topics": ["a", "c"], "owner": ALICE.aad,
    }  # fmt: skip


# -- conversations ---------------------------------------------------------------------------------


async def test_a_mention_in_a_channel_runs_in_its_reply_chain(env: Env) -> None:
    chat, activity_id, card = await start_turn(
        env, "requestApproval", {"action": "Deploy v2", "reason": "Release day"},
        conversation_id=CHANNEL,
    )  # fmt: skip
    assert chat.conversation_id.startswith(f"{CHANNEL};messageid=")
    assert env.requests[0].body["messages"][0]["content"] == "please use requestApproval"

    reply = await chat.invoke("hitl_approve", request_id_of(card))

    assert_settled_reply(reply, ANSWERED_BY_ALICE)
    await finish(env, chat, activity_id, ANSWERED_BY_ALICE)
    record = await env.record(request_id_of(card))
    assert record.room_id == chat.room_id and record.actor_id == ALICE.aad

    env.model.script(reply_text("Deployed it."))  # a reply in the thread continues the room
    again = await env.say("did it work?", conversation_id=chat.conversation_id)
    assert again.room_id == chat.room_id
    assert await chat.reply(2) == "Deployed it."
    assert len(env.requests[2].body["messages"]) == 5  # the thread's transcript went along
    assert {c.conversation_id for c in env.connector.calls} == {chat.conversation_id}


async def test_a_group_chat_message_without_a_mention_is_not_for_the_bot(env: Env) -> None:
    env.model.script(reply_text("Hello group!"))
    await env.say("just chatting", conversation_id=GROUP, mention=False)
    chat = await env.say("hi bot", conversation_id=GROUP)

    assert await chat.reply() == "Hello group!"
    assert len(env.requests) == 1  # only the message that mentioned the bot ran a turn
    assert env.requests[0].body["messages"][0]["content"] == "hi bot"  # mention stripped


async def test_a_redelivered_message_runs_one_turn(env: Env) -> None:
    env.model.script(reply_text("Hello!"), reply_text("Later reply."))
    activity = message_activity(env.connector.service_url, "hi")
    for _ in range(3):
        status, _ = await env.post(activity)
        assert status == 200
    chat = Chat(env, PERSONAL)
    assert await chat.reply() == "Hello!"
    await env.say("something else")
    assert await chat.reply(2) == "Later reply."

    assert chat.texts() == ["Hello!", "Later reply."]
    assert len(env.requests) == 2


async def test_the_agents_text_is_sent_as_plain_text(env: Env) -> None:
    env.model.script(reply_text("See [this](https://evil.example) <at>everyone</at>"))
    chat = await env.say("hi")
    await chat.reply()
    (sent,) = chat.bot_activities()
    assert sent["textFormat"] == "plain"
    assert sent["text"] == "See this (https://evil.example) @\u2060everyone"  # model_text.py
    # No mention can ping anyone: the only entity is the streamed message's.
    assert [e["type"] for e in sent.get("entities", [])] == ["streaminfo"]


# -- expiry --------------------------------------------------------------------------------------


async def test_an_unanswered_request_expires_and_a_late_answer_is_told(
    start_env: StartEnv,
) -> None:
    env = await start_env(HITL_TIMEOUT_SECONDS=0.3)
    chat, activity_id, card = await start_turn(
        env, "requestApproval", {"action": "Deploy v2", "reason": "Release day"}
    )

    expired = await chat.settled(activity_id, "Expired")  # nobody looked: updated anyway
    assert not is_live(expired)
    assert await chat.reply() == FINAL
    result = env.tool_result(2)
    assert result["is_error"] is True
    assert "timed out" in json.loads(result["content"])["error"]
    assert (await env.record(request_id_of(card))).status is RequestStatus.TIMED_OUT

    reply = await chat.invoke("hitl_approve", request_id_of(card))  # a late click

    late = assert_settled_reply(reply, "This request expired 20")
    assert "Expired" in text_of(late)
    refreshed = (await chat.invoke("hitl_refresh", request_id_of(card), trigger="automatic")).card
    assert not is_live(refreshed) and "Expired" in text_of(refreshed)
    assert len(chat.versions(activity_id)) == 3  # preparing, executing, expired
    assert len(env.requests) == 2


# -- who may answer ------------------------------------------------------------------------------


async def test_a_strangers_answer_is_refused_and_audited(env: Env) -> None:
    chat, activity_id, card = await start_turn(
        env, "requestApproval", {"action": "Deploy v2", "reason": "Release day"}
    )
    request_id = request_id_of(card)

    reply = await chat.invoke("hitl_approve", request_id, user=STRANGER)

    refused = reply.card
    assert not is_live(refused)
    assert f"This request is for {ALICE.name}" in text_of(refused)
    record = await env.record(request_id)
    assert record.status is RequestStatus.PENDING
    audit = await env.store.list_audit(request_id=request_id)
    assert [e.actor_id for e in audit if e.action == "answer_refused"] == [STRANGER.aad]
    assert chat.card(activity_id) == card  # not updated
    assert len(env.requests) == 1

    assert_settled_reply(await chat.invoke("hitl_approve", request_id), ANSWERED_BY_ALICE)
    result = await finish(env, chat, activity_id, ANSWERED_BY_ALICE)
    assert json.loads(result["content"]) == {"approved": True}


async def test_an_automatic_refresh_gives_the_live_card_to_the_actor_only(env: Env) -> None:
    chat, _, card = await start_turn(env, "AskUserQuestion", {"question": "Which colour?"})
    request_id = request_id_of(card)

    actor = (await chat.invoke("hitl_refresh", request_id, trigger="automatic")).card
    stranger = await chat.invoke("hitl_refresh", request_id, user=STRANGER, trigger="automatic")
    manual = await chat.invoke("hitl_refresh", request_id, user=STRANGER, trigger="manual")
    no_trigger = await chat.invoke("hitl_refresh", request_id, trigger=None)

    assert is_live(actor) and verbs(actor) == ["hitl_answer", "hitl_decline"]
    assert not is_live(stranger.card)
    assert f"{ALICE.name}, this is for you." in text_of(stranger.card)
    assert "only they, an approver or an admin" not in text_of(stranger.card)
    assert not is_live(manual.card)  # a stranger's own click on refresh is told why
    assert f"This request is for {ALICE.name}" in text_of(manual.card)
    assert is_live(no_trigger.card)
    assert (await env.record(request_id)).status is RequestStatus.PENDING
    audit = await env.store.list_audit(request_id=request_id)
    assert not [e for e in audit if e.action == "answer_refused"]  # looking is no attempt


async def test_an_admin_gets_the_live_card_and_may_answer(env: Env) -> None:
    chat, activity_id, card = await start_turn(env, "AskUserQuestion", {"question": "Which?"})
    request_id = request_id_of(card)

    live = (await chat.invoke("hitl_refresh", request_id, user=ADMIN, trigger="manual")).card
    assert is_live(live)
    reply = await chat.invoke(
        "hitl_answer", request_id, user=ADMIN, inputs={"answer.answer": "Red"}
    )

    assert_settled_reply(reply, f"Answered by {ADMIN.name}")
    result = await finish(env, chat, activity_id, f"Answered by {ADMIN.name}")
    assert json.loads(result["content"]) == {"answer": "Red"}
    assert (await env.record(request_id)).settled_by == ADMIN.aad


async def test_known_admins_are_in_the_refresh_list_of_new_cards(env: Env) -> None:
    env.model.script(
        reply_tool_use("AskUserQuestion", {"question": "First?"}), reply_text("One."),
        reply_tool_use("AskUserQuestion", {"question": "Second?"}), reply_text("Two."),
    )  # fmt: skip
    chat = await env.say("first")
    _, first = await chat.request()
    assert first["refresh"]["userIds"] == [ALICE.id]  # the admin's Teams id is not known yet
    await chat.invoke("hitl_refresh", request_id_of(first), user=ADMIN, trigger="manual")
    await chat.invoke("hitl_answer", request_id_of(first), inputs={"answer.answer": "1"})
    assert await chat.reply() == "One."

    await env.say("second")
    _, second = await chat.request(2)

    assert second["refresh"]["userIds"] == [ALICE.id, ADMIN.id]


async def test_an_approver_configured_by_teams_user_id_is_refreshed_from_the_start(
    start_env: StartEnv,
) -> None:
    approver = replace(STRANGER, name="Paula Approver")
    env = await start_env(HITL_APPROVERS=approver.id)
    chat, activity_id, card = await start_turn(
        env, "requestApproval", {"action": "Deploy v2", "reason": "Release day"}, user_ids=2
    )
    assert card["refresh"]["userIds"] == [ALICE.id, approver.id]

    refresh = await chat.invoke(
        "hitl_refresh", request_id_of(card), user=approver, trigger="automatic"
    )
    live = refresh.card
    assert is_live(live)
    reply = await chat.invoke(
        "hitl_decline", request_id_of(card), user=approver,
        inputs={"decline.reason": "Code freeze"},
    )  # fmt: skip

    assert_settled_reply(reply, "Declined by Paula Approver")
    result = await finish(env, chat, activity_id, "Declined by Paula Approver")
    assert result["is_error"] is True and "Code freeze" in json.loads(result["content"])["error"]
    assert (await env.record(request_id_of(card))).settled_by == approver.aad


async def test_a_double_submit_settles_once(env: Env) -> None:
    chat, activity_id, card = await start_turn(
        env, "requestApproval", {"action": "Deploy v2", "reason": "Release day"}
    )
    request_id = request_id_of(card)

    first, second = await asyncio.gather(
        chat.invoke("hitl_approve", request_id), chat.invoke("hitl_approve", request_id)
    )

    cards = [assert_settled_reply(r, ANSWERED_BY_ALICE) for r in (first, second)]
    told = [c for c in cards if "This request was already answered" in text_of(c)]
    assert len(told) == 1  # the submit that lost is told honestly
    result = await finish(env, chat, activity_id, ANSWERED_BY_ALICE)
    record = await env.record(request_id)
    assert record.status is RequestStatus.RESOLVED
    assert json.loads(result["content"]) == json.loads(record.result or "")
    audit = [e.action for e in await env.store.list_audit(request_id=request_id)]
    assert audit.count("request.resolved") == 1
    assert len(chat.versions(activity_id)) == 3  # preparing, executing, answered

    third = await chat.invoke("hitl_decline", request_id)  # a later decline: the same answer
    assert "This request was already answered" in text_of(assert_settled_reply(third, "Alice"))
    assert len(env.requests) == 2


async def test_an_action_for_an_unknown_request_or_not_ours(env: Env) -> None:
    chat = Chat(env, PERSONAL)
    unknown = await chat.invoke("hitl_approve", "0123456789abcdef01234567")
    assert unknown.body == {
        "statusCode": 200,
        "type": "application/vnd.microsoft.activity.message",
        "value": "This request is no longer known.",
    }
    forged = await chat.invoke("someone_elses_verb", "0123456789abcdef01234567")
    assert forged.body["statusCode"] == 400
    assert forged.body["type"] == "application/vnd.microsoft.error"


# -- the SDK's automatic-refresh bug, and our way around it ------------------------------------


def test_the_sdk_still_rejects_automatic_refresh_invokes() -> None:
    """microsoft-teams-apps 2.1.1 types `value.trigger` as Literal["manual"], so its activity
    pipeline fails an automatic refresh (HTTP 500); TeamsAdapter reads card actions from the
    raw activity instead. When this fails, the SDK is fixed: the workaround can go."""
    activity = invoke_activity("https://smba.example/", "hitl_refresh", "r1", trigger="automatic")
    with pytest.raises(ValidationError, match="trigger"):
        ActivityTypeAdapter.validate_python(activity)
    manual = invoke_activity("https://smba.example/", "hitl_refresh", "r1", trigger="manual")
    ActivityTypeAdapter.validate_python(manual)


async def test_an_automatic_refresh_is_answered_not_failed(env: Env) -> None:
    _, _, card = await start_turn(env, "requestApproval", {"action": "X", "reason": "Y"})
    activity = invoke_activity(
        env.connector.service_url, "hitl_refresh", request_id_of(card), trigger="automatic"
    )
    status, body = await env.post(activity)
    assert status == 200
    assert body["statusCode"] == 200 and body["type"] == CARD_TYPE
    assert verbs(body["value"]) == ["hitl_approve", "hitl_decline"]


# -- delivery: retries, tokens -------------------------------------------------------------------


async def test_throttled_and_failing_connector_calls_are_retried(env: Env) -> None:
    env.connector.fail_next("POST", 429, retry_after="0")
    env.connector.fail_next("PUT", 503, retry_after=None)
    chat, activity_id, card = await start_turn(env, "AskUserQuestion", {"question": "Q?"})

    reply = await chat.invoke("hitl_answer", request_id_of(card), inputs={"answer.answer": "A"})

    assert_settled_reply(reply, ANSWERED_BY_ALICE)
    await finish(env, chat, activity_id, ANSWERED_BY_ALICE)
    # Each failure retried once: the first POST (the turn's typing) and the first PUT (the
    # card's update) are sent twice.
    posts, puts = env.connector.calls_to("POST"), env.connector.calls_to("PUT")
    assert posts[0].body == posts[1].body and posts[1].body != posts[2].body
    assert puts[0].body == puts[1].body


async def test_unauthenticated_mode_warns_and_sends_no_token(
    start_env: StartEnv, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="adapters.surfaces.teams.app"):
        env = await start_env()
    assert UNAUTHENTICATED_WARNING in caplog.messages
    env.model.script(reply_text("Hi!"))
    chat = await env.say("hello")
    assert await chat.reply() == "Hi!"
    assert {c.authorization for c in env.connector.calls} == {None}


async def test_a_body_that_is_not_an_activity_is_refused(env: Env) -> None:
    async with env.http.post(env.messages_url, data=b"not json") as response:
        assert response.status == 400
    async with env.http.get(f"{env.server.url}/healthz") as response:
        assert response.status == 200  # one server: health, Teams (and Slack) on one port


# -- with credentials: activities must carry a valid Bot Framework token ------------------------


def test_teams_is_enabled_by_credentials_or_explicitly_unauthenticated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in list(os.environ):
        if name.startswith(("HITL_", "TEAMS_", "SLACK_")) or name == "CLIENT_ID":
            monkeypatch.delenv(name)

    def config(**values: Any) -> TeamsConfig | None:
        return teams_config(Settings(_env_file=None, **values))

    assert config() is None
    assert config(HITL_TEAMS_ALLOW_UNAUTHENTICATED=True) == TeamsConfig()
    both = config(TEAMS_CLIENT_ID="app", TEAMS_CLIENT_SECRET="s", TEAMS_TENANT_ID="t",
                  HITL_TEAMS_ALLOW_UNAUTHENTICATED=True)  # fmt: skip
    assert both == TeamsConfig("app", "s", "t") and both.authenticated  # the flag is ignored
    with pytest.raises(ConfigurationError, match="TEAMS_CLIENT_SECRET"):
        config(TEAMS_CLIENT_ID="app")
    with pytest.raises(ConfigurationError, match="TEAMS_CLIENT_ID and TEAMS_CLIENT_SECRET"):
        config(TEAMS_TENANT_ID="t")
    monkeypatch.setenv("CLIENT_ID", "left-over")  # the SDK would pick it up: refused
    with pytest.raises(ConfigurationError, match="CLIENT_ID is set"):
        config(HITL_TEAMS_ALLOW_UNAUTHENTICATED=True)


CLIENT_ID = "11111111-2222-3333-4444-555555555555"


async def test_with_credentials_an_unauthenticated_activity_is_refused(
    start_env: StartEnv,
) -> None:
    """No network: a request without a token, or with one that is not a JWT at all, is refused
    before the SDK would fetch Microsoft's signing keys."""
    env = await start_env(
        HITL_TEAMS_ALLOW_UNAUTHENTICATED=True,  # ignored: credentials always verify
        TEAMS_CLIENT_ID=CLIENT_ID,
        TEAMS_CLIENT_SECRET="secret",
        TEAMS_TENANT_ID="tenant",
    )
    activity = message_activity(env.connector.service_url, "hi")

    for headers in ({}, {"Authorization": "Bearer not-a-jwt"}, {"Authorization": "Basic x"}):
        status, _ = await env.post(activity, headers)
        assert status == 401
    assert env.connector.calls == [] and env.requests == []


class _Keys:
    """Bot Framework signing keys on loopback: JWKS served by a thread (the SDK fetches keys
    with blocking urllib inside its async validation, so they cannot come from this loop)."""

    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        jwk = json.loads(RSAAlgorithm.to_jwk(self.key.public_key()))
        self.jwks = json.dumps({"keys": [{**jwk, "kid": "test-key", "use": "sig"}]}).encode()
        keys = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(keys.jwks)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def token(self, service_url: str, *, key: Any = None, **claims: Any) -> str:
        now = int(time.time())
        payload = {
            "iss": "https://api.botframework.com",
            "aud": CLIENT_ID,
            "serviceurl": service_url,
            "iat": now,
            "nbf": now,
            "exp": now + 600,
            **claims,
        }
        signer = key or self.key
        return jwt.encode(payload, signer, algorithm="RS256", headers={"kid": "test-key"})

    @contextmanager
    def serving(self) -> Iterator[_Keys]:
        thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.server.shutdown()
            self.server.server_close()
            thread.join()


@pytest.fixture
async def verified(tmp_path: Path) -> AsyncIterator[tuple[str, FakeBotConnector, _Keys]]:
    """A TeamsAdapter with credentials, validating tokens against `_Keys` (a CloudEnvironment
    whose OpenID metadata is on loopback), behind build_web_app: the messages URL."""
    keys = _Keys()
    cloud: CloudEnvironment = replace(
        PUBLIC, openid_metadata_url=f"{keys.url}/v1/.well-known/openidconfiguration"
    )
    url = f"sqlite+aiosqlite:///{tmp_path / 'hitl.db'}"
    await upgrade(url)
    store = await open_store(url, migrate=False)
    async with FakeAnthropic() as model, FakeBotConnector() as connector:
        provider = AnthropicAIProvider(MODEL, "test", base_url=model.base_url)
        bridge = Bridge(store=store)
        human = HumanInputToolHandler.builtin(timeout=30)
        channel = AIChannel("teams", provider=provider, system_prompt=SYSTEM_PROMPT,
                            human_input_handler=human)  # fmt: skip
        bridge.register_channel(channel)
        teams = TeamsAdapter(
            bridge=bridge, channel=channel, store=store, policy=AnswerPolicy(),
            tools=human.tools, config=TeamsConfig(CLIENT_ID, "secret", "tenant"), cloud=cloud,
        )  # fmt: skip
        runner = web.AppRunner(build_web_app(health=_ok, teams=teams.handle))
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        await teams.start()
        host, port = runner.addresses[0][:2]
        try:
            with keys.serving():
                yield f"http://{host}:{port}/api/messages", connector, keys
        finally:
            await runner.cleanup()
            await teams.close()
            await bridge.close()
            await teams.close_clients()
            await provider.close()
            await store.close()


async def _ok() -> bool:
    return True


async def test_with_credentials_only_a_valid_bot_framework_token_is_accepted(
    verified: tuple[str, FakeBotConnector, _Keys],
) -> None:
    messages_url, connector, keys = verified
    service_url = connector.service_url
    # An action for a request that does not exist: answered without any outbound call.
    activity = invoke_activity(service_url, "hitl_refresh", "0123456789abcdef01234567")
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    tokens = {
        "valid": keys.token(service_url),
        "another key": keys.token(service_url, key=other),
        "another audience": keys.token(service_url, aud="someone-else"),
        "another service": keys.token("https://elsewhere.example/"),
        "expired": keys.token(service_url, exp=int(time.time()) - 3600),
    }
    statuses: dict[str, int] = {}
    async with aiohttp.ClientSession() as http:
        for name, token in tokens.items():
            headers = {"Authorization": f"Bearer {token}"}
            async with http.post(messages_url, json=activity, headers=headers) as response:
                statuses[name] = response.status
                if name == "valid":
                    body = await response.json()
    assert statuses == {
        "valid": 200,
        "another key": 401,
        "another audience": 401,
        "another service": 401,
        "expired": 401,
    }
    assert body["value"] == "This request is no longer known."
    assert connector.calls == []


# -- what is sent is what Teams takes ----------------------------------------------------------


async def test_every_card_sent_is_a_valid_adaptive_card(env: Env) -> None:
    chat, activity_id, card = await start_turn(env, "collectUserData", FORM_ARGS)
    await live_card(chat, card)
    values = {"form.name": "A", "form.age": "1", "form.email": "a@b.io"}
    await chat.invoke("hitl_submit", request_id_of(card), inputs=values)
    await finish(env, chat, activity_id, ANSWERED_BY_ALICE)
    sent = [card for call in message_calls(env.connector) for card in cards_of(call.body)]
    assert len(sent) == 3
    assert all(card_errors(card) == [] for card in sent)
