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
- Anything else (the bridge unreachable, a refused token, an answer that is not MCP or an
  HTTP error, no answer in time, the request expired or undelivered, input that is not a
  hook's): "ask", so Claude Code falls back to its own prompt, with the reason, and one line
  on stderr (the SDK's own log lines kept off it unless `-v`). Never a traceback, always exit
  status 0.

"Approve and allow for this session" is not offered: a PreToolUse hook cannot add a rule to
Claude Code's session (permission_prompt can: its `updatedPermissions`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from adapters.serve.http_limits import one_line

HOOK_EVENT = "PreToolUse"
DEFAULT_TIMEOUT = 300.0  # seconds the person has to answer (keep the hook's own timeout above)
MARGIN = 130.0  # seconds past the request's expiry the hook waits for the bridge to say so
VIA = "hitl-bridge"
LIBRARIES = ("mcp", "httpx2", "httpx")  # their log lines stay off the hook's stderr (`quiet`)
# JSON-RPC codes the SDK's client makes up for an answer it cannot read (PARSE_ERROR,
# INVALID_REQUEST for a wrong content type, INTERNAL_ERROR for an HTTP error status).
TRANSPORT_CODES = (-32700, -32600, -32603)
_VALIDATION = re.compile(r": \d+ validation errors? for .*", re.DOTALL)  # pydantic's detail


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
    HookFailure if there is none (unreachable, refused, the call failed, an answer that is
    not MCP), saying why in one line."""
    # The MCP SDK is imported here: `hitl-bridge --help` must not pay for it.
    import mcp_types as types
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    from adapters.doors.mcp.stdio import CLIENT_INFO, check_bridge, endpoint_of
    from adapters.doors.mcp.tools import PERMISSION_PROMPT

    endpoint = endpoint_of(url)
    arguments: dict[str, Any] = {"tool_name": call.tool_name, "input": call.tool_input,
                                 "timeout_seconds": timeout, "grant": False}  # fmt: skip
    if call.tool_use_id:
        arguments["tool_use_id"] = call.tool_use_id
    if to:
        arguments["to"] = to
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    statuses = Statuses()
    http.event_hooks = {"response": [statuses.note]}
    try:
        with quiet(LIBRARIES):
            async with http:
                await check_bridge(http, endpoint)
                transport = streamable_http_client(endpoint, http_client=http)
                async with (
                    asyncio.timeout(timeout + MARGIN),
                    Client(transport, cache=None, client_info=CLIENT_INFO) as client,
                ):
                    called = await client.call_tool(PERMISSION_PROMPT, arguments)
    except Exception as err:
        raise HookFailure(failure_line(err, statuses.last)) from None
    structured = called.structured_content
    if called.is_error or not isinstance(structured, dict):
        said = [b.text for b in called.content if isinstance(b, types.TextContent)]
        raise HookFailure(one_line(" ".join(said), 300) or "permission_prompt failed")
    return structured, dict(called.meta or {})


class Statuses:
    """The HTTP status of the bridge's last answer to a POST: the SDK's errors do not say it."""

    def __init__(self) -> None:
        self.last: int | None = None

    async def note(self, response: Any) -> None:
        if response.request.method == "POST":
            self.last = response.status_code


@contextlib.contextmanager
def quiet(names: tuple[str, ...]) -> Iterator[None]:
    """The libraries' own log lines (the SDK logs a traceback for an answer it cannot parse)
    kept off stderr, which the hook's one line has to itself; `-v` shows them."""
    loggers = [logging.getLogger(name) for name in names]
    before = [logger.level for logger in loggers]
    if not logging.getLogger().isEnabledFor(logging.DEBUG):
        for logger in loggers:
            logger.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for logger, level in zip(loggers, before, strict=True):
            logger.setLevel(level)


def failure_line(err: BaseException, status: int | None = None) -> str:
    """One line for whatever went wrong (an exception group: its first failure); `status`, the
    HTTP status of the bridge's last answer, if any."""
    from pydantic import ValidationError

    from adapters.serve.startup import StartupError, explain
    from bot import ConfigurationError

    while isinstance(err, BaseExceptionGroup) and err.exceptions:
        err = err.exceptions[0]
    if isinstance(err, HookFailure):
        return str(err)
    if isinstance(err, TimeoutError):
        return "the bridge gave no answer in time"
    if isinstance(err, StartupError | ConfigurationError):
        return one_line(explain(err).line)
    if status is not None and status >= 400 and not _bridge_said(err):
        return f"the bridge answered HTTP {status}"
    if isinstance(err, ValidationError):  # JSON-RPC, but not the result a call returns
        return "the bridge's answer is not MCP: a result of the wrong shape"
    if _bridge_said(err) or _mcp_error(err):
        said = _VALIDATION.sub("", str(err)) or type(err).__name__
        if getattr(err, "code", None) in TRANSPORT_CODES:
            return f"the bridge's answer is not MCP: {one_line(said, 200)}"
        return f"the bridge refused the call: {one_line(said, 200)}"
    first = str(err).splitlines()[0] if str(err) else ""
    return one_line(f"{type(err).__name__}: {first}" if first else type(err).__name__, 300)


def _mcp_error(err: BaseException) -> bool:
    """Whether `err` is the SDK's MCPError (only once the SDK is imported can it be one)."""
    exceptions = sys.modules.get("mcp.shared.exceptions")
    return exceptions is not None and isinstance(err, exceptions.MCPError)


def _bridge_said(err: BaseException) -> bool:
    """An MCPError the bridge sent (not one the SDK made up for an answer it could not read)."""
    return _mcp_error(err) and getattr(err, "code", None) not in TRANSPORT_CODES


async def pre_tool_use(
    stdin: str, environ: Mapping[str, str], *, to: str | None, timeout: float,
    url: str | None = None, token: str | None = None,
) -> tuple[dict[str, Any], str | None]:  # fmt: skip
    """The hook's output for `stdin`, and the line for stderr when it had to say "ask"."""
    from adapters.doors.mcp.stdio import proxy_target

    try:
        call = read_call(stdin)
        target = proxy_target(url, token, environ, command="hook pre-tool-use")
        who = to or environ.get("HITL_TO") or None
        result, meta = await ask_bridge(*target, call, to=who, timeout=timeout)
    except Exception as err:  # a HookFailure, or configuration (no URL or token)
        why = failure_line(err)
        return ask_output(why), why
    output = decision_output(call, result, meta)
    asked = output["hookSpecificOutput"]["permissionDecision"] == "ask"
    return output, output["hookSpecificOutput"]["permissionDecisionReason"] if asked else None
