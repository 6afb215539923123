"""A gated tool end to end through Slack: the served bridge with an agent file whose Python
tool needs approval; the call is shown with Approve / Approve and allow / Edit / Decline,
approved by a click or edited in the modal, and runs once with what was approved."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from tests.adapters.gated_tools import CALL, FINAL, TOKEN, agent_file
from tests.adapters.surfaces.slack.conftest import (
    ALICE,
    CHANNEL,
    STRANGER,
    WAIT,
    Env,
    StartEnv,
    action_ids,
)
from tests.fakes.anthropic_api import reply_text, reply_tool_use

pytestmark = pytest.mark.usefixtures("runs")  # the runs of `deploy`, per test


@pytest.fixture
async def env(start_env: StartEnv, tmp_path: Path) -> Env:
    return await start_env(**agent_file(tmp_path))


async def asked(env: Env, arguments: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """Mention the bot; the model calls deploy; returns the thread and the request message."""
    env.model.script(reply_tool_use("deploy", arguments), reply_text(FINAL))
    thread = await env.mention("deploy the api please")
    message = await thread.request()
    assert action_ids(message) == ["hitl_approve", "hitl_grant", "hitl_edit", "hitl_decline"]
    shown = json.dumps(message, ensure_ascii=False)
    assert "Run deploy?" in shown and "Deploy a service to an environment." in shown
    assert "production" in shown and "•••" in shown and TOKEN not in shown
    assert "Approve and allow deploy here for 1 hour" in shown
    return thread, message


async def outcome_shown(env: Env, message: dict[str, Any], *markers: str) -> dict[str, Any]:
    """The request's message once it shows the run's outcome (and `markers`)."""

    def shown() -> dict[str, Any]:
        current = env.slack.message(CHANNEL, message["ts"])
        text = json.dumps(current, ensure_ascii=False)
        return current if all(m in text for m in ("Outcome", *markers)) else {}

    return await env.slack.wait_for(shown, WAIT)


async def test_a_gated_call_is_approved_by_a_click_and_runs_once(
    env: Env, runs: list[dict[str, Any]]
) -> None:
    thread, message = await asked(env, CALL)
    assert runs == []
    await env.click(message, "hitl_approve")
    await env.click(message, "hitl_approve")  # a double click
    settled = await outcome_shown(env, message, f"Answered by <@{ALICE}>", "ok")
    assert action_ids(settled) == []
    assert (await thread.reply())["text"] == FINAL
    result = env.tool_result(2)
    assert "is_error" not in result
    assert result["content"] == "deployed api to production (1 replicas)"
    assert runs == [CALL]
    for version in env.slack.edits(CHANNEL, message["ts"]):
        assert TOKEN not in json.dumps(version)
    audit = await env.store.list_audit(limit=200)
    assert "tool.ran" in [e.action for e in audit]
    assert TOKEN not in json.dumps([repr(e) for e in audit])


async def test_a_gated_call_is_edited_in_the_modal_and_runs_as_edited(
    env: Env, runs: list[dict[str, Any]]
) -> None:
    thread, message = await asked(env, CALL)
    await env.click(message, "hitl_edit")
    view = await env.modal()
    inputs = {b["block_id"]: b["element"] for b in view["blocks"] if b["type"] == "input"}
    assert list(inputs) == ["service", "env", "replicas"]  # the token is neither shown nor edited
    assert inputs["service"]["initial_value"] == "api"
    assert inputs["env"]["initial_option"]["text"]["text"] == "2. production"
    assert inputs["replicas"]["initial_value"] == "1"
    assert TOKEN not in json.dumps(view)

    # Slack sends every input's state; the person changed env and replicas.
    values = {"service": {"service": "api"}, "env": {"env": "0"}, "replicas": {"replicas": "3"}}
    assert await env.submit(view, values) == {}
    await outcome_shown(env, message, "Edited", "ok")
    assert (await thread.reply())["text"] == FINAL
    content = env.tool_result(2)["content"]
    assert content == (
        f'Edited by {ALICE}: env: "production" → "staging"; replicas: 1 → 3\n'
        "deployed api to staging (3 replicas)"
    )
    assert runs == [{"service": "api", "env": "staging", "token": TOKEN, "replicas": 3}]


async def test_an_invalid_edit_is_shown_beside_its_field(
    env: Env, runs: list[dict[str, Any]]
) -> None:
    thread, message = await asked(env, CALL)
    await env.click(message, "hitl_edit")
    view = await env.modal()
    values = {"service": {"service": "api"}, "env": {"env": "0"}, "replicas": {"replicas": "2.5"}}
    response = await env.submit(view, values)
    assert response["response_action"] == "errors"
    assert list(response["errors"]) == ["replicas"]
    assert runs == []
    await env.click(message, "hitl_decline")
    decline = await env.modal(2)
    assert await env.submit(decline, {"reason": {"reason": "not today"}}) == {}
    assert (await thread.reply())["text"] == FINAL
    result = env.tool_result(2)
    assert result["is_error"] is True
    assert json.loads(result["content"]) == {"error": "Rejected: not today"}
    assert runs == []


async def slash(env: Env, text: str, *, user: str = ALICE) -> str:
    """/hitl `text` typed in the channel; the ephemeral reply's text."""
    command = {
        "command": "/hitl", "text": text, "channel_id": CHANNEL, "user_id": user,
        "team_id": "T0FAKE", "trigger_id": env.slack.new_trigger_id(),
        "response_url": env.slack.new_response_url(CHANNEL, "1.0"),
    }  # fmt: skip
    kind = "application/x-www-form-urlencoded"
    response = await env.post(urlencode(command).encode(), content_type=kind)
    assert response.status == 200
    body = await response.json()
    assert body["response_type"] == "ephemeral"
    return str(body["text"])


async def test_a_grant_is_listed_used_and_revoked_with_the_slash_command(
    env: Env, runs: list[dict[str, Any]]
) -> None:
    assert await slash(env, "grants") == "No tool is allowed to run unasked in this conversation."
    thread, message = await asked(env, CALL)
    await env.click(message, "hitl_grant")
    await outcome_shown(env, message, "allowed here for 1 hour", "ok")
    assert (await thread.reply())["text"] == FINAL

    listed = await slash(env, "grants")
    assert listed.startswith("1 tool grant(s) here:")
    assert f"deploy for <@{ALICE}>" in listed and f"granted by <@{ALICE}>" in listed
    slack = env.server.service.slack
    assert slack is not None and slack.grants is not None
    (grant,) = await slack.grants.list()
    assert f"`{grant.id}`" in listed

    # Alice's next deploy in the same thread runs unasked.
    env.model.script(reply_tool_use("deploy", CALL), reply_text(FINAL))
    await env.reply_in_thread(thread, "once more please")
    await thread.reply(2)
    assert env.tool_result(4)["content"] == "deployed api to production (1 replicas)"
    assert len(runs) == 2 and len(thread.requests_shown()) == 1

    refused = await slash(env, f"revoke {grant.id}", user=STRANGER)
    assert refused == f"Cannot revoke: you may not revoke grant {grant.id}."
    assert await slash(env, f"revoke {grant.id}") == (
        f"Revoked `{grant.id}`: deploy asks <@{ALICE}> again."
    )
    assert "No tool is allowed" in await slash(env, "grants")
    assert await slash(env, "revoke") == await slash(env, "help")  # usage
    audit = [e.action for e in await env.store.list_audit(limit=200)]
    assert {"grant.created", "grant.used", "grant.revoked"} <= set(audit)

    # Asked again once revoked.
    env.model.script(reply_tool_use("deploy", CALL), reply_text(FINAL))
    await env.reply_in_thread(thread, "and again")
    await thread.request(2)
    assert len(runs) == 2


async def test_a_gated_calls_approval_is_a_task_card_of_the_streamed_reply(
    env: Env, runs: list[dict[str, Any]]
) -> None:
    thread, message = await asked(env, CALL)
    await env.click(message, "hitl_approve")
    assert (await thread.reply())["text"] == FINAL
    record = await env.request_record(message)
    (streamed,) = [m for m in thread.bot_messages() if env.streamed(m)]
    waited = streamed["tasks"][f"request:{record.id}"]
    assert (waited["title"], waited["status"]) == ("Waiting for approval", "complete")
    call = streamed["tasks"][env.tool_result(2)["tool_use_id"]]
    assert (call["title"], call["status"]) == ("deploy", "complete")
    assert call["output"] == "deployed api to production (1 replicas)"
    assert TOKEN not in json.dumps(streamed)  # the secret argument is never shown
    assert env.slack.refused == []
