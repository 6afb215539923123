"""A turn shown live in Slack (adapters/surfaces/slack/live_run.py, stops.py), end to end: the
served
app, FakeSlack and FakeAnthropic. The reply is streamed into one message (text batched, a task
card per tool call and per request waited on, a Stop button) and never posted twice; without
streaming it is posted whole, once; the Stop button and `/hitl stop` stop the turn.
"""

from __future__ import annotations

import json
import re
from urllib.parse import urlencode

from adapters.surfaces.slack.run_chunks import INTERRUPTED
from bot.bridge.turns import TURN_STOPPED
from tests.adapters.surfaces.slack.conftest import ALICE, CHANNEL, JSON, STRANGER, WAIT, Env, Thread
from tests.adapters.surfaces.slack.test_e2e import FINAL, start_turn
from tests.fakes.anthropic_api import reply, reply_pieces, reply_text, text_block
from tests.fakes.slack_api import TEAM_ID

STOP = "hitl_stop_run"
APPROVAL = {"action": "Deploy v2", "reason": "Release day"}


def words(n: int) -> str:
    return " ".join(f"word{i}" for i in range(n))


async def streamed_reply(env: Env, thread: Thread) -> JSON:
    """The turn's streamed message once its stream is stopped."""

    def stopped() -> JSON:
        found = [m for m in thread.bot_messages() if env.slack.streaming(CHANNEL, m["ts"]) is False]
        return found[0] if found else {}

    return await env.slack.wait_for(stopped, WAIT)


async def stream_message(env: Env, thread: Thread) -> JSON:
    """The turn's streamed message as soon as it is started (its Stop button shown)."""
    found = await env.slack.wait_for(
        lambda: [m for m in thread.bot_messages() if env.streamed(m)], WAIT
    )
    return found[0]


def posted_texts(env: Env) -> list[str]:
    return [str(call.get("text")) for call in env.slack.calls_to("chat.postMessage")]


async def slash(env: Env, text: str, *, user: str = ALICE) -> str:
    """/hitl `text` typed in the channel: acked at once, answered privately (ephemeral)."""
    command = {
        "command": "/hitl", "text": text, "channel_id": CHANNEL, "user_id": user,
        "team_id": TEAM_ID, "trigger_id": env.slack.new_trigger_id(),
        "response_url": env.slack.new_response_url(CHANNEL, "1.0"),
    }  # fmt: skip
    told = len(env.slack.ephemerals)
    kind = "application/x-www-form-urlencoded"
    response = await env.post(urlencode(command).encode(), content_type=kind)
    assert response.status == 200
    await env.slack.wait_for(lambda: len(env.slack.ephemerals) > told, WAIT)
    notice = env.slack.ephemerals[told]
    assert notice["user"] == user and notice["channel"] == CHANNEL
    return str(notice["text"])


async def test_a_reply_is_streamed_into_one_message_and_not_posted_again(env: Env) -> None:
    text = "Hello <@U0EVERYONE> & welcome: " + words(20)
    env.model.script(reply_text(text))
    thread = await env.mention("hi")
    message = await streamed_reply(env, thread)
    assert message["text"] == text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    (started,) = env.slack.calls_to("chat.startStream")
    assert started["thread_ts"] == thread.ts and started["task_display_mode"] == "timeline"
    assert (started["recipient_user_id"], started["recipient_team_id"]) == (ALICE, TEAM_ID)
    assert env.slack.calls_to("chat.postMessage") == []  # nothing said twice
    assert len(env.slack.calls_to("chat.stopStream")) == 1
    assert env.slack.refused == []


async def test_a_reply_of_two_text_blocks_is_streamed_once(env: Env) -> None:
    env.model.script(reply(text_block("First part, "), text_block("and the second.")))
    thread = await env.mention("hi")
    message = await streamed_reply(env, thread)
    assert message["text"] == "First part, \nand the second."  # as the loop joins them
    assert env.slack.calls_to("chat.postMessage") == []  # not streamed, then posted again
    assert env.slack.refused == []


# A prompt-injected reply in the pieces the model streams it in: a mass mention split across
# two flushes, a masked link, an image, Slack's own link and group mention split too.
HOSTILE = (
    "Hello @chan", "nel, please: [Approve ", "now](https://evil.example/ok) and ",
    "![logo](https://evil.example/l.png) <!sub", "team^S1> <https://evil.example|Open>",
)  # fmt: skip
SHOWN = (
    "Hello @\u2060channel, please: Approve now (https://evil.example/ok) and "
    "logo (https://evil.example/l.png) @subteam Open (https://evil.example)"
)
LIVE = re.compile(r"@(channel|here|everyone)\b|\]\(|!\[|<!|<https?:", re.IGNORECASE)


async def test_a_hostile_reply_streamed_in_pieces_shows_every_target_and_pings_nobody(
    env: Env,
) -> None:
    env.model.script(reply_pieces(*HOSTILE, delay=0.05))
    thread = await env.mention("hi")
    message = await streamed_reply(env, thread)
    assert message["text"] == SHOWN  # every piece as the whole reply renders: nothing live
    calls = env.slack.calls_to("chat.startStream") + env.slack.calls_to("chat.appendStream")
    sent = [c["text"] for call in calls for c in call["chunks"] if c["type"] == "markdown_text"]
    assert len(sent) >= 2 and not any(LIVE.search(piece) for piece in sent)
    assert env.slack.calls_to("chat.postMessage") == []
    assert env.slack.refused == []


async def test_a_hostile_reply_posted_whole_shows_every_target_and_unfurls_nothing(
    env: Env,
) -> None:
    env.slack.fail("chat.startStream", "not_allowed")
    env.model.script(reply_pieces(*HOSTILE))
    thread = await env.mention("hi")
    assert (await thread.reply())["text"] == SHOWN
    (posted,) = env.slack.calls_to("chat.postMessage")
    assert posted["unfurl_links"] is False and posted["unfurl_media"] is False


async def test_a_burst_of_500_tokens_is_a_few_appends(env: Env) -> None:
    text = words(500)
    env.model.script(reply_text(text))
    thread = await env.mention("a long one, please")
    message = await streamed_reply(env, thread)
    assert message["text"] == text
    appends = env.slack.calls_to("chat.appendStream")
    assert len(appends) <= 10, len(appends)  # batched, not one call per token
    assert env.slack.refused == []


async def test_a_tool_call_and_its_request_are_task_cards_that_complete(env: Env) -> None:
    thread, request = await start_turn(env, "requestApproval", APPROVAL)
    await env.click(request, "hitl_approve")
    message = await streamed_reply(env, thread)
    assert message["text"] == FINAL
    tasks = message["tasks"]
    call = env.tool_result(2)["tool_use_id"]
    assert tasks[call]["title"] == "requestApproval" and tasks[call]["status"] == "complete"
    record = await env.request_record(request)
    waited = tasks[f"request:{record.id}"]
    assert waited["title"] == "Waiting for an answer" and waited["status"] == "complete"
    assert waited["output"] == "answered"
    statuses = [
        chunk["status"]
        for call_args in env.slack.calls_to("chat.appendStream")
        for chunk in call_args.get("chunks", [])
        if chunk.get("id") == f"request:{record.id}"
    ]
    assert statuses[-1] == "complete" and "in_progress" in statuses
    assert env.slack.refused == []


async def test_without_streaming_the_reply_is_posted_once(env: Env) -> None:
    env.slack.fail("chat.startStream", "not_allowed")
    env.model.script(reply_text("Plain and whole."), reply_text("Again whole."))
    thread = await env.mention("hi")
    assert (await thread.reply())["text"] == "Plain and whole."
    assert posted_texts(env) == ["Plain and whole."]
    await env.mention("and again")  # the workspace's answer is remembered: not asked again
    await env.slack.wait_for(lambda: "Again whole." in posted_texts(env), WAIT)
    assert len(env.slack.calls_to("chat.startStream")) == 1
    assert env.slack.refused == []


async def test_a_stream_slack_stopped_midway_is_finished_as_a_message(env: Env) -> None:
    text = words(60)
    env.slack.fail("chat.appendStream", "message_not_in_streaming_state")
    env.model.script(reply_text(text, delay=0.005))
    thread = await env.mention("hi")
    await env.slack.wait_for(lambda: len(env.slack.calls_to("chat.postMessage")) == 1, WAIT)
    (streamed,) = [m for m in thread.bot_messages() if env.streamed(m)]
    (rest,) = posted_texts(env)
    assert streamed["text"] + rest == text  # all of it, nothing twice
    assert streamed["text"] and rest


async def test_the_turns_person_stops_it_with_the_stop_button(env: Env) -> None:
    thread, request = await start_turn(env, "requestApproval", APPROVAL)
    live = await stream_message(env, thread)
    await env.click(live, STOP)
    stopped = await thread.settled(request, f"Stopped by <@{ALICE}>")
    assert "Stopped by" in json.dumps(stopped["blocks"])
    message = await streamed_reply(env, thread)
    assert message["text"].endswith(f"Stopped by <@{ALICE}>_")
    (audit,) = [e for e in await env.store.list_audit(actor_id=ALICE) if e.action == TURN_STOPPED]
    assert audit.detail["room_id"] == f"slack:{CHANNEL}:{thread.ts}"
    assert env.slack.ephemerals == []  # the stream says it: nothing private
    assert env.slack.refused == []


async def test_a_strangers_stop_is_refused_privately_and_the_turn_goes_on(env: Env) -> None:
    thread, request = await start_turn(env, "requestApproval", APPROVAL)
    live = await stream_message(env, thread)
    await env.click(live, STOP, user=STRANGER)
    await env.slack.wait_for(lambda: env.slack.ephemerals, WAIT)
    (notice,) = env.slack.ephemerals
    assert notice["user"] == STRANGER
    assert notice["text"] == (
        "Only the person who started this run, its approvers or an admin can stop it."
    )
    await env.click(request, "hitl_approve")
    assert (await streamed_reply(env, thread))["text"] == FINAL


async def test_hitl_stop_typed_in_the_channel_stops_the_run(env: Env) -> None:
    thread, request = await start_turn(env, "requestApproval", APPROVAL)
    assert await slash(env, "stop", user=STRANGER) == (
        "Only the person who started this run, its approvers or an admin can stop it."
    )
    assert await slash(env, "stop") == "Stopped."
    await thread.settled(request, f"Stopped by <@{ALICE}>")
    assert (await streamed_reply(env, thread))["text"].endswith(f"Stopped by <@{ALICE}>_")
    assert await slash(env, "stop") == "No run of mine is going on in this channel."


async def test_a_reply_cut_short_and_asked_again_says_so_once(env: Env) -> None:
    first = words(40)
    env.model.script(reply_text(first, delay=0.005, cut_after=30), reply_text(FINAL))
    thread = await env.mention("hi")
    message = await streamed_reply(env, thread)
    shown, note, again = message["text"].partition(INTERRUPTED)
    if not note:  # nothing of the first try reached Slack before it was cut: nothing to say
        assert message["text"] == FINAL
    else:  # what was shown stays, the note follows it, then the retry's reply, whole
        assert first.startswith(shown) and shown != first and again == FINAL
    assert env.slack.calls_to("chat.postMessage") == []
    assert env.slack.refused == []


async def test_a_rate_limited_append_waits_its_retry_after_and_loses_nothing(env: Env) -> None:
    text = words(80)
    env.slack.rate_limit("chat.appendStream", times=1, retry_after=1)
    env.model.script(reply_text(text, delay=0.002))
    thread = await env.mention("hi")
    message = await streamed_reply(env, thread)
    assert message["text"] == text  # the 429 was waited out (slack_sdk's handler), then sent
    assert env.slack.calls_to("chat.postMessage") == []
    assert env.slack.refused == []
