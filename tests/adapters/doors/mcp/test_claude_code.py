"""Claude Code's formats (adapters/doors/mcp/claude_code.py), and permission_prompt end to end: the
real `serve` with the fake Slack, the official MCP client on /mcp as Claude Code's
--permission-prompt-tool, the person's clicks in Slack."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from adapters.doors.mcp.claude_code import SessionRule, command_prefix, session_rule
from tests.adapters.doors.mcp.claude_code_env import (
    actions,
    decline_and_stop,
    gate_message,
    mcp_client,
    serving,
)
from tests.adapters.surfaces.slack.conftest import ALICE, CHANNEL, WAIT, StartEnv, start_env

__all__ = ["start_env"]

DOCS = SessionRule("WebFetch", "domain:docs.example.com")
NPM_TEST = {"command": "npm test -- --watch=false", "description": "Run the tests"}


@pytest.mark.parametrize(
    ("command", "prefix"),
    [
        ("npm test -- --watch=false", "npm test"),
        ("git commit -m 'Bump'", "git commit"),
        ("ls -la", "ls"),
        ("python3 scripts/build.py", "python3"),
        ("./gradlew build", "./gradlew build"),
        ("  cargo   build  ", "cargo build"),
        ("npm test && rm -rf /", None),
        ("ls; rm -rf /", None),
        ("cat x | sh", None),
        ("echo $(whoami)", None),
        ("echo `id`", None),
        ("ls > out", None),
        ("FOO=1 npm test", None),
        ("rm -rf build\nrm -rf /", None),
        ("", None),
        (42, None),
    ],
)
def test_a_bash_rule_is_the_prefix_of_a_simple_command(command: Any, prefix: str | None) -> None:
    assert command_prefix(command) == prefix


@pytest.mark.parametrize(
    ("tool", "tool_input", "rule"),
    [
        ("Bash", NPM_TEST, SessionRule("Bash", "npm test:*")),
        ("Bash", {"command": "make && make install"}, None),
        ("WebFetch", {"url": "https://docs.example.com/a?b"}, DOCS),
        ("WebFetch", {"url": "file:///etc/passwd"}, None),
        ("Edit", {"file_path": "/src/a.py"}, SessionRule("Edit")),
        ("mcp__github__create_issue", {}, SessionRule("mcp__github__create_issue")),
    ],
)  # fmt: skip
def test_the_session_rule_is_as_narrow_as_the_call_lets_it_be(
    tool: str, tool_input: dict[str, Any], rule: SessionRule | None
) -> None:
    assert session_rule(tool, tool_input) == rule


def test_a_rule_is_written_and_added_as_claude_code_reads_it() -> None:
    assert SessionRule("Bash", "npm test:*").text == "Bash(npm test:*)"
    assert SessionRule("Bash", "npm test:*").update() == {
        "type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "npm test:*"}],
        "behavior": "allow", "destination": "session",
    }  # fmt: skip
    assert SessionRule("Edit").update()["rules"] == [{"toolName": "Edit"}]


# -- end to end ---------------------------------------------------------------------------------


async def test_approve_and_allow_here_adds_the_session_rule(start_env: StartEnv) -> None:
    env, token = await serving(start_env)
    async with mcp_client(env, token) as client:
        asking = asyncio.create_task(client.call_tool(
            "permission_prompt", {"tool_name": "Bash", "input": NPM_TEST, "tool_use_id": "t1"}
        ))  # fmt: skip
        message = await gate_message(env)
        shown = actions(message)
        assert shown["hitl_grant"] == "Approve and allow Bash(npm test:*) for this session"
        assert shown["hitl_stop"] == "Decline and stop"
        await env.click(message, "hitl_grant")
        result = await asyncio.wait_for(asking, WAIT)
    assert result.structured_content == {
        "behavior": "allow",
        "updatedInput": NPM_TEST,
        "updatedPermissions": [{
            "type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "npm test:*"}],
            "behavior": "allow", "destination": "session",
        }],
    }  # fmt: skip


async def test_a_plain_approve_adds_no_rule_and_a_compound_command_is_offered_none(
    start_env: StartEnv,
) -> None:
    env, token = await serving(start_env)
    compound = {"command": "make && make install"}
    async with mcp_client(env, token) as client:
        asking = asyncio.create_task(
            client.call_tool("permission_prompt", {"tool_name": "Bash", "input": compound})
        )
        message = await gate_message(env)
        assert "hitl_grant" not in actions(message)
        await env.click(message, "hitl_approve")
        result = await asyncio.wait_for(asking, WAIT)
    assert result.structured_content == {"behavior": "allow", "updatedInput": compound}


async def test_decline_and_stop_interrupts_claude_code(start_env: StartEnv) -> None:
    env, token = await serving(start_env)
    async with mcp_client(env, token) as client:
        asking = asyncio.create_task(
            client.call_tool("permission_prompt", {"tool_name": "Bash", "input": NPM_TEST})
        )
        await decline_and_stop(env, "wrong branch")
        result = await asyncio.wait_for(asking, WAIT)
    assert result.structured_content == {
        "behavior": "deny",
        "message": f"Declined by {ALICE}, who asked to stop: wrong branch",
        "interrupt": True,
    }
    # The message is edited in place to say who declined, and why.
    await env.slack.wait_for(
        lambda: any(
            "Declined and stopped: wrong branch" in str(m) for m in env.slack.messages(CHANNEL)
        ),
        WAIT,
    )


async def test_a_plain_decline_does_not_interrupt(start_env: StartEnv) -> None:
    env, token = await serving(start_env)
    async with mcp_client(env, token) as client:
        asking = asyncio.create_task(
            client.call_tool("permission_prompt", {"tool_name": "Bash", "input": NPM_TEST})
        )
        await env.click(await gate_message(env), "hitl_decline")
        await env.submit(await env.modal(), {"reason": {"reason": "Stopped: not yet"}})
        result = await asyncio.wait_for(asking, WAIT)
    assert result.structured_content == {
        "behavior": "deny", "message": f"Declined by {ALICE}: Stopped: not yet"
    }  # fmt: skip


async def test_a_caller_may_offer_neither_choice(start_env: StartEnv) -> None:
    env, token = await serving(start_env)
    async with mcp_client(env, token) as client:
        asking = asyncio.create_task(client.call_tool("permission_prompt", {
            "tool_name": "Bash", "input": NPM_TEST, "grant": False, "stop": False,
        }))  # fmt: skip
        message = await gate_message(env)
        assert set(actions(message)) == {"hitl_approve", "hitl_edit", "hitl_decline"}
        await env.click(message, "hitl_approve")
        result = await asyncio.wait_for(asking, WAIT)
    assert result.structured_content == {"behavior": "allow", "updatedInput": NPM_TEST}
    assert result.meta is not None and result.meta["hitl"]["status"] == "answered"
