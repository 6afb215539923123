"""`hitl-bridge hook pre-tool-use` against a server that answers garbage (a tiny aiohttp server
on loopback: its GET of /mcp answers as the bridge's does, its POST not): every case is one
clear line, no traceback logged or printed, and the decision stays "ask"."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest
from aiohttp import web

from adapters.doors.mcp import hook
from tests.adapters.doors.mcp.test_hook import HOOK_INPUT, run_hook

Answer = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _garbage(text: str, content_type: str, status: int = 200) -> Answer:
    async def answer(request: web.Request) -> web.StreamResponse:
        return web.Response(text=text, content_type=content_type, status=status)

    return answer


async def _wrong_result(request: web.Request) -> web.StreamResponse:
    """JSON-RPC, answering the request's id, but no result the call could take."""
    asked = await request.json()
    return web.json_response({"jsonrpc": "2.0", "id": asked["id"], "result": {"tools": 3}})


@asynccontextmanager
async def garbage_server(answer: Answer) -> AsyncIterator[str]:
    """A server on 127.0.0.1 whose POST /mcp is `answer`; its URL."""
    stop = asyncio.Event()

    async def route(request: web.Request) -> web.StreamResponse:
        if request.method == "GET":  # the hook's check: the bridge answers 405, token taken
            return web.json_response({"error": "method_not_allowed"}, status=405)
        await request.read()
        if answer is _stall:
            await stop.wait()
        return await answer(request)

    app = web.Application()
    app.router.add_route("*", "/mcp", route)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    try:
        yield f"http://{host}:{port}"
    finally:
        stop.set()
        await runner.cleanup()


async def _stall(request: web.Request) -> web.StreamResponse:
    return web.Response(text="too late")


CASES = [
    ("html", _garbage("<html>hi</html>", "text/html"),
     "the bridge's answer is not MCP: Unexpected content type: text/html; charset=utf-8"),
    ("broken JSON", _garbage("{not json", "application/json"),
     "the bridge's answer is not MCP: Failed to parse JSON response"),
    ("JSON, not JSON-RPC", _garbage('{"foo": 1}', "application/json"),
     "the bridge's answer is not MCP: Failed to parse JSON response"),
    ("broken SSE", _garbage("event: message\ndata: {garbage\n\n", "text/event-stream"),
     "the bridge's answer is not MCP: Failed to parse SSE message"),
    ("a result of the wrong shape", _wrong_result,
     "the bridge's answer is not MCP: a result of the wrong shape"),
    ("500", _garbage("boom", "text/plain", 500), "the bridge answered HTTP 500"),
    ("timeout", _stall, "the bridge gave no answer in time"),
]  # fmt: skip


@pytest.mark.parametrize(("answer", "line"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
async def test_garbage_from_the_server_is_one_line_and_the_decision_stays_ask(
    answer: Answer, line: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hook, "MARGIN", 0.5)  # the wait past the person's time (the timeout case)
    caplog.set_level(logging.WARNING)  # as the CLI logs, `-v` not given
    async with garbage_server(answer) as url:
        output, said = await hook.pre_tool_use(
            json.dumps(HOOK_INPUT), {}, to=None, timeout=0.5, url=url, token="hitl_x"
        )
    assert said == line
    decided = output["hookSpecificOutput"]
    assert decided["permissionDecision"] == "ask"
    assert decided["permissionDecisionReason"] == f"hitl-bridge could not ask a person: {line}"
    assert not [r for r in caplog.records if r.exc_info or r.name.startswith("mcp")]


async def test_a_refused_connection_is_one_line() -> None:
    async with garbage_server(_stall) as url:
        pass  # stopped: nothing listens there now
    output, said = await hook.pre_tool_use(
        json.dumps(HOOK_INPUT), {}, to=None, timeout=1.0, url=url, token="hitl_x"
    )
    assert said is not None and said.startswith(f"cannot reach the bridge at {url}/mcp: ")
    assert "\n" not in said
    assert output["hookSpecificOutput"]["permissionDecision"] == "ask"


def test_the_libraries_log_lines_are_back_after_the_hook() -> None:
    mcp_log = logging.getLogger("mcp")
    before = mcp_log.level
    with hook.quiet(hook.LIBRARIES):
        assert not mcp_log.isEnabledFor(logging.CRITICAL)
    assert mcp_log.level == before


@pytest.mark.subprocess
async def test_the_hook_process_prints_one_line_on_stderr_and_no_traceback() -> None:
    async with garbage_server(_garbage("{not json", "application/json")) as url:
        status, output, said = await run_hook({"HITL_URL": url, "HITL_TOKEN": "hitl_x"})
    assert status == 0
    assert output["hookSpecificOutput"]["permissionDecision"] == "ask"
    assert said.splitlines() == [
        "hitl-bridge hook: the bridge's answer is not MCP: Failed to parse JSON response"
    ]
