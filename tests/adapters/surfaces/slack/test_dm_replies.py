"""A person's message answers the request it replies to: end to end, `hitl-bridge serve`
(Server.start) with the fake Slack around it, requests asked over the HTTP API by two tokens
of the same person, by DM.

A reply in the thread of a request's message answers that request (and starts no agent turn);
a plain DM answers the one open question there, and with several asks which: a chooser whose
buttons each answer one request with the words written, through the router."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from bot.doors.tokens import Tokens
from bot.records import RequestStatus
from bot.store.doors import DoorTables
from tests.adapters.surfaces.slack.conftest import ALICE, STRANGER, WAIT, Env, StartEnv
from tests.fakes.anthropic_api import reply_text
from tests.fakes.slack_api import BOT_USER_ID
from tests.fakes.slack_signing import block_actions_payload, event_callback, message_event

JSON = dict[str, Any]
DM = "D" + ALICE[1:]  # FakeSlack's DM with Alice (conversations.open)


class Caller:
    """An API client with its own token."""

    def __init__(self, env: Env, token: str) -> None:
        self.env, self.token = env, token

    async def call(self, method: str, path: str, body: Any = None, **query: Any) -> JSON:
        headers = {"Authorization": f"Bearer {self.token}"}
        data = json.dumps(body).encode() if body is not None else None
        url = f"{self.env.server.url}/api/v1{path}"
        async with self.env.http.request(
            method, url, data=data, headers=headers, params=query
        ) as response:
            answer: JSON = await response.json()
            assert response.status < 300, answer
            return answer

    async def ask(self, question: str) -> str:
        """Ask Alice `question` by DM; the request's id once its message is posted."""
        made = await self.call("POST", "/requests", {
            "tool": "AskUserQuestion", "arguments": {"question": question},
            "to": f"slack:{ALICE}"})  # fmt: skip
        await message_of(self.env, made["id"])
        return str(made["id"])

    async def get(self, request_id: str, wait: float = 0) -> JSON:
        return await self.call("GET", f"/requests/{request_id}", wait=wait) if wait else (
            await self.call("GET", f"/requests/{request_id}"))  # fmt: skip


async def callers(start_env: StartEnv) -> tuple[Env, Caller, Caller]:
    env = await start_env()
    tokens = Tokens(DoorTables(env.store))
    a, _ = await tokens.create("agent-a")
    b, _ = await tokens.create("agent-b")
    return env, Caller(env, a), Caller(env, b)


async def message_of(env: Env, request_id: str) -> JSON:
    """The request's Slack message, once posted."""

    def found() -> JSON:
        return next((m for m in env.slack.messages(DM) if request_id in json.dumps(m)), {})

    message = await env.slack.wait_for(found, WAIT)
    assert message
    return message


async def dm(env: Env, text: str, *, thread_ts: str | None = None, user: str = ALICE) -> None:
    """Alice writes in her DM with the bot (in a thread when `thread_ts`)."""
    msg = env.slack.add_message(DM, text, user=user, thread_ts=thread_ts)
    event = message_event(
        text, user=user, channel=DM, ts=msg["ts"], thread_ts=thread_ts, channel_type="im"
    )
    assert (await env.post(event_callback(event))).status == 200


async def handled_before(env: Env) -> None:
    """A later mention in a channel, answered: by then the deliveries sent before it have been
    handled (each is one quick claim; the later turn is a whole model round trip)."""
    env.model.script(reply_text("Later reply."))
    later = await env.mention("something else")
    assert (await later.reply())["text"] == "Later reply."


async def click(env: Env, message: Mapping[str, Any], action_id: str, *, user: str = ALICE) -> None:
    """A click on `action_id` in `message`, in the DM."""
    payload = block_actions_payload(
        message=message, channel_id=DM, action_id=action_id, user_id=user,
        trigger_id=env.slack.new_trigger_id(),
        response_url=env.slack.new_response_url(DM, message["ts"]),
    )  # fmt: skip
    assert (await env.post(payload)).status == 200


def choosers(env: Env) -> list[JSON]:
    """The bot's messages in the DM asking which question a message answers."""
    return [
        m
        for m in env.slack.messages(DM)
        if m.get("user") == BOT_USER_ID and any(a.startswith("hitl_reply") for a in chosen_ids(m))
    ]


def chosen_ids(message: Mapping[str, Any]) -> list[str]:
    """Action ids of buttons in sections (a chooser shows each request as a section)."""
    return [
        str(block["accessory"].get("action_id"))
        for block in message.get("blocks") or []
        if isinstance(block.get("accessory"), dict)
    ]


# -- a reply in a request's thread ------------------------------------------------------------


async def test_a_reply_in_a_requests_thread_answers_that_request(start_env: StartEnv) -> None:
    env, a, b = await callers(start_env)
    first = await a.ask("Which colour for the logo?")
    second = await b.ask("Which day for the release?")
    message = await message_of(env, second)

    await dm(env, "Thursday", thread_ts=message["ts"])

    answered = await b.get(second, wait=WAIT)
    assert answered["status"] == "answered" and answered["answer"] == {"answer": "Thursday"}
    assert (await a.get(first))["status"] == "pending"
    await handled_before(env)
    assert len(env.model.requests) == 1  # the later DM's turn only: the reply started none
    assert [m for m in env.slack.thread(DM, message["ts"]) if m.get("user") == BOT_USER_ID
            and m["ts"] != message["ts"]] == []  # fmt: skip


async def test_a_plain_dm_answers_the_one_open_question(start_env: StartEnv) -> None:
    env, a, _ = await callers(start_env)
    asked = await a.ask("Which colour for the logo?")

    await dm(env, "Blue")

    answered = await a.get(asked, wait=WAIT)
    assert answered["status"] == "answered" and answered["answer"] == {"answer": "Blue"}
    assert choosers(env) == []


# -- several open: the person is asked which --------------------------------------------------


async def test_a_plain_dm_with_two_open_questions_asks_which(start_env: StartEnv) -> None:
    env, a, b = await callers(start_env)
    first = await a.ask("Which colour for the logo?")
    second = await b.ask("Which day for the release?")

    await dm(env, "Thursday")

    chooser = (await env.slack.wait_for(lambda: choosers(env), WAIT))[0]
    shown = json.dumps(chooser["blocks"])
    assert "Which colour for the logo?" in shown and "Which day for the release?" in shown
    assert len(chosen_ids(chooser)) == 2
    assert (await a.get(first))["status"] == "pending"
    assert (await b.get(second))["status"] == "pending"
    assert env.model.requests == []

    await click(env, chooser, chosen_ids(chooser)[1])

    answered = await b.get(second, wait=WAIT)
    assert answered["status"] == "answered" and answered["answer"] == {"answer": "Thursday"}
    assert (await a.get(first))["status"] == "pending"

    def told() -> JSON:
        current = env.slack.message(DM, chooser["ts"])
        return {} if chosen_ids(current) else current

    edited = await env.slack.wait_for(told, WAIT)
    assert "Which day for the release?" in json.dumps(edited)
    record = await env.store.get_request(second)
    assert record is not None and record.settled_by == ALICE


async def test_someone_elses_click_on_a_chooser_answers_nothing(start_env: StartEnv) -> None:
    env, a, b = await callers(start_env)
    first = await a.ask("Which colour for the logo?")
    await b.ask("Which day for the release?")
    await dm(env, "Blue")
    chooser = (await env.slack.wait_for(lambda: choosers(env), WAIT))[0]

    await click(env, chooser, chosen_ids(chooser)[0], user=STRANGER)

    (note,) = await env.slack.wait_for(lambda: env.slack.ephemerals, WAIT)
    assert note["user"] == STRANGER
    record = await env.store.get_request(first)
    assert record is not None and record.status is RequestStatus.PENDING


async def test_words_too_long_to_carry_are_not_held_and_the_writer_is_told(
    start_env: StartEnv,
) -> None:
    env, a, b = await callers(start_env)
    first = await a.ask("Which colour for the logo?")
    second = await b.ask("Which day for the release?")

    await dm(env, "x" * 2_100)

    (note,) = await env.slack.wait_for(lambda: env.slack.ephemerals, WAIT)
    assert note["user"] == ALICE and "reply in the thread" in note["text"].lower()
    assert choosers(env) == []
    assert (await a.get(first))["status"] == "pending"
    assert (await b.get(second))["status"] == "pending"
