"""`hitl-bridge hook pre-tool-use`: Claude Code's PreToolUse hook, answered by a person.

Claude Code runs the hook before a tool call, with the call as JSON on stdin (`{"session_id",
"tool_name", "tool_input", "hook_event_name": "PreToolUse", ...}`), and reads its decision from
stdout: `{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow" |
"deny" | "ask", "permissionDecisionReason": ..., "updatedInput": ...}}`. The hook asks with the
very request `permission_prompt` makes: it calls that tool on the running bridge's /mcp
(HITL_URL, HITL_TOKEN), so the person sees the same approval gate (Approve / Edit / Decline,
and "decline and stop"), answered the same way, withdrawn the same way if the hook is stopped
(its connection closes). Who is asked: `--to`, else HITL_TO, else the bridge's
HITL_MCP_DEFAULT_TO (the call then names nobody).

- Approved: "allow", with `updatedInput` (the whole input, as edited) when the person edited it.
- Declined: "deny" with their reason, which Claude reads. "Decline and stop" also says
  `"continue": false` (Claude Code stops the turn; `stopReason` shows why).
- Anything else (the bridge unreachable, a refused token, the request expired or undelivered,
  input that is not a hook's): "ask", so Claude Code falls back to its own prompt, with the
  reason, and one line on stderr. Never a traceback, always exit status 0.

"Approve and allow for this session" is not offered: a PreToolUse hook cannot add a rule to
Claude Code's session (permission_prompt can: its `updatedPermissions`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

HOOK_EVENT = "PreToolUse"
DEFAULT_TIMEOUT = 300.0  # seconds the person has to answer (keep the hook's own timeout above)
MARGIN = 130.0  # seconds past the request's expiry the hook waits for the bridge to say so
VIA = "hitl-bridge"


class HookFailure(Exception):
    """No decision from a person: `str(err)` is the one line why (the hook then says "ask")."""


@dataclass(frozen=True, slots=True)
class HookCall:
    """The tool call Claude Code's hook input describes."""

    tool_name: str
    tool_input: dict[str, Any]
    tool_use_id: str | None = None


def read_call(text: str) -> HookCall:
    """The call of a PreToolUse hook's stdin; HookFailure saying what is wrong with it."""
    try:
        data = json.loads(text)
    except ValueError:
        raise HookFailure("the hook's input is not JSON") from None
    if not isinstance(data, dict):
        raise HookFailure("the hook's input is not a JSON object")
    event = data.get("hook_event_name")
    if event is not None and event != HOOK_EVENT:
        raise HookFailure(f"this hook answers {HOOK_EVENT}, not {str(event)[:40]}")
    name, tool_input = data.get("tool_name"), data.get("tool_input")
    if not isinstance(name, str) or not name:
        raise HookFailure("the hook's input names no tool_name")
    if not isinstance(tool_input, dict):
        raise HookFailure("the hook's input has no tool_input object")
    use_id = data.get("tool_use_id")
    return HookCall(name, tool_input, use_id if isinstance(use_id, str) and use_id else None)


# -- the decision, in the hook's format ---------------------------------------------------------


def _output(decision: str, reason: str, **more: Any) -> dict[str, Any]:
    specific = {"hookEventName": HOOK_EVENT, "permissionDecision": decision,
                "permissionDecisionReason": reason, **more}  # fmt: skip
    return {"hookSpecificOutput": specific}


def ask_output(why: str) -> dict[str, Any]:
    """Claude Code's own prompt decides, told why the person could not."""
    return _output("ask", f"{VIA} could not ask a person: {why}")


def decision_output(
    call: HookCall, result: Mapping[str, Any], meta: Mapping[str, Any]
) -> dict[str, Any]:
    """permission_prompt's result (`{"behavior", ...}`, with the request's status in `meta`)
    as the hook's decision: allow and deny as the person said, "ask" for every other end."""
    hitl = meta.get("hitl")
    status = hitl.get("status") if isinstance(hitl, Mapping) else None
    by = hitl.get("answered_by") if isinstance(hitl, Mapping) else None
    who = f" by {by}" if isinstance(by, str) and by else ""
    behavior = result.get("behavior")
    if behavior == "allow" and status == "answered":
        updated = result.get("updatedInput")
        if isinstance(updated, dict) and updated != call.tool_input:
            return _output("allow", f"Approved{who} with edits, through {VIA}",
                           updatedInput=updated)  # fmt: skip
        return _output("allow", f"Approved{who} through {VIA}")
    message = str(result.get("message") or "no reason given")
    if behavior == "deny" and status == "declined":
        denied = _output("deny", message)
        if result.get("interrupt") is True:
            denied.update({"continue": False, "stopReason": message})
        return denied
    return ask_output(message if status else f"the bridge said: {message}")


# -- asking the bridge ------------------------------------------------------------------------


async def ask_bridge(
    url: str, token: str, call: HookCall, *, to: str | None, timeout: float
) -> tuple[dict[str, Any], dict[str, Any]]:
    """permission_prompt's structured result and `_meta`, called on the bridge at `url`;
    HookFailure if there is none (unreachable, refused, the call failed)."""
    # The MCP SDK is imported here: `hitl-bridge --help` must not pay for it.
    import mcp_types as types
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    from adapters.mcp.stdio import CLIENT_INFO, check_bridge, endpoint_of
    from adapters.mcp.tools import PERMISSION_PROMPT

    endpoint = endpoint_of(url)
    arguments: dict[str, Any] = {"tool_name": call.tool_name, "input": call.tool_input,
                                 "timeout_seconds": timeout, "grant": False}  # fmt: skip
    if call.tool_use_id:
        arguments["tool_use_id"] = call.tool_use_id
    if to:
        arguments["to"] = to
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with http:
        await check_bridge(http, endpoint)
        transport = streamable_http_client(endpoint, http_client=http)
        async with asyncio.timeout(timeout + MARGIN):
            async with Client(transport, cache=None, client_info=CLIENT_INFO) as client:
                called = await client.call_tool(PERMISSION_PROMPT, arguments)
    structured = called.structured_content
    if called.is_error or not isinstance(structured, dict):
        said = [b.text for b in called.content if isinstance(b, types.TextContent)]
        raise HookFailure(" ".join(said)[:300] or "permission_prompt failed")
    return structured, dict(called.meta or {})


def failure_line(err: BaseException) -> str:
    """One line for whatever went wrong (an exception group: its first failure)."""
    from adapters.http_limits import one_line
    from adapters.startup import explain

    while isinstance(err, BaseExceptionGroup) and err.exceptions:
        err = err.exceptions[0]
    if isinstance(err, HookFailure):
        return str(err)
    if isinstance(err, TimeoutError):
        return "the bridge gave no answer in time"
    line = explain(err).line if isinstance(err, Exception) else ""
    return one_line(line) or type(err).__name__


async def pre_tool_use(
    stdin: str, environ: Mapping[str, str], *, to: str | None, timeout: float,
    url: str | None = None, token: str | None = None,
) -> tuple[dict[str, Any], str | None]:  # fmt: skip
    """The hook's output for `stdin`, and the line for stderr when it had to say "ask"."""
    from adapters.mcp.stdio import proxy_target

    try:
        call = read_call(stdin)
        target = proxy_target(url, token, environ, command="hook pre-tool-use")
        who = to or environ.get("HITL_TO") or None
        result, meta = await ask_bridge(*target, call, to=who, timeout=timeout)
    except Exception as err:
        why = failure_line(err)
        return ask_output(why), why
    output = decision_output(call, result, meta)
    asked = output["hookSpecificOutput"]["permissionDecision"] == "ask"
    return output, output["hookSpecificOutput"]["permissionDecisionReason"] if asked else None
