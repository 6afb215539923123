"""The MCP door over streamable HTTP, end to end: the official `mcp` client (both protocol
generations: the 2026 per-request one and the 2025 handshake) with a bearer token, the door on
the project's aiohttp server, a real store, handler and doors, and a person answering through
the router as a surface would."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import aiohttp
import jsonschema
import mcp_types as types
import pytest
from mcp import Client

from adapters.doors.mcp.server import MAX_BODY
from adapters.doors.mcp.tools import ASK_TOOLS
from bot.doors.service import DoorError
from bot.requests.kinds import Verb
from bot.store.doors import DoorTables
from tests.adapters.doors.mcp.served import (
    BASH,
    PERSON,
    WAIT,
    Served,
    connected,
    editing,
    pressing,
    served,
    text,
)

MODES = ["auto", "legacy"]  # auto settles on the 2026 protocol with this server


async def call(client: Client, tool: str, **arguments: Any) -> types.CallToolResult:
    async with asyncio.timeout(WAIT):
        return await client.call_tool(tool, arguments)


ANSWERS = [
    ("ask_question", {"question": "Which colour?"}, Verb.ANSWER, {"answer": "blue"},
     {"answer": "blue"}),
    ("request_approval", {"action": "Deploy api", "reason": "The fix is in"}, Verb.APPROVE, {},
     {"approved": True}),
    ("select_option", {"question": "Which region?", "options": ["eu", "us", "ap"]}, Verb.CHOOSE,
     {"choice": "2"}, {"selectedIndex": 2, "selectedValue": "ap"}),
    ("collect_data", {"fields": [{"name": "service", "label": "Service"},
                                 {"name": "replicas", "label": "Replicas", "type": "integer"}]},
     Verb.SUBMIT, {"service": "api", "replicas": "3"}, {"service": "api", "replicas": 3}),
    ("confirm_action", {"title": "Drop the cache", "message": "It refills in an hour.",
                        "severity": "warning"}, Verb.CONFIRM, {}, {"confirmed": True}),
]  # fmt: skip


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("tool", "arguments", "verb", "inputs", "answer"), ANSWERS,
                         ids=[a[0] for a in ANSWERS])  # fmt: skip
async def test_each_tool_answered_in_time_returns_the_answer_as_structured_content(
    bridge: Served, mode: str, tool: str, arguments: dict[str, Any], verb: Verb,
    inputs: dict[str, Any], answer: dict[str, Any],
) -> None:  # fmt: skip
    bridge.person.act = pressing(verb, inputs)
    async with connected(bridge, mode) as client:
        result = await call(client, tool, **arguments)
    (view,) = bridge.person.views
    assert view.tool_name == ASK_TOOLS[tool].builtin  # asked with the built-in tool
    expected = {**answer, "request_id": view.request_id, "status": "answered",
                "answered_by": PERSON}  # fmt: skip
    assert not result.is_error
    assert result.structured_content == expected
    assert json.loads(text(result)) == expected
    body = await bridge.doors.get(bridge.name, view.request_id)  # the token's own request
    assert (body["to"], body["answer"]) == ("slack:C1", answer)
    store = cast(DoorTables, bridge.doors.store).store
    audit = await store.list_audit(request_id=view.request_id)
    (created,) = [e for e in audit if e.action == "request.created"]
    assert (created.detail["door"], created.detail["requester"]) == ("mcp", bridge.name)


async def test_the_tools_are_listed_with_the_built_in_tools_arguments(bridge: Served) -> None:
    async with connected(bridge) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert list(listed) == [*ASK_TOOLS, "await_answer", "permission_prompt"]
    select = listed["select_option"].input_schema
    assert select["required"] == ["question", "options"]
    assert {"to", "timeout_seconds", "wait_seconds"} <= set(select["properties"])
    assert "Default: slack:C1." in select["properties"]["to"]["description"]
    assert listed["permission_prompt"].input_schema["required"] == ["tool_name", "input"]


async def test_every_tool_declares_the_schema_of_its_structured_content(bridge: Served) -> None:
    """The official client checks each result that is not an error against its tool's
    `outputSchema` (the other tests' calls pass that check); a result that is an error is
    checked here, and the schemas are not blind."""
    async with connected(bridge) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        bridge.person.act = pressing(Verb.DECLINE, {"reason": "not today"})
        declined = await call(client, "request_approval", action="Deploy", reason="Friday")
    schemas: dict[str, dict[str, Any]] = {}
    for name, tool in listed.items():
        assert tool.output_schema is not None and tool.output_schema["type"] == "object", name
        schemas[name] = schema = tool.output_schema
        jsonschema.Draft202012Validator.check_schema(schema)
    assert declined.is_error
    jsonschema.validate(declined.structured_content, schemas["request_approval"])
    wrong = {"approved": "yes", "request_id": "r1", "status": "answered", "answered_by": None}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(wrong, schemas["request_approval"])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"behavior": "allow"}, schemas["permission_prompt"])


@pytest.mark.parametrize("mode", MODES)
async def test_a_pending_request_is_waited_on_with_await_answer(bridge: Served, mode: str) -> None:
    async with connected(bridge, mode) as client:
        pending = await call(client, "ask_question", question="Ship it?", wait_seconds=0)
        assert not pending.is_error
        data = pending.structured_content
        assert isinstance(data, dict) and data["status"] == "pending"
        request_id = data["request_id"]
        assert data["expires_at"] and "await_answer" in data["message"]
        still = await call(client, "await_answer", request_id=request_id, wait_seconds=0)
        assert still.structured_content == {**data}
        waiting = asyncio.create_task(
            call(client, "await_answer", request_id=request_id, wait_seconds=20)
        )
        view = await bridge.person.posted()
        async with asyncio.timeout(WAIT):  # the await is under way before the person answers
            while bridge.doors.polls.held() != 1:  # noqa: ASYNC110  (a count, not an event)
                await asyncio.sleep(0.01)
        await bridge.person.press(view.request_id, Verb.ANSWER, {"answer": "yes"})
        answered = await waiting
    assert answered.structured_content == {
        "answer": "yes", "request_id": request_id, "status": "answered", "answered_by": PERSON,
    }  # fmt: skip


@pytest.mark.parametrize("mode", MODES)
async def test_a_declined_request_is_a_tool_error_with_the_reason(
    bridge: Served, mode: str
) -> None:
    bridge.person.act = pressing(Verb.DECLINE, {"reason": "not today"})
    async with connected(bridge, mode) as client:
        result = await call(client, "request_approval", action="Deploy", reason="Friday")
    assert result.is_error
    assert text(result) == f"Declined by {PERSON}: not today"
    data = result.structured_content
    assert isinstance(data, dict)
    assert (data["status"], data["reason"], data["answered_by"]) == ("declined", "not today",
                                                                    PERSON)  # fmt: skip


@pytest.mark.slow  # its deadline passes
async def test_an_expired_request_says_expired(bridge: Served) -> None:
    async with connected(bridge) as client:
        result = await call(client, "ask_question", question="Anyone?", timeout_seconds=1,
                            wait_seconds=8)  # fmt: skip
    assert result.is_error
    assert text(result).startswith("Expired: ")
    data = result.structured_content
    assert isinstance(data, dict) and data["status"] == "expired"


# -- permission_prompt --------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_permission_prompt_allows_with_the_edited_input(bridge: Served, mode: str) -> None:
    bridge.person.act = editing({"command": "rm -rf build/tmp", "timeout": "60"})
    async with connected(bridge, mode) as client:
        result = await call(client, "permission_prompt", tool_name="Bash", input=BASH,
                            tool_use_id="toolu_1")  # fmt: skip
    (view,) = bridge.person.views
    assert view.title == "Run Bash?"
    assert not result.is_error
    # An edit changes what it names; the rest of the input stays (a blank field is no edit).
    allowed = {"behavior": "allow", "updatedInput": {
        "command": "rm -rf build/tmp", "description": "Clean the build", "timeout": 60,
    }}  # fmt: skip
    assert json.loads(text(result)) == allowed


async def test_permission_prompt_approved_as_asked_allows_the_input_unchanged(
    bridge: Served,
) -> None:
    bridge.person.act = pressing(Verb.APPROVE)
    async with connected(bridge) as client:
        result = await call(client, "permission_prompt", tool_name="Bash", input=BASH)
    assert json.loads(text(result)) == {"behavior": "allow", "updatedInput": BASH}


@pytest.mark.parametrize("mode", MODES)
async def test_permission_prompt_denies_with_the_reason(bridge: Served, mode: str) -> None:
    bridge.person.act = pressing(Verb.DECLINE, {"reason": "too risky"})
    async with connected(bridge, mode) as client:
        result = await call(client, "permission_prompt", tool_name="Bash", input=BASH)
    assert not result.is_error  # a deny is an answer Claude Code reads, not a failure
    denied = {"behavior": "deny", "message": f"Declined by {PERSON}: too risky"}
    assert json.loads(text(result)) == denied


@pytest.mark.slow  # its deadline passes
async def test_permission_prompt_waits_until_the_request_expires(bridge: Served) -> None:
    async with connected(bridge) as client:
        prompt = asyncio.create_task(client.call_tool(
            "permission_prompt", {"tool_name": "Bash", "input": BASH, "timeout_seconds": 2},
        ))  # fmt: skip
        await bridge.person.posted()
        async with asyncio.timeout(WAIT):
            result = await prompt
    message = json.loads(text(result))["message"]
    assert message.startswith("Expired: ")


@pytest.mark.slow  # a deadline passes
@pytest.mark.parametrize("mode", MODES)
async def test_an_abandoned_permission_prompt_is_withdrawn(bridge: Served, mode: str) -> None:
    async with connected(bridge, mode) as client:
        prompt = asyncio.create_task(
            client.call_tool("permission_prompt", {"tool_name": "Bash", "input": BASH})
        )
        view = await bridge.person.posted()
        prompt.cancel()  # Claude Code interrupted: nobody is left to act on an answer
        with pytest.raises(asyncio.CancelledError):
            await prompt
    withdrawn = await bridge.doors.get(bridge.name, view.request_id, wait=WAIT)
    assert withdrawn["status"] == "cancelled"


# -- refusals -----------------------------------------------------------------------------------


async def test_a_token_sees_its_own_requests_only(bridge: Served) -> None:
    other, _ = await bridge.tokens.create("other-agent")
    async with connected(bridge) as client:
        pending = await call(client, "ask_question", question="Mine?", wait_seconds=0)
    assert isinstance(pending.structured_content, dict)
    request_id = pending.structured_content["request_id"]
    async with connected(bridge, token=other) as client:
        result = await call(client, "await_answer", request_id=request_id, wait_seconds=0)
    assert result.is_error and text(result) == f"no request {request_id}"
    with pytest.raises(DoorError):
        await bridge.doors.get("other-agent", request_id)


@pytest.mark.parametrize(
    ("tool", "arguments", "said"),
    [
        ("ask_question", {"question": "?", "to": "slack:C999"}, "slack:C999 cannot be reached"),
        ("ask_question", {"question": "?", "wait_seconds": 61}, "invalid arguments for "
         "ask_question: wait_seconds: Input should be less than or equal to 60"),
        ("select_option", {"question": "?", "options": []}, "invalid arguments for "
         "select_option: options: List should have at least 1 item"),
        ("ask_question", {"question": "?", "urgent": True}, "invalid arguments for "
         "ask_question: urgent: Extra inputs are not permitted"),
        ("collect_data", {"fields": [{"name": "status", "label": "Status"}]},
         "field names status are taken"),
        ("ask_question", {"question": "?", "timeout_seconds": 0}, "timeout_seconds must be "
         "between 1 and"),
    ],
)  # fmt: skip
async def test_what_cannot_be_asked_is_a_tool_error_naming_the_problem(
    bridge: Served, tool: str, arguments: dict[str, Any], said: str
) -> None:
    async with connected(bridge) as client:
        result = await call(client, tool, **arguments)
    assert result.is_error
    assert said in text(result)
    assert not bridge.person.views  # nothing was posted


async def test_without_a_default_to_is_needed(tmp_path: Path) -> None:
    async with served(tmp_path, default_to=None) as bridge:
        bridge.person.act = pressing(Verb.ANSWER, {"answer": "here"})
        async with connected(bridge) as client:
            missing = await call(client, "ask_question", question="Where?")
            given = await call(client, "ask_question", question="Where?", to="slack:C1")
            denied = await call(client, "permission_prompt", tool_name="Bash", input=BASH)
    assert missing.is_error and "`to` is needed" in text(missing)
    assert not given.is_error
    message = json.loads(text(denied))
    assert message["behavior"] == "deny" and "`to` is needed" in message["message"]


@pytest.mark.parametrize(
    "authorization", [None, "Bearer hitl_wrong", "Basic dXNlcjpwYXNz", "revoked"]
)
async def test_a_request_without_a_valid_token_is_refused_with_one_line(
    bridge: Served, authorization: str | None, caplog: pytest.LogCaptureFixture
) -> None:
    if authorization == "revoked":
        revoked, _ = await bridge.tokens.create("gone")
        await bridge.tokens.revoke("gone")
        authorization = f"Bearer {revoked}"
    headers = {"Authorization": authorization} if authorization else {}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    caplog.set_level(logging.WARNING)
    async with (
        aiohttp.ClientSession() as http,
        http.post(bridge.endpoint, data=body, headers=headers) as response,
    ):
        assert response.status == 401
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
        assert (await response.json())["error"] == "unauthorized"
    lines = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.getMessage() for r in lines] == [
        "MCP: refused a request without a valid token (POST /mcp from 127.0.0.1)"
    ]
    assert lines[0].exc_info is None


async def test_the_token_is_checked_before_the_body_is_read(bridge: Served) -> None:
    sent = asyncio.Event()

    async def stalled() -> AsyncIterator[bytes]:
        yield b'{"jsonrpc": "2.0", '
        sent.set()
        await asyncio.sleep(3600)  # the rest never comes: a server reading it would wait here
        yield b"}"

    async with (
        aiohttp.ClientSession() as http,
        asyncio.timeout(WAIT),
        http.post(bridge.endpoint, data=stalled()) as response,
    ):
        assert sent.is_set()
        assert response.status == 401


async def test_get_and_delete_are_not_allowed_once_authenticated(bridge: Served) -> None:
    async with aiohttp.ClientSession() as http:
        for method in ("GET", "DELETE"):
            async with http.request(method, bridge.endpoint) as refused:
                assert refused.status == 401
            authorized = {"Authorization": f"Bearer {bridge.token}"}
            async with http.request(method, bridge.endpoint, headers=authorized) as response:
                assert (response.status, response.headers["Allow"]) == (405, "POST")


async def test_a_body_over_the_limit_is_refused(bridge: Served) -> None:
    big = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                      "params": {"pad": "x" * MAX_BODY}})  # fmt: skip
    headers = {"Authorization": f"Bearer {bridge.token}", "Content-Type": "application/json",
               "Accept": "application/json, text/event-stream"}  # fmt: skip
    async with (
        aiohttp.ClientSession() as http,
        http.post(bridge.endpoint, data=io.BytesIO(big.encode()), headers=headers) as response,
    ):
        assert response.status == 413
