"""/hitl's admin views and the App Home tab, end to end: signed slash commands, events and
clicks posted to the running service, its Web API calls made to FakeSlack (views.publish
checked against Block Kit's limits and, with conformance data, its schema)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from adapters.surfaces.slack.app import RECORDS_UNAVAILABLE
from bot.gates.grants import Grants
from tests.adapters.surfaces.slack.conftest import (
    ADMIN,
    ALICE,
    CHANNEL,
    STRANGER,
    WAIT,
    Env,
    StartEnv,
    Thread,
    action_ids,
    has_actions,
)
from tests.adapters.surfaces.slack.test_read_only_store import read_only
from tests.fakes.anthropic_api import reply_text, reply_tool_use
from tests.fakes.slack_signing import (
    FORM,
    app_home_opened,
    event_callback,
    home_action_payload,
    slash_command,
)

JSON = dict[str, Any]
FINAL = "All done, thanks."
DEPLOY = {"action": "Deploy v2", "reason": "Release day"}
MANY = 24  # requests: more than a home view's 100 blocks hold


async def slash(env: Env, text: str, *, user: str = ALICE) -> JSON:
    """/hitl `text` typed in the channel; the reply's JSON (Bolt's ack)."""
    body = slash_command("/hitl", text, user_id=user, channel_id=CHANNEL)
    response = await env.post(body, content_type=FORM)
    assert response.status == 200, await response.text()
    reply: JSON = await response.json()
    assert reply["response_type"] == "ephemeral"  # every answer is private
    return reply


async def ask_approval(env: Env) -> tuple[Thread, JSON]:
    """Alice's agent asks her to approve a deploy; the thread and the request message."""
    env.model.script(reply_tool_use("requestApproval", DEPLOY), reply_text(FINAL))
    thread = await env.mention("please deploy")
    return thread, await thread.request()


async def open_home(env: Env, user: str) -> JSON:
    """`user` opens the App Home tab; the view published for them."""
    before = len(env.slack.calls_to("views.publish"))
    response = await env.post(event_callback(app_home_opened(user)))
    assert response.status == 200, await response.text()
    await env.slack.wait_for_call("views.publish", before + 1, WAIT)
    return env.slack.homes[user]


async def test_a_non_admin_is_refused_the_admin_views_and_the_attempt_audited(
    start_env: StartEnv,
) -> None:
    env = await start_env(HITL_ADMINS=ADMIN)
    for text in ("audit", "cancel r1 because", "audit @U0ALICE001 deploy* 7d"):
        reply = await slash(env, text, user=STRANGER)
        assert reply["text"] == "Only the bridge's admins may do that; the attempt is recorded."

    refused = await env.store.list_audit(actor_id=STRANGER)
    assert [e.action for e in refused] == ["admin.refused"] * 3
    assert refused[-1].detail == {"command": "audit", "surface": "slack"}
    assert await env.store.list_audit(actor_id=ADMIN) == []


async def test_mine_lists_the_callers_open_requests_anywhere(env: Env) -> None:
    assert (await slash(env, "mine"))["text"] == "Nothing waits for your answer."
    _, message = await ask_approval(env)
    record = await env.request_record(message)

    mine = (await slash(env, "mine"))["text"]
    assert mine.startswith("1 request(s) waiting for your answer:")
    assert f"`{record.id}` requestApproval for <@{ALICE}> in slack:{CHANNEL}:" in mine
    assert (await slash(env, "mine", user=STRANGER))["text"] == "Nothing waits for your answer."


async def test_an_admin_sees_every_room_and_the_audit_log_filtered(start_env: StartEnv) -> None:
    env = await start_env(HITL_ADMINS=ADMIN)
    _, message = await ask_approval(env)
    record = await env.request_record(message)
    # Alice, not an admin, sees this channel's requests as before: no ids, no rooms.
    assert "`" not in (await slash(env, "pending"))["text"]

    everywhere = (await slash(env, "pending", user=ADMIN))["text"]
    assert f"`{record.id}` requestApproval for <@{ALICE}> in slack:{CHANNEL}" in everywhere

    audit = (await slash(env, f"audit <@{ALICE}|alice> requestApp* 24h", user=ADMIN))["text"]
    assert audit.startswith("The latest 1 audit line(s):")
    assert f"request.created `{record.id}` by <@{ALICE}>" in audit
    nothing = (await slash(env, "audit other* 24h", user=ADMIN))["text"]
    assert nothing == "No audit line matches."
    unreadable = (await slash(env, "audit 24h 7d", user=ADMIN))["text"]
    assert unreadable.startswith("Cannot read that: one since at most.")
    # Each admin view used is on the record (the unreadable one showed nothing).
    used = [e.detail["command"] for e in await env.store.list_audit(actor_id=ADMIN)]
    assert used == ["audit other* 24h", f"audit @{ALICE} requestApp* 24h", "pending"]


async def test_an_admin_lists_every_rooms_grants_others_this_channels(
    start_env: StartEnv,
) -> None:
    env = await start_env(HITL_ADMINS=ADMIN)
    grants = Grants(env.store)
    for room in (f"slack:{CHANNEL}:1.0", "slack:C0ELSEWHERE:2.0"):
        await grants.grant(
            room_id=room, actor_id=ALICE, tool_name="deploy", arguments={}, seconds=3600,
            granted_by=ALICE,
        )  # fmt: skip

    everywhere = (await slash(env, "grants", user=ADMIN))["text"]
    assert everywhere.startswith("2 tool grant(s) in all:")
    assert "in slack:C0ELSEWHERE:2.0" in everywhere and f"in slack:{CHANNEL}:1.0" in everywhere
    here = (await slash(env, "grants"))["text"]  # Alice, no admin: this channel's only
    assert here.startswith("1 tool grant(s) here:") and "C0ELSEWHERE" not in here
    used = [e.detail["command"] for e in await env.store.list_audit(actor_id=ADMIN)]
    assert used == ["grants"]  # the admin view is on the record


async def test_an_admin_cancels_a_request_the_message_says_so_and_the_model_is_told(
    start_env: StartEnv,
) -> None:
    env = await start_env(HITL_ADMINS=ADMIN)
    thread, message = await ask_approval(env)
    record = await env.request_record(message)

    reply = await slash(env, f"cancel {record.id} wrong <b>branch</b> & window", user=ADMIN)

    assert (
        reply["text"] == f"Cancelled `{record.id}` (requestApproval); whoever waited on it is told."
    )
    settled = await thread.settled(message, "Cancelled by an admin")
    shown = json.dumps(settled["blocks"])
    assert f"Cancelled by an admin, <@{ADMIN}>" in shown
    assert "wrong &lt;b&gt;branch&lt;/b&gt; &amp; window" in shown  # escaped for Slack
    assert (await thread.reply())["text"] == FINAL
    result = env.tool_result(2)
    assert result["is_error"] is True
    assert json.loads(result["content"]) == {
        "error": "Cancelled by an admin: wrong <b>branch</b> & window"
    }
    (cancelled,) = await env.store.list_audit(request_id=record.id, actor_id=ADMIN)
    assert cancelled.action == "request.cancelled"
    assert cancelled.detail["reason"] == "Cancelled by an admin: wrong <b>branch</b> & window"

    again = (await slash(env, f"cancel {record.id}", user=ADMIN))["text"]
    assert again == f"Cannot cancel `{record.id}`: This request was withdrawn."
    unknown = (await slash(env, "cancel nope", user=ADMIN))["text"]
    assert unknown == "Cannot cancel `nope`: This request is no longer known."


async def test_app_home_shows_the_open_request_and_a_click_there_settles_it(env: Env) -> None:
    empty = await open_home(env, ALICE)
    assert "Nothing waits for your answer." in json.dumps(empty["blocks"])
    thread, message = await ask_approval(env)

    home = await open_home(env, ALICE)
    # The very controls of the request's message: the same action ids, the same request id.
    assert action_ids(home) == action_ids(message)
    assert "Latest decisions" not in json.dumps(home["blocks"])  # Alice is no admin

    click = home_action_payload(view=home, action_id="hitl_approve", user_id=ALICE)
    response = await env.post(click)
    assert response.status == 200, await response.text()

    settled = await thread.settled(message, f"Answered by <@{ALICE}>")
    assert not has_actions(settled)
    assert (await thread.reply())["text"] == FINAL
    assert json.loads(env.tool_result(2)["content"]) == {"approved": True}
    # Her tab is published again once her request changed: nothing waits any more.
    refreshed = await env.slack.wait_for(
        lambda: "Nothing waits" in json.dumps(env.slack.homes[ALICE]["blocks"]), WAIT
    )
    assert refreshed


async def test_an_admins_home_has_the_latest_decisions_and_the_figures(
    start_env: StartEnv,
) -> None:
    env = await start_env(HITL_ADMINS=ADMIN)
    thread, message = await ask_approval(env)
    await env.click(message, "hitl_approve")
    await thread.settled(message, f"Answered by <@{ALICE}>")

    shown = json.dumps((await open_home(env, ADMIN))["blocks"])

    record = await env.request_record(message)
    assert "Latest decisions" in shown
    assert f"requestApproval `{record.id}` answered by <@{ALICE}>" in shown
    assert "Time to decision (7 days, 1 decisions): median " in shown
    assert "95th percentile" in shown


async def test_a_home_with_many_requests_keeps_to_100_blocks(start_env: StartEnv) -> None:
    env = await start_env(HITL_ADMINS=ALICE)
    threads = []
    for n in range(MANY):
        env.model.script(reply_tool_use("requestApproval", {**DEPLOY, "action": f"Deploy {n}"}))
        threads.append(await env.mention(f"deploy {n}"))
    for thread in threads:
        await thread.request()

    home = await open_home(env, ALICE)

    assert len(home["blocks"]) <= 100  # FakeSlack refuses more
    shown = sum(1 for block in home["blocks"] if block["type"] == "actions")
    assert 0 < shown < MANY
    assert f"… and {MANY - shown} more: `/hitl mine` lists them all." in json.dumps(
        home["blocks"], ensure_ascii=False
    )


async def test_a_command_the_store_cannot_serve_is_one_private_line(
    start_env: StartEnv, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    env = await start_env(HITL_DATABASE_URL=read_only(tmp_path), HITL_ADMINS=ADMIN)
    # The refusal cannot be written down: the person is told so, never shown a 503.
    assert (await slash(env, "audit", user=STRANGER))["text"] == RECORDS_UNAVAILABLE
    assert "a /hitl command could not be answered" in caplog.text
    assert not [r for r in caplog.records if r.exc_info and r.levelno >= logging.WARNING]
