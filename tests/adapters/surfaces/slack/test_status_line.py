"""The status line under a turn's thread (assistant.threads.setStatus), end to end: what the
turn is doing, who it waits for by name, refreshed while it runs, cleared when it ends, and a
workspace that refuses status lines still gets its replies."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from adapters.surfaces.slack.rooms import SlackRoom
from adapters.surfaces.slack.status_line import StatusLines
from bot.agent.steps import ToolStep
from bot.bridge.people import PeopleNames
from bot.bridge.watches import Ending, TurnEnd
from bot.human_input import RenderState, RequestUpdate
from tests.adapters.surfaces.slack.conftest import ALICE, CHANNEL, WAIT, Env, StartEnv
from tests.fakes.anthropic_api import reply_text, reply_tool_use
from tests.fakes.slack_api import FakeSlack

FINAL = "Looked it up and approved."
APPROVAL = {"action": "Deploy v2", "reason": "Release day"}
AGENT_FILE = """\
tools:
  - python: tests.adapters.surfaces.slack.test_status_line:lookup
"""
# `lookup` waits for the test to let it finish (so its status is seen while it runs)
LOOKUP_DONE: list[asyncio.Event] = []


async def lookup(what: str) -> str:
    """Look something up."""
    for done in LOOKUP_DONE:
        await done.wait()
    return f"found {what}"


@pytest.fixture
async def env(start_env: StartEnv, tmp_path: Path) -> Env:
    path = tmp_path / "agent.yaml"
    path.write_text(AGENT_FILE)
    started = await start_env(HITL_AGENT_FILE=str(path))
    started.slack.add_user(ALICE, "Alice Able")
    return started


def statuses(env: Env, thread_ts: str) -> list[str]:
    return env.slack.status_history(CHANNEL, thread_ts)


async def status_said(env: Env, thread_ts: str, said: str, times: int = 1) -> None:
    await env.slack.wait_for(lambda: statuses(env, thread_ts).count(said) >= times, WAIT)


async def test_thinking_then_running_then_waiting_by_name_then_cleared(env: Env) -> None:
    model_held, lookup_done = asyncio.Event(), asyncio.Event()
    LOOKUP_DONE[:] = [lookup_done]
    env.model.script(
        reply_tool_use("lookup", {"what": "v2"}, hold=model_held),
        reply_tool_use("requestApproval", APPROVAL),
        reply_text(FINAL),
    )
    thread = await env.mention("look up v2, then deploy it")
    await status_said(env, thread.ts, "is thinking…")
    model_held.set()
    await status_said(env, thread.ts, "is running lookup…")
    lookup_done.set()
    waiting = "is waiting for Alice Able to approve requestApproval"
    await status_said(env, thread.ts, waiting)
    await env.click(await thread.request(), "hitl_approve")
    assert (await thread.reply())["text"] == FINAL
    await env.slack.wait_for(lambda: statuses(env, thread.ts)[-1] == "", WAIT)
    said = [s for s in statuses(env, thread.ts) if s]
    assert said.index("is thinking…") < said.index("is running lookup…") < said.index(waiting)
    thinking = env.slack.statuses[CHANNEL, thread.ts][0]
    assert 0 < len(thinking["loading_messages"]) <= 10
    assert env.slack.refused == []


async def test_a_name_not_cached_shows_the_id_then_the_name(env: Env) -> None:
    env.model.script(reply_tool_use("AskUserQuestion", {"question": "Which?"}))
    thread = await env.mention("ask me")
    # The first status naming Alice may show her id (not looked up yet): then her name.
    await status_said(env, thread.ts, "is waiting for Alice Able to answer")
    assert [s for s in statuses(env, thread.ts) if "waiting" in s][-1].endswith("to answer")
    assert env.slack.calls_to("users.info")[0]["user"] == ALICE


async def test_the_status_is_set_again_before_slack_lets_it_lapse(env: Env) -> None:
    env.server.service.slack.status_lines.refresh = 0.05  # type: ignore[union-attr]
    env.model.script(reply_tool_use("AskUserQuestion", {"question": "Which colour?"}))
    thread = await env.mention("ask me")
    await status_said(env, thread.ts, "is waiting for Alice Able to answer", times=2)


async def test_status_lines_refused_turn_off_quietly_and_the_turn_replies(
    env: Env, caplog: pytest.LogCaptureFixture
) -> None:
    env.slack.fail("assistant.threads.setStatus", "not_allowed")
    env.model.script(reply_text("Hello there."), reply_text("Again."))
    with caplog.at_level(logging.INFO, logger="adapters.surfaces.slack.status_line"):
        thread = await env.mention("hi")
        assert (await thread.reply())["text"] == "Hello there."
        second = await env.mention("hi again")
        assert (await second.reply())["text"] == "Again."
    assert len(env.slack.calls_to("assistant.threads.setStatus")) == 1  # then off
    off = [r for r in caplog.records if "status lines are off" in r.getMessage()]
    assert [r.levelno for r in off] == [logging.INFO]


async def test_a_status_line_without_the_scope_is_off_too(start_env: StartEnv) -> None:
    env = await start_env()
    # Neither assistant:write nor chat:write (the fake checks no scope of chat.postMessage)
    env.slack.scopes = ("app_mentions:read", "users:read")
    env.model.script(reply_text("Hello."))
    thread = await env.mention("hi")
    assert (await thread.reply())["text"] == "Hello."
    await env.slack.wait_for(lambda: env.slack.refused, WAIT)
    assert env.slack.refused == [("assistant.threads.setStatus", "missing_scope")]
    service: Any = env.server.service
    assert service.slack.status_lines.on is False


# -- one status line on its own: coalescing, escaping ----------------------------------------


async def test_one_writer_sets_only_the_latest_status_and_escapes_the_model_s_text() -> None:
    async with FakeSlack() as slack:  # a turn that ends before its writer ran sets nothing
        client = AsyncWebClient(token=slack.token, base_url=slack.base_url)
        lines = StatusLines(client, PeopleNames([]))
        line = lines.watch(SlackRoom(CHANNEL, "1.0"), ALICE)
        assert line is not None and lines.watch(SlackRoom(CHANNEL, ""), ALICE) is None
        line.thinking()  # told at once, one after the other: only the last one is set
        line.tool_started(ToolStep("call-1", "lookup"))
        line.tool_started(ToolStep("call-2", "<!channel> & co"))
        await slack.wait_for_call("assistant.threads.setStatus")
        await line.ended(TurnEnd(Ending.FINISHED))
        assert slack.status_history(CHANNEL, "1.0") == ["is running &lt;!channel&gt; &amp; co…", ""]


def gate_update(state: RenderState) -> RequestUpdate:
    """An approval gate's request before `deploy` runs, for ALICE, in `state`."""
    return RequestUpdate(
        state=state, pending_id="req-1", tool_name="approveToolCall",
        arguments={"tool": "deploy"}, room_id=f"slack:{CHANNEL}:1.0", tool_call_id="call-1",
        channel_id="slack", channel_type="slack", actor_id=ALICE, created_at=datetime.now(UTC),
    )  # fmt: skip


async def test_a_gated_call_waits_for_approval_then_runs_on() -> None:
    async with FakeSlack(users={ALICE: "Alice Able"}) as slack:
        client = AsyncWebClient(token=slack.token, base_url=slack.base_url)
        lines = StatusLines(client, PeopleNames([]))  # no directory: the id is shown
        line = lines.watch(SlackRoom(CHANNEL, "1.0"), ALICE)
        assert line is not None
        line.tool_started(ToolStep("call-1", "deploy"))
        await slack.wait_for_call("assistant.threads.setStatus", 1)
        line.request_changed(gate_update(RenderState.EXECUTING))
        await slack.wait_for_call("assistant.threads.setStatus", 2)
        line.request_changed(gate_update(RenderState.COMPLETE))
        await slack.wait_for_call("assistant.threads.setStatus", 3)
        await line.ended(TurnEnd(Ending.FINISHED))
        assert slack.status_history(CHANNEL, "1.0") == [
            "is running deploy…", f"is waiting for {ALICE} to approve deploy",
            "is running deploy…", "",
        ]  # fmt: skip
