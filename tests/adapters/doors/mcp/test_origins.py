"""The MCP door's `Origin` check (the 2025-11-25 streamable HTTP transport): no `Origin` is
served, an allowed one is served, any other present one is 403 before the token or the body
is read; and HITL_ALLOWED_ORIGINS, defaulting to HITL_PUBLIC_URL's origin."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from pydantic import ValidationError

from adapters.doors.mcp.origins import allowed_origins, origin_of
from adapters.serve.settings import Settings, settings_problem
from tests.adapters.doors.api.test_api import start
from tests.adapters.doors.mcp.served import WAIT, Served, connected, served
from tests.adapters.surfaces.slack.conftest import StartEnv, start_env

__all__ = ["start_env"]

ALLOWED = "https://hitl.example.com"
LIST = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})


@pytest.fixture
async def guarded(tmp_path: Path) -> AsyncIterator[Served]:
    async with served(tmp_path, origins=allowed_origins([ALLOWED], None)) as running:
        yield running


async def test_a_client_that_sends_no_origin_is_served(guarded: Served) -> None:
    async with connected(guarded) as client:
        assert (await client.list_tools()).tools


async def test_an_allowed_origin_is_served(guarded: Served) -> None:
    async with connected(guarded, headers={"Origin": "HTTPS://hitl.example.com:443"}) as client:
        assert (await client.list_tools()).tools


@pytest.mark.parametrize("origin", ["http://evil.example.com", "https://hitl.example.com:8443",
                                    "http://hitl.example.com", "null", "not a url"])  # fmt: skip
async def test_any_other_origin_is_refused_with_403_even_with_a_valid_token(
    guarded: Served, origin: str
) -> None:
    headers = {"Authorization": f"Bearer {guarded.token}", "Origin": origin,
               "Content-Type": "application/json",
               "Accept": "application/json, text/event-stream"}  # fmt: skip
    async with (
        aiohttp.ClientSession() as http,
        http.post(guarded.endpoint, data=LIST, headers=headers) as response,
    ):
        assert response.status == 403
        refused = await response.json()
    assert refused["error"] == "forbidden_origin"
    assert "HITL_ALLOWED_ORIGINS" in refused["message"] and "\n" not in refused["message"]


async def test_the_origin_is_checked_before_the_body_is_read(guarded: Served) -> None:
    sent = asyncio.Event()

    async def stalled() -> AsyncIterator[bytes]:
        yield b'{"jsonrpc": "2.0", '
        sent.set()
        await asyncio.sleep(3600)  # the rest never comes: a server reading it would wait here
        yield b"}"

    headers = {"Authorization": f"Bearer {guarded.token}", "Origin": "http://evil.example.com"}
    async with (
        aiohttp.ClientSession() as http,
        asyncio.timeout(WAIT),
        http.post(guarded.endpoint, data=stalled(), headers=headers) as response,
    ):
        assert sent.is_set()
        assert response.status == 403


async def test_without_allowed_origins_every_present_origin_is_refused(bridge: Served) -> None:
    headers = {"Authorization": f"Bearer {bridge.token}", "Origin": bridge.url}
    async with (
        aiohttp.ClientSession() as http,
        http.post(bridge.endpoint, data=LIST, headers=headers) as response,
    ):
        assert response.status == 403  # not even the server's own: Host can be rebound


@pytest.mark.parametrize(
    ("settings", "allowed", "refused"),
    [
        ({"HITL_PUBLIC_URL": "https://hitl.example.com/"}, ALLOWED, "http://evil.example.com"),
        ({"HITL_PUBLIC_URL": "https://hitl.example.com", "HITL_ALLOWED_ORIGINS": "http://a.test"},
         "http://a.test", ALLOWED),
    ],
    ids=["the public URL's origin by default", "HITL_ALLOWED_ORIGINS instead"],
)  # fmt: skip
async def test_serve_takes_its_origins_from_the_settings(
    start_env: StartEnv, settings: dict[str, str], allowed: str, refused: str
) -> None:
    env, api = await start(start_env, **settings)
    url = f"{env.server.url}/mcp"
    headers = {"Authorization": f"Bearer {api.token}", "Content-Type": "application/json",
               "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2025-11-25"}  # fmt: skip
    for origin, status in ((allowed, 200), (refused, 403)):
        async with env.http.post(url, data=LIST, headers={**headers, "Origin": origin}) as response:
            assert response.status == status, origin


def test_the_default_is_the_public_urls_origin() -> None:
    assert allowed_origins([], "https://hitl.example.com/base/") == {ALLOWED}
    assert allowed_origins([], None) == frozenset()
    assert allowed_origins([], "ftp://nowhere") == frozenset()
    assert allowed_origins(["http://a.test:8080"], "https://hitl.example.com") == {
        "http://a.test:8080"
    }


def test_origins_are_compared_normalised() -> None:
    assert origin_of("HTTPS://Hitl.Example.com:443") == ALLOWED
    assert origin_of("http://[::1]:3000") == "http://[::1]:3000"
    for bad in ("hitl.example.com", "ftp://x", "https://user:pw@x", "http://x:99999"):
        with pytest.raises(ValueError, match="not"):
            origin_of(bad)


def test_the_setting_is_a_comma_list_of_origins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HITL_ALLOWED_ORIGINS", "https://a.example, http://localhost:5173")
    assert Settings(_env_file=None).allowed_origins == {
        "https://a.example",
        "http://localhost:5173",
    }
    monkeypatch.setenv("HITL_ALLOWED_ORIGINS", "https://a.example,a.example")
    with pytest.raises(ValidationError) as raised:
        Settings(_env_file=None)
    problem = settings_problem(raised.value)
    assert "HITL_ALLOWED_ORIGINS" in problem and "'a.example' is not an http(s) origin" in problem
