"""The Claude Agent SDK's tool permissions decided by people through the bridge: a
`can_use_tool` callback.

    from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient
    from hitl_client.frameworks.claude_agent_sdk import can_use_tool

    options = ClaudeAgentOptions(can_use_tool=can_use_tool(hitl, to="slack:U0123ABCD"))

Claude asks before each tool call its permission rules do not allow already; the callback
shows the call as the bridge's approval gate (Approve / Edit / Decline) and answers:

- Approve: `PermissionResultAllow`, with `updated_input` the call to run (the person's edits
  applied); approve and allow here (a grant, where the bridge offers it) adds a session rule
  (`updated_permissions`): Claude Code's own suggestion for the call, or the tool as a whole
  (never the whole of Bash), so calls like it are not asked again this session.
- Decline: `PermissionResultDeny`, its message the person's reason, which Claude reads;
  `interrupt=True` also stops Claude's turn, if the callback was made with
  `stop_on_decline=True`.
- Nobody answered, the request was withdrawn or could not be made: a deny saying so (Claude
  Code takes an error of the callback for a failed call, not for a decision).

Needs `claude-agent-sdk` (the `claude-agent-sdk` extra), which drives the `claude` CLI.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from claude_agent_sdk import (
    CanUseTool,
    PermissionResult,
    PermissionResultAllow,
    PermissionResultDeny,
    PermissionUpdate,
    ToolPermissionContext,
)
from claude_agent_sdk.types import PermissionRuleValue  # not re-exported by the package

from hitl_client.client import HitlClient
from hitl_client.errors import HitlError, RequestExpired, RequestNotAnswered
from hitl_client.models import ToolCallReview

__all__ = ["can_use_tool", "permission", "session_rules"]

UNBOUNDED = frozenset({"Bash"})  # tools a rule for the whole tool would let do anything


def can_use_tool(
    hitl: HitlClient,
    *,
    to: str,
    timeout_seconds: float | None = None,
    key: str | None = None,
    stop_on_decline: bool = False,
) -> CanUseTool:
    """A `can_use_tool` callback that asks `to` about each call. With a `key` (the session's
    id), each request's idempotency key is `key:tool use id`: asked again, found again."""

    async def decide(
        tool_name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResult:
        keyed = None if key is None or not context.tool_use_id else f"{key}:{context.tool_use_id}"
        rules = session_rules(tool_name, context)
        try:
            review = await hitl.review_tool_call(
                tool_name, tool_input, to, timeout_seconds=timeout_seconds, idempotency_key=keyed,
                allow=allowed(rules),
            )  # fmt: skip
        except RequestExpired:
            return PermissionResultDeny(message="Nobody answered in time.")
        except RequestNotAnswered as err:
            return PermissionResultDeny(message=f"Not approved: the request {err.request.status}.")
        except HitlError as err:
            return PermissionResultDeny(message=f"The person could not be asked: {err}")
        return permission(review, tool_name, tool_input, context, stop_on_decline=stop_on_decline)

    return decide


def permission(
    review: ToolCallReview,
    tool_name: str,
    tool_input: Mapping[str, Any],
    context: ToolPermissionContext,
    *,
    stop_on_decline: bool = False,
) -> PermissionResult:
    """The SDK's result for a person's review of a call."""
    if review.approved:
        rules = session_rules(tool_name, context) if review.grant else []
        return PermissionResultAllow(updated_input=dict(tool_input) | review.arguments,
                                     updated_permissions=rules or None)  # fmt: skip
    head = f"Declined by {review.answered_by}" if review.answered_by else "Declined"
    message = f"{head}: {review.reason}" if review.reason else head
    return PermissionResultDeny(message=message, interrupt=stop_on_decline)


def allowed(rules: list[PermissionUpdate]) -> str | None:
    """What "approve and allow" offers the person, in Claude Code's rule syntax (None: there is
    no rule a grant could add, and it is not offered)."""
    values = [value for rule in rules for value in rule.rules or []]
    shown = [f"{v.tool_name}({v.rule_content})" if v.rule_content else v.tool_name for v in values]
    return ", ".join(shown)[:200] or None


def session_rules(tool_name: str, context: ToolPermissionContext) -> list[PermissionUpdate]:
    """What a grant allows for the rest of the session: the rules Claude Code suggested for
    this call (its own "don't ask again"), kept to the session; else the tool as a whole,
    unless that would allow anything (Bash): then nothing, and the next call is asked."""
    suggested = [
        replace(s, destination="session")
        for s in context.suggestions
        if s.type == "addRules" and s.behavior == "allow" and s.rules
    ]
    if suggested or tool_name in UNBOUNDED:
        return suggested
    whole = PermissionRuleValue(tool_name=tool_name)
    return [PermissionUpdate(type="addRules", rules=[whole], behavior="allow",
                             destination="session")]  # fmt: skip
