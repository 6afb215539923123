"""`hitl-bridge hook pre-tool-use` (adapters/doors/mcp/hook.py): Claude Code's PreToolUse hook run
as
a process against the real `serve` (the fake Slack around it) on loopback, its input on stdin,
the person's clicks in Slack; and its reading of results, as a pure function."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from adapters.doors.mcp.hook import HookCall, HookFailure, decision_output, read_call
from tests.adapters.doors.mcp.claude_code_env import decline_and_stop, gate_message, serving
from tests.adapters.surfaces.slack.conftest import ALICE, Env, StartEnv, start_env

__all__ = ["start_env"]

ROOT = Path(__file__).resolve().parents[4]
HOOK = [sys.executable, "-m", "adapters.cli.command", "hook", "pre-tool-use"]
PROCESS_WAIT = 60.0  # a process importing the SDKs on a loaded machine: see test_stdio.py

BASH = {"command": "npm test", "description": "Run the tests"}
HOOK_INPUT = {
    "session_id": "s-1", "transcript_path": "/tmp/t.jsonl", "cwd": "/repo",
    "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": BASH,
    "tool_use_id": "toolu_1",
}  # fmt: skip


async def run_hook(
    env: dict[str, str], stdin: Any = HOOK_INPUT, *args: str
) -> tuple[int, dict[str, Any], str]:
    """The hook as Claude Code runs it: its exit status, its JSON output and its stderr."""
    given = {k: v for k, v in os.environ.items() if not k.startswith("HITL_")} | env
    process = await asyncio.create_subprocess_exec(
        *HOOK, *args, cwd=ROOT, env=given, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    text = stdin if isinstance(stdin, str) else json.dumps(stdin)
    async with asyncio.timeout(PROCESS_WAIT):
        out, err = await process.communicate(text.encode())
    assert process.returncode is not None
    return process.returncode, json.loads(out), err.decode()


def bridge_env(env: Env, token: str) -> dict[str, str]:
    return {"HITL_URL": env.server.url, "HITL_TOKEN": token}


@pytest.mark.subprocess
async def test_an_approval_allows_the_call(start_env: StartEnv) -> None:
    env, token = await serving(start_env)
    hook = asyncio.create_task(run_hook(bridge_env(env, token)))
    message = await gate_message(env, PROCESS_WAIT)
    assert "hitl_grant" not in str(message)  # a hook cannot add a session rule: not offered
    await env.click(message, "hitl_approve")
    status, output, said = await hook
    assert (status, said) == (0, "")
    assert output == {"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "allow",
        "permissionDecisionReason": f"Approved by {ALICE} through hitl-bridge",
    }}  # fmt: skip


@pytest.mark.subprocess
async def test_a_decline_denies_with_the_reason(start_env: StartEnv) -> None:
    env, token = await serving(start_env)
    hook = asyncio.create_task(run_hook(bridge_env(env, token)))
    await env.click(await gate_message(env, PROCESS_WAIT), "hitl_decline")
    await env.submit(await env.modal(), {"reason": {"reason": "use make test"}})
    status, output, said = await hook
    assert (status, said) == (0, "")
    assert output == {"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "deny",
        "permissionDecisionReason": f"Declined by {ALICE}: use make test",
    }}  # fmt: skip


@pytest.mark.subprocess
async def test_decline_and_stop_also_stops_claude_code(start_env: StartEnv) -> None:
    env, token = await serving(start_env)
    hook = asyncio.create_task(run_hook(bridge_env(env, token), HOOK_INPUT, "--timeout", "120"))
    await decline_and_stop(env, "wrong branch", PROCESS_WAIT)
    status, output, _ = await hook
    reason = f"Declined by {ALICE}, who asked to stop: wrong branch"
    assert status == 0
    assert output == {
        "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                               "permissionDecisionReason": reason},
        "continue": False, "stopReason": reason,
    }  # fmt: skip


@pytest.mark.subprocess
async def test_an_unreachable_bridge_falls_back_to_claude_code_s_prompt() -> None:
    status, output, said = await run_hook({"HITL_URL": "http://127.0.0.1:9", "HITL_TOKEN": "x"})
    assert status == 0
    decided = output["hookSpecificOutput"]
    assert decided["permissionDecision"] == "ask"
    assert decided["permissionDecisionReason"].startswith(
        "hitl-bridge could not ask a person: cannot reach the bridge at http://127.0.0.1:9/mcp"
    )
    (line,) = said.splitlines()  # one line, no traceback
    assert line.startswith("hitl-bridge hook: cannot reach the bridge at http://127.0.0.1:9/mcp")


@pytest.mark.subprocess
async def test_a_refused_token_falls_back_with_the_reason(start_env: StartEnv) -> None:
    env, _ = await serving(start_env)
    status, output, said = await run_hook(bridge_env(env, "hitl_not_a_token"))
    assert status == 0
    assert output["hookSpecificOutput"]["permissionDecision"] == "ask"
    assert "refused the token" in output["hookSpecificOutput"]["permissionDecisionReason"]
    assert len(said.splitlines()) == 1


# -- reading: pure ------------------------------------------------------------------------------

CALL = HookCall("Bash", BASH)


def meta(status: str, by: str | None = "U1") -> dict[str, Any]:
    return {"hitl": {"request_id": "r1", "status": status, "answered_by": by}}


def test_an_edit_is_the_updated_input() -> None:
    edited = {**BASH, "command": "npm test -- --ci"}
    output = decision_output(CALL, {"behavior": "allow", "updatedInput": edited}, meta("answered"))
    assert output["hookSpecificOutput"] == {
        "hookEventName": "PreToolUse", "permissionDecision": "allow",
        "permissionDecisionReason": "Approved by U1 with edits, through hitl-bridge",
        "updatedInput": edited,
    }  # fmt: skip


@pytest.mark.parametrize("status", ["expired", "cancelled", "undeliverable", "pending"])
def test_every_end_but_a_person_s_decision_asks(status: str) -> None:
    denied = {"behavior": "deny", "message": status.capitalize()}
    decided = decision_output(CALL, denied, meta(status, None))["hookSpecificOutput"]
    assert decided["permissionDecision"] == "ask"
    assert decided["permissionDecisionReason"] == (
        f"hitl-bridge could not ask a person: {status.capitalize()}"
    )


def test_a_result_without_the_request_s_status_asks() -> None:
    said = {"behavior": "deny", "message": "The person could not be asked: `to` is needed"}
    decided = decision_output(CALL, said, {})["hookSpecificOutput"]
    assert decided["permissionDecision"] == "ask"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("not json", "the hook's input is not JSON"),
        ("[]", "the hook's input is not a JSON object"),
        ('{"hook_event_name": "Stop"}', "this hook answers PreToolUse, not Stop"),
        ('{"tool_input": {}}', "the hook's input names no tool_name"),
        ('{"tool_name": "Bash", "tool_input": "ls"}', "the hook's input has no tool_input object"),
    ],
)
def test_input_that_is_not_a_hook_s_is_named(text: str, problem: str) -> None:
    with pytest.raises(HookFailure, match=problem):
        read_call(text)


def test_the_call_is_read_from_the_hook_s_input() -> None:
    assert read_call(json.dumps(HOOK_INPUT)) == HookCall("Bash", BASH, "toolu_1")
