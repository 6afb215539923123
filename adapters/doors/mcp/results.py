"""What a request becomes as an MCP tool's result: an asking tool's (or await_answer's), and
Claude Code's permission answer (adapters/doors/mcp/tools.py calls these)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import mcp_types as types

from adapters.doors.mcp.claude_code import SessionRule
from bot.doors.service import RequestBody
from bot.gates import approvals
from bot.requests import wording


def result(
    data: dict[str, Any], *, error: bool = False, text: str | None = None
) -> types.CallToolResult:
    """A result with `data` as structured content and, for clients that read text only, as
    JSON text (or `text`)."""
    shown = text if text is not None else json.dumps(data, ensure_ascii=False)
    return types.CallToolResult(
        content=[types.TextContent(text=shown)], structured_content=data, is_error=error
    )


def refusal(message: str) -> types.CallToolResult:
    """A call that asked nothing: a tool error saying why."""
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


def answer_result(body: RequestBody) -> types.CallToolResult:
    """A request as an asking tool (or await_answer) returns it."""
    status = body["status"]
    if status == "pending":
        return result({
            "status": "pending", "request_id": body["id"], "expires_at": body.get("expires_at"),
            "message": "No answer yet: call await_answer with this request_id to wait on.",
        })  # fmt: skip
    if status == "answered":
        answer = body.get("answer")
        shown = dict(answer) if isinstance(answer, dict) else {"answer": answer}
        shown.update(request_id=body["id"], status=status, answered_by=body.get("answered_by"))
        return result(shown)
    data = {"status": status, "request_id": body["id"], "reason": body.get("reason"),
            "answered_by": body.get("answered_by")}  # fmt: skip
    return result(data, error=True, text=unanswered(body))


def unanswered(body: RequestBody) -> str:
    """A settled request without an answer, as one sentence."""
    status, reason, by = body["status"], body.get("reason"), body.get("answered_by")
    head = f"Declined by {by}" if status == "declined" and by else status.capitalize()
    return f"{head}: {reason}" if reason else head


def permission(
    body: RequestBody, asked: Mapping[str, Any], rule: SessionRule | None = None
) -> dict[str, Any]:
    """A permission request's outcome in Claude Code's shape. An edit changes only what it
    names: the call's other input stays (Claude Code runs `updatedInput` as the whole input).
    "Approve and allow" adds `rule` to Claude Code's session (`updatedPermissions`); "decline
    and stop", offered by the request, interrupts it (`interrupt`)."""
    if body["status"] == "answered":
        try:
            decision = approvals.read_decision(body.get("answer"))
        except ValueError as err:
            return {"behavior": "deny", "message": f"The answer could not be read: {err}"}
        edited = dict(asked) | (decision.arguments or {})
        allowed: dict[str, Any] = {"behavior": "allow", "updatedInput": edited}
        if decision.grant and rule is not None:
            allowed["updatedPermissions"] = [rule.update()]
        return allowed
    if body["status"] == "pending":
        return {"behavior": "deny", "message": "Nobody answered in time."}
    offered = approvals.read_request(_mapping(body.get("arguments"))).stop
    own = wording.stopped(body.get("reason")) if body["status"] == "declined" else None
    if offered and own is not None:
        by = body.get("answered_by")
        said = f"Declined by {by}, who asked to stop" if by else "Declined, with a request to stop"
        return {"behavior": "deny", "message": f"{said}: {own}" if own else said,
                "interrupt": True}  # fmt: skip
    return {"behavior": "deny", "message": unanswered(body)}


def permission_meta(body: RequestBody) -> dict[str, Any]:
    """What a permission result says of its request beside Claude Code's shape (`_meta`,
    which Claude Code does not read): the PreToolUse hook tells an expiry from a decline."""
    return {"hitl": {"request_id": body.get("id"), "status": body.get("status"),
                     "answered_by": body.get("answered_by")}}  # fmt: skip


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
