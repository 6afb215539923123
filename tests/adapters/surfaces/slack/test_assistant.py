"""Slack's assistant view, end to end: a new thread gets the agent file's suggested prompts (or
the defaults) and a title; a message in the thread starts a turn, with its status line there."""

from __future__ import annotations

from pathlib import Path

from bot.config.agent_file import DEFAULT_SUGGESTED_PROMPTS
from tests.adapters.surfaces.slack.conftest import ALICE, WAIT, Env, StartEnv
from tests.fakes.anthropic_api import reply_text
from tests.fakes.slack_api import BOT_USER_ID
from tests.fakes.slack_signing import event_callback, message_event

DM = "D0ALICE001"  # the app's DM with Alice, where the assistant view's threads are
THREAD = "1700000001.000100"
AGENT_FILE = """\
suggested_prompts:
  - title: Deploy
    message: Deploy the api service to staging.
  - title: Roll back
    message: Roll back the last deploy.
"""


def thread_started(channel: str = DM, thread_ts: str = THREAD) -> dict[str, object]:
    """`assistant_thread_started` as Slack sends it when Alice opens a new chat."""
    return {
        "type": "assistant_thread_started",
        "assistant_thread": {
            "user_id": ALICE, "channel_id": channel, "thread_ts": thread_ts,
            "context": {"channel_id": "C0GENERAL01", "team_id": "T0FAKE0001"},
        },
        "event_ts": thread_ts,
    }  # fmt: skip


async def open_thread(env: Env) -> None:
    response = await env.post(event_callback(thread_started()))
    assert response.status == 200, await response.text()
    await env.slack.wait_for(lambda: env.slack.titles[DM, THREAD], WAIT)


async def test_a_new_thread_gets_the_agent_file_s_prompts_and_a_title(
    start_env: StartEnv, tmp_path: Path
) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(AGENT_FILE)
    env = await start_env(HITL_AGENT_FILE=str(path))
    await open_thread(env)
    (offered,) = env.slack.prompts[DM, THREAD]
    assert offered["prompts"] == [
        {"title": "Deploy", "message": "Deploy the api service to staging."},
        {"title": "Roll back", "message": "Roll back the last deploy."},
    ]
    assert env.slack.titles[DM, THREAD] == ["New chat"]
    assert env.slack.refused == []


async def test_without_an_agent_file_the_default_prompts(env: Env) -> None:
    await open_thread(env)
    (offered,) = env.slack.prompts[DM, THREAD]
    assert [p["title"] for p in offered["prompts"]] == [p.title for p in DEFAULT_SUGGESTED_PROMPTS]


async def test_a_message_in_the_thread_starts_a_turn_with_its_status_there(env: Env) -> None:
    await open_thread(env)
    env.model.script(reply_text("Nothing waits for you."))
    text = "What waits for me?"
    posted = env.slack.add_message(DM, text, user=ALICE, thread_ts=THREAD)
    event = message_event(
        text, user=ALICE, channel=DM, ts=posted["ts"], thread_ts=THREAD, channel_type="im"
    )
    assert (await env.post(event_callback(event))).status == 200
    said = await env.slack.wait_for(lambda: env.replies_said(DM), WAIT)  # streamed, then stopped
    assert said == ["Nothing waits for you."]
    [reply] = [m for m in env.slack.messages(DM) if m.get("user") == BOT_USER_ID]
    assert reply["thread_ts"] == THREAD
    await env.slack.wait_for(lambda: env.slack.status_history(DM, THREAD)[-1:] == [""], WAIT)
    assert env.slack.status_history(DM, THREAD) == ["is thinking…", ""]


async def test_a_changed_context_is_acked_and_changes_nothing(env: Env) -> None:
    event = {**thread_started(), "type": "assistant_thread_context_changed"}
    response = await env.post(event_callback(event))
    assert response.status == 200
    assert not env.slack.calls_to("assistant.threads.setTitle")
