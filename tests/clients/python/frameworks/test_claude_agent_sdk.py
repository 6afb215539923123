"""hitl_client.frameworks.claude_agent_sdk: the `can_use_tool` callback with the Claude Agent
SDK's own types, asked through the real bridge and answered in (fake) Slack.

The SDK drives the `claude` CLI, which talks to Anthropic: these tests call the callback as
the SDK does (tool name, input, a real `ToolPermissionContext`) and check the results the SDK
would send, in its own wire form (`PermissionUpdate.to_dict`)."""

from __future__ import annotations

import asyncio
from typing import Any

from claude_agent_sdk import (
    PermissionResultAllow,
    PermissionResultDeny,
    PermissionUpdate,
    ToolPermissionContext,
)
from claude_agent_sdk.types import PermissionRuleValue

from hitl_client import HitlClient, ToolCallReview
from hitl_client.frameworks.claude_agent_sdk import can_use_tool, permission
from tests.examples.bridge import TO, Answer, Asked, Decline, Edit, bridge

WITHIN = 20.0  # seconds: a bound on a hang, not a speed requirement
WRITE = {"file_path": "/srv/app/config.yaml", "content": "replicas: 1\n"}
BASH = {"command": "rm -rf build/", "description": "Clean the build"}


def person(asked: Asked) -> Answer | Decline | Edit:
    """Edits a Write's content, declines any Bash, approves the rest."""
    if asked.arguments["tool"] == "Write":
        return Edit({"content": "replicas: 3\n"})
    if asked.arguments["tool"] == "Bash":
        return Decline("not on the build host")
    return Answer({"approved": True})


def context(n: int) -> ToolPermissionContext:
    return ToolPermissionContext(tool_use_id=f"toolu_{n}")


async def test_edits_and_declines_are_the_sdk_s_permission_results() -> None:
    async with bridge(person, at_once=3) as hitl, HitlClient(hitl.url, hitl.token) as client:
        decide = can_use_tool(client, to=TO, key="session-1")
        read, write, bash = await asyncio.wait_for(asyncio.gather(  # parallel calls, as Claude
            decide("Read", {"file_path": "/srv/app/config.yaml"}, context(1)),
            decide("Write", WRITE, context(2)),
            decide("Bash", BASH, context(3)),
        ), WITHIN)  # fmt: skip
    assert sorted(a.arguments["tool"] for a in hitl.asked) == ["Bash", "Read", "Write"]
    assert read == PermissionResultAllow(updated_input={"file_path": "/srv/app/config.yaml"})
    assert write == PermissionResultAllow(updated_input=WRITE | {"content": "replicas: 3\n"})
    assert isinstance(bash, PermissionResultDeny)
    assert bash.message.endswith(": not on the build host") and not bash.interrupt


async def test_a_decline_can_stop_claude_s_turn() -> None:
    async with bridge(person) as hitl, HitlClient(hitl.url, hitl.token) as client:
        decide = can_use_tool(client, to=TO, stop_on_decline=True)
        denied = await asyncio.wait_for(decide("Bash", BASH, context(1)), WITHIN)
    assert isinstance(denied, PermissionResultDeny) and denied.interrupt


async def test_a_bridge_out_of_reach_is_a_deny_saying_so() -> None:
    async with HitlClient("http://127.0.0.1:9", "hitl_unused", retries=0) as client:
        denied = await can_use_tool(client, to=TO)("Read", {"file_path": "/x"}, context(1))
    assert isinstance(denied, PermissionResultDeny)
    assert denied.message.startswith("The person could not be asked: ")


# -- a grant: a session rule, in Claude Code's permission-update format ----------------------


def granted(arguments: dict[str, Any]) -> ToolCallReview:
    return ToolCallReview(approved=True, arguments=arguments, grant=True)


def test_a_grant_keeps_claude_code_s_own_suggestion_to_the_session() -> None:
    prefix = PermissionRuleValue(tool_name="Bash", rule_content="npm test:*")
    suggestion = PermissionUpdate(type="addRules", rules=[prefix], behavior="allow",
                                  destination="localSettings")  # fmt: skip
    asked = {"command": "npm test"}
    allowed = permission(granted(asked), "Bash", asked,
                         ToolPermissionContext(suggestions=[suggestion]))  # fmt: skip
    assert isinstance(allowed, PermissionResultAllow) and allowed.updated_permissions
    assert [u.to_dict() for u in allowed.updated_permissions] == [{
        "type": "addRules", "destination": "session", "behavior": "allow",
        "rules": [{"toolName": "Bash", "ruleContent": "npm test:*"}],
    }]  # fmt: skip


def test_a_grant_without_a_suggestion_allows_the_tool_but_never_all_of_bash() -> None:
    edit = permission(granted(WRITE), "Write", WRITE, ToolPermissionContext())
    bash = permission(granted(BASH), "Bash", BASH, ToolPermissionContext())
    assert isinstance(edit, PermissionResultAllow) and edit.updated_permissions
    assert [u.to_dict() for u in edit.updated_permissions] == [{
        "type": "addRules", "destination": "session", "behavior": "allow",
        "rules": [{"toolName": "Write"}],
    }]  # fmt: skip
    assert bash == PermissionResultAllow(updated_input=BASH)  # allowed once, asked next time
