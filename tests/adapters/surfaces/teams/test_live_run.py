"""A turn shown live in Teams (adapters/surfaces/teams/live_run.py), on the real service with the
fake
Bot Connector and FakeAnthropic: typing, the reply streamed in a personal chat (informative
lines, growing text, the final message), one plain message elsewhere or when Teams refuses
the stream, and Stop (clicked or typed) for the people the turn concerns."""

from __future__ import annotations

import asyncio
import itertools
import re
from pathlib import Path
from typing import Any

import pytest

from adapters.surfaces.teams import live_run
from adapters.surfaces.teams.conversations import NOT_YOURS, NOTHING_RUNNING
from adapters.surfaces.teams.stop_card import STOP_VERB
from tests.adapters.surfaces.teams.conftest import (
    ADMIN,
    ALICE,
    BOB,
    CHANNEL,
    GROUP,
    PERSONAL,
    STRANGER,
    WAIT,
    Chat,
    Env,
    StartEnv,
    User,
    invoke_activity,
    is_stop_card,
    request_id_of,
    text_of,
)
from tests.fakes.anthropic_api import reply_pieces, reply_text, reply_tool_use
from tests.fakes.bot_connector import Stream, cards_of

REPLY = "Hello there, this reply is streamed word by word."
APPROVAL = {"action": "Deploy v2", "reason": "Release day"}
STOPPED_BY_ALICE = f"Stopped by {ALICE.name}."


def stream_of(env: Env, conversation_id: str = PERSONAL, n: int = 1) -> Stream | None:
    streams = env.connector.streams(conversation_id)
    return streams[n - 1] if len(streams) >= n else None


def streamed(env: Env) -> list[str]:
    """The texts of the personal chat's first stream so far."""
    stream = stream_of(env)
    return stream.texts() if stream is not None else []


async def ended_stream(env: Env, n: int = 1) -> Stream:
    """The `n`-th streamed message of the personal chat, once its final message is in."""

    def ended() -> Stream | None:
        stream = stream_of(env, PERSONAL, n)
        return stream if stream is not None and stream.final is not None else None

    found = await env.connector.wait_for(ended, WAIT)
    assert found is not None
    return found


async def informed(env: Env, line: str) -> Stream:
    """The personal chat's stream once one of its informative lines is `line`."""

    def told() -> Stream | None:
        for stream in env.connector.streams(PERSONAL):
            if line in stream.texts("informative"):
                return stream
        return None

    found = await env.connector.wait_for(told, WAIT)
    assert found is not None
    return found


async def stop_card_of(chat: Chat) -> str:
    """The activity id of the turn's Stop card, once posted."""

    def posted() -> str:
        for activity in chat.bot_activities():
            if any(map(is_stop_card, cards_of(activity))):
                return str(activity["id"])
        return ""

    return await chat.env.connector.wait_for(posted, WAIT)


async def click_stop(chat: Chat, user: User) -> dict[str, Any]:
    activity = invoke_activity(
        chat.env.connector.service_url, STOP_VERB, "", conversation_id=chat.conversation_id,
        user=user, inputs={"room_id": chat.room_id},
    )  # fmt: skip
    status, body = await chat.env.post(activity)
    assert status == 200, body
    assert isinstance(body, dict)
    return body


async def test_a_personal_chat_streams_the_reply(start_env: StartEnv) -> None:
    env = await start_env(connector_options={"stream_interval": 0.0})
    hold = asyncio.Event()  # the reply is all written, not yet ended
    env.model.script(reply_text(REPLY, delay=0.02, hold=hold))
    chat = await env.say("hi")

    await env.connector.wait_for(lambda: PERSONAL in env.connector.typing, WAIT)
    await informed(env, "Thinking…")
    await env.connector.wait_for(lambda: REPLY in streamed(env), WAIT)
    hold.set()

    stream = await ended_stream(env)
    grown = stream.texts()
    assert len(grown) >= 2 and grown[-1] == REPLY
    assert all(b.startswith(a) and len(b) > len(a) for a, b in itertools.pairwise(grown))
    assert stream.final is not None and stream.final["text"] == REPLY
    assert stream.final["textFormat"] == "plain"
    assert chat.texts() == [REPLY]  # the final message is the reply, posted once
    assert env.connector.refused == []


async def test_pieces_keep_to_teams_rate(start_env: StartEnv) -> None:
    env = await start_env(
        HITL_TEAMS_STREAM_INTERVAL=0.15, connector_options={"stream_interval": 0.15}
    )
    env.model.script(reply_text(REPLY, delay=0.02))
    chat = await env.say("hi")
    stream = await ended_stream(env)
    assert stream.final is not None and stream.final["text"] == REPLY
    assert chat.texts() == [REPLY]
    assert env.connector.refused == []  # never two pieces closer than Teams takes them


# A prompt-injected reply in the pieces the model streams it in: a mass mention split across
# two pieces, a masked link, an image, a Teams mention and an HTML anchor.
HOSTILE = (
    "Hello @chan", "nel, please: [Approve ", "now](https://evil.example/ok) and ",
    "![logo](https://evil.example/l.png) <at>ever", 'yone</at> <a href="https://evil.example">',
    "Open</a>",
)  # fmt: skip
SHOWN = (
    "Hello @\u2060channel, please: Approve now (https://evil.example/ok) and "
    "logo (https://evil.example/l.png) @\u2060everyone Open (https://evil.example)"
)
LIVE = re.compile(r"@(channel|here|everyone)\b|\]\(|!\[|<at\b|<a\b", re.IGNORECASE)


async def test_a_hostile_reply_streamed_shows_every_target_and_pings_nobody(
    start_env: StartEnv,
) -> None:
    env = await start_env(connector_options={"stream_interval": 0.0})
    env.model.script(reply_pieces(*HOSTILE, delay=0.02))
    chat = await env.say("hi")
    stream = await ended_stream(env)
    assert stream.final is not None and stream.final["text"] == SHOWN
    grown = stream.texts()
    assert grown and not any(LIVE.search(text) for text in grown)  # each piece rendered whole
    assert chat.texts() == [SHOWN]
    assert env.connector.refused == []


async def test_a_hostile_reply_in_a_channel_shows_every_target_and_pings_nobody(
    env: Env,
) -> None:
    env.model.script(reply_pieces(*HOSTILE))
    chat = await env.say("hi", conversation_id=CHANNEL)
    assert await chat.reply() == SHOWN
    assert env.connector.streams(chat.conversation_id) == []


async def test_a_tool_step_and_an_approval_wait_are_told_by_name(env: Env) -> None:
    env.model.script(reply_tool_use("requestApproval", APPROVAL), reply_text("Deployed."))
    chat = await env.say("deploy please")
    await informed(env, "Running requestApproval…")
    await informed(env, f"Waiting for {ALICE.name} to approve: Deploy v2")
    _activity_id, card = await chat.request()
    stop_id = await stop_card_of(chat)

    await chat.invoke("hitl_approve", request_id_of(card))

    stream = await ended_stream(env)
    assert stream.final is not None and stream.final["text"] == "Deployed."
    assert chat.texts() == ["Deployed."]
    await env.connector.wait_for(lambda: "Done." in text_of(chat.card(stop_id)), WAIT)
    assert "Action.Execute" not in text_of(chat.card(stop_id))  # no Stop once it ended
    assert env.connector.refused == []


async def test_a_channel_gets_one_plain_message(env: Env) -> None:
    env.model.script(reply_text(REPLY))
    chat = await env.say("hi", conversation_id=CHANNEL)
    assert await chat.reply() == REPLY
    await env.connector.wait_for(lambda: chat.conversation_id in env.connector.typing, WAIT)
    assert env.connector.streams(chat.conversation_id) == []
    assert chat.texts() == [REPLY]
    assert env.connector.refused == []


async def test_a_refused_stream_falls_back_to_one_message(env: Env) -> None:
    env.connector.fail_next("POST", 403, times=2, retry_after=None)  # the typing, the stream
    env.model.script(reply_text(REPLY, delay=0.01))
    chat = await env.say("hi")
    assert await chat.reply() == REPLY
    assert env.connector.streams(PERSONAL) == []
    assert chat.texts() == [REPLY]  # once

    env.model.script(reply_text("Again."))  # the chat's next turn does not try to stream
    await env.say("and again")
    assert await chat.reply(2) == "Again."
    assert env.connector.streams(PERSONAL) == [] and env.connector.refused == []


async def _waiting(env: Env) -> tuple[Chat, str]:
    """A turn waiting for Alice's approval in the personal chat: the chat and its card."""
    env.model.script(reply_tool_use("requestApproval", APPROVAL), reply_text("Deployed."))
    chat = await env.say("deploy please")
    activity_id, _ = await chat.request()
    await informed(env, f"Waiting for {ALICE.name} to approve: Deploy v2")
    return chat, activity_id


async def test_stop_clicked_by_the_turns_person_ends_it(env: Env) -> None:
    chat, activity_id = await _waiting(env)
    stop_id = await stop_card_of(chat)

    body = await click_stop(chat, ALICE)

    assert STOPPED_BY_ALICE in text_of(body["value"])
    await chat.settled(activity_id, f"Stopped by {ALICE.name}")  # the request withdrawn
    stream = await ended_stream(env)
    assert stream.final is not None and stream.final["text"] == STOPPED_BY_ALICE
    await env.connector.wait_for(lambda: STOPPED_BY_ALICE in text_of(chat.card(stop_id)), WAIT)
    assert len(env.requests) == 1  # the model was not asked again
    assert env.connector.refused == []


async def test_a_stranger_may_not_stop_it(env: Env) -> None:
    chat, activity_id = await _waiting(env)
    await stop_card_of(chat)

    body = await click_stop(chat, STRANGER)

    assert body["value"] == NOT_YOURS
    assert chat.env.server.service.teams is not None
    assert "refresh" in chat.card(activity_id)  # still waiting
    assert stream_of(env) is not None and stream_of(env).final is None  # type: ignore[union-attr]


async def test_hitl_stop_typed_stops_the_turn(env: Env) -> None:
    chat, activity_id = await _waiting(env)
    await env.say("hitl stop")
    await chat.settled(activity_id, f"Stopped by {ALICE.name}")
    stream = await ended_stream(env)
    assert stream.final is not None and stream.final["text"] == STOPPED_BY_ALICE
    await env.say("hitl stop")
    assert await chat.reply(2) == NOTHING_RUNNING


async def test_teams_own_stop_button_stops_the_turn(env: Env) -> None:
    env.model.script(reply_text(REPLY, delay=0.05), reply_text("never asked"))
    chat = await env.say("hi")
    started = await env.connector.wait_for(lambda: streamed(env), WAIT)
    assert started and REPLY.startswith(started[0])
    stream = stream_of(env)
    assert stream is not None
    env.connector.cancel_stream(stream.id)  # the person presses stop on the streamed message

    assert await chat.reply() == STOPPED_BY_ALICE  # the stream is gone: said in a message
    assert len(chat.texts()) == 1 and len(env.requests) == 1
    assert env.connector.refused == []


async def test_in_a_channel_stop_is_the_turns_people_only(env: Env) -> None:
    env.model.script(reply_tool_use("requestApproval", APPROVAL), reply_text("Deployed."))
    chat = await env.say("deploy please", conversation_id=CHANNEL)
    activity_id, _ = await chat.request()
    stop_id = await stop_card_of(chat)

    await env.say("hitl stop", conversation_id=chat.conversation_id, user=STRANGER)
    assert await chat.reply() == NOT_YOURS  # said in the thread: Teams has no private reply
    assert (await click_stop(chat, STRANGER))["value"] == NOT_YOURS  # only they see it

    assert STOPPED_BY_ALICE in text_of((await click_stop(chat, ALICE))["value"])
    await chat.settled(activity_id, f"Stopped by {ALICE.name}")
    assert await chat.reply(2) == STOPPED_BY_ALICE
    await env.connector.wait_for(lambda: STOPPED_BY_ALICE in text_of(chat.card(stop_id)), WAIT)
    assert env.connector.streams(chat.conversation_id) == []
    assert env.connector.refused == []


def bob_approves(tmp_path: Path) -> str:
    """A policy file: Bob (by AAD object id, as rules name Teams users) approves deploys."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "rules:\n  - match: {tool: requestApproval}\n"
        f"    approvers: [teams:{BOB.aad}]\n    allow_self: false\n"
    )
    return str(policy)


async def test_the_approver_is_named_from_the_roster(start_env: StartEnv, tmp_path: Path) -> None:
    env = await start_env(HITL_POLICY_FILE=bob_approves(tmp_path))
    env.connector.add_member(PERSONAL, BOB.account)  # Bob never wrote to the bot
    env.model.script(reply_tool_use("requestApproval", APPROVAL), reply_text("Deployed."))
    await env.say("deploy please")
    await informed(env, f"Waiting for {BOB.name} to approve: Deploy v2")


async def test_an_approver_may_stop_the_turn(start_env: StartEnv, tmp_path: Path) -> None:
    env = await start_env(HITL_POLICY_FILE=bob_approves(tmp_path))
    env.model.script(reply_tool_use("requestApproval", APPROVAL), reply_text("Deployed."))
    chat = await env.say("deploy please", conversation_id=GROUP)
    activity_id, _ = await chat.request()
    await stop_card_of(chat)

    assert f"Stopped by {BOB.name}." in text_of((await click_stop(chat, BOB))["value"])
    await chat.settled(activity_id, f"Stopped by {BOB.name}")
    assert await chat.reply() == f"Stopped by {BOB.name}."
    stopped = [e for e in await env.store.list_audit(limit=100) if e.action == "turn.stopped"]
    assert [e.actor_id for e in stopped] == [BOB.aad]


async def test_typing_goes_on_while_a_reply_not_streamed_is_written(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live_run, "TYPING_EVERY", 0.05)  # Teams' ~3 s, shortened
    env.model.script(reply_text(REPLY, delay=0.05))
    chat = await env.say("hi", conversation_id=CHANNEL)
    assert await chat.reply() == REPLY
    assert env.connector.typing.count(chat.conversation_id) >= 3


async def test_an_admin_listed_by_their_bot_framework_id_may_stop_it(
    start_env: StartEnv,
) -> None:
    """HITL_ADMINS may name a Teams admin by either id: the Stop checks both."""
    env = await start_env(HITL_ADMINS=ADMIN.id)
    env.model.script(reply_tool_use("requestApproval", APPROVAL), reply_text("Deployed."))
    chat = await env.say("deploy please", conversation_id=GROUP)
    activity_id, _ = await chat.request()
    await stop_card_of(chat)

    assert f"Stopped by {ADMIN.name}." in text_of((await click_stop(chat, ADMIN))["value"])
    await chat.settled(activity_id, f"Stopped by {ADMIN.name}")
