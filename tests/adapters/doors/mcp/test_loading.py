"""adapters/doors/mcp/loading.py: /mcp is mounted at once and its SDK loaded after; a call made
before the SDK is in waits for it, and a door that cannot start answers 503 in one line."""

from __future__ import annotations

import logging
from pathlib import Path

import aiohttp
import pytest

from adapters.doors.mcp import loading
from tests.adapters.doors.mcp.served import connected, served


async def test_a_call_made_as_the_door_starts_is_answered(tmp_path: Path) -> None:
    async with served(tmp_path) as bridge, connected(bridge) as client:
        tools = await client.list_tools()
    assert "ask_question" in {tool.name for tool in tools.tools}


async def test_a_door_that_cannot_load_answers_503_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(loading, "SERVER_MODULE", "adapters.doors.mcp.no_such_module")
    caplog.set_level(logging.INFO, logger=loading.__name__)
    async with served(tmp_path) as bridge, aiohttp.ClientSession() as http:
        for _ in range(2):
            async with http.post(
                f"{bridge.url}/mcp", json={}, headers={"Authorization": f"Bearer {bridge.token}"}
            ) as response:
                assert response.status == 503
                assert (await response.json())["error"] == "unavailable"
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    said = "No module named 'adapters.doors.mcp.no_such_module'"
    assert errors == [f"MCP: the door did not start, /mcp answers 503: {said}"]
