"""Bot Framework tokens on /api/messages, through the real server over HTTP on loopback.

The service runs with Teams credentials; its Teams cloud is the public one with the OpenID
metadata (so the signing keys) on `FakeBotFrameworkKeys`, registered under the SDK's own
`CLOUD` names. Forged tokens are refused with 401 and one rate-limited WARNING line, never a
traceback; a token whose header already disqualifies it causes no fetch of the keys; however
many unknown key ids arrive, one fetch; the body is read only after the token is verified.
Waiting is event-driven; nothing asserts on time.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp
import pytest
from microsoft_teams.api.auth import cloud_environment

from adapters.surfaces.teams import tokens
from tests.adapters.surfaces.teams.conftest import Env, StartEnv, invoke_activity
from tests.fakes.bot_framework_keys import FakeBotFrameworkKeys, new_key

CLIENT_ID = "22222222-3333-4444-5555-666666666666"
CLOUD = "hitl-loopback-test"
WAIT = 5.0
GUESSED_SECRET = "a-guessed-secret-long-enough-for-hs256"
UNKNOWN_REQUEST = "0123456789abcdef01234567"  # an action answered without any outbound call
NO_LONGER_KNOWN = "This request is no longer known."
REFUSALS = "adapters.surfaces.teams.http_adapter"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@pytest.fixture
async def keys() -> AsyncIterator[FakeBotFrameworkKeys]:
    async with FakeBotFrameworkKeys(CLIENT_ID) as keys:
        yield keys


@pytest.fixture
async def start_verified(
    keys: FakeBotFrameworkKeys, start_env: StartEnv, monkeypatch: pytest.MonkeyPatch
) -> StartEnv:
    """Start the service with credentials, its Teams cloud's keys on `keys`."""
    monkeypatch.setitem(cloud_environment._CLOUD_ENVIRONMENTS, CLOUD, keys.cloud)

    async def start(**overrides: Any) -> Env:
        monkeypatch.setenv("CLOUD", CLOUD)  # after start_env cleared the environment
        return await start_env(
            HITL_TEAMS_ALLOW_UNAUTHENTICATED=False, TEAMS_CLIENT_ID=CLIENT_ID,
            TEAMS_CLIENT_SECRET="secret", TEAMS_TENANT_ID="tenant", **overrides,
        )  # fmt: skip

    return start


@pytest.fixture
async def verified(start_verified: StartEnv) -> Env:
    return await start_verified()


async def post_raw(env: Env, body: Any, headers: dict[str, str] | None = None) -> int:
    """POST raw bytes (or a chunked async iterable) to /api/messages: the status."""
    all_headers = {"Content-Type": "application/json", **(headers or {})}
    async with env.http.post(env.messages_url, data=body, headers=all_headers) as response:
        await response.read()
        return response.status


def check_log(caplog: pytest.LogCaptureFixture, secrets: list[str]) -> list[str]:
    """No traceback, no ERROR, no token's content in any line; the refusal lines."""
    for record in caplog.records:
        assert record.exc_info is None, record.getMessage()
        assert record.levelno < logging.ERROR, record.getMessage()
        message = record.getMessage()
        for secret in secrets:
            assert secret not in message
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == REFUSALS and r.levelno == logging.WARNING
    ]


def signatures(headers: Mapping[str, str | None]) -> list[str]:
    """The parts of each token that only the token has (its payload and signature)."""
    parts = []
    for value in headers.values():
        token = (value or "").removeprefix("Bearer ")
        parts += [part for part in token.split(".")[1:] if len(part) > 8]
    return parts


async def test_forged_tokens_are_refused_and_only_plausible_ones_fetch_keys(
    verified: Env, keys: FakeBotFrameworkKeys, caplog: pytest.LogCaptureFixture
) -> None:
    env = verified
    url = env.connector.service_url
    now = int(time.time())
    activity = invoke_activity(url, "hitl_refresh", UNKNOWN_REQUEST)
    refused_without_fetch: dict[str, str | None] = {
        "no header": None,
        "basic": "Basic eDp5",
        "garbage": "Bearer garbage",
        "three garbage parts": "Bearer a.b.c",
        "alg none": f"Bearer {keys.token(url, algorithm='none')}",
        "HS256, guessed secret": f"Bearer {keys.token(url, key=GUESSED_SECRET, algorithm='HS256')}",
        "RS512": f"Bearer {keys.token(url, algorithm='RS512')}",
        "no kid": f"Bearer {keys.token(url, kid='')}",
        "nested header": f"Bearer {b64(b'[' * 5000)}.e30.c2ln",
        "huge": "Bearer " + "A" * 8_100,  # aiohttp refuses header lines over 8190 bytes
    }
    refused_after_fetch: dict[str, str | None] = {
        "unknown key, known kid": f"Bearer {keys.token(url, key=new_key())}",
        "unknown kid": f"Bearer {keys.token(url, kid='nobody-knows')}",
        "expired": f"Bearer {keys.token(url, exp=now - 3600, iat=now - 4000, nbf=now - 4000)}",
        "wrong audience": f"Bearer {keys.token(url, aud='someone-else')}",
        "wrong issuer": f"Bearer {keys.token(url, iss='https://sts.example.com/')}",
        "no expiry": f"Bearer {keys.token(url, exp=None)}",
        "another service": f"Bearer {keys.token('https://elsewhere.example/')}",
    }

    async def status(authorization: str | None) -> int:
        headers = {"Authorization": authorization} if authorization is not None else {}
        return (await env.post(activity, headers))[0]

    with caplog.at_level(logging.INFO):
        for name, authorization in refused_without_fetch.items():
            assert (name, await status(authorization)) == (name, 401)
        assert keys.fetches == 0  # no key fetch for a token its header disqualifies
        for name, authorization in refused_after_fetch.items():
            assert (name, await status(authorization)) == (name, 401)
        assert keys.fetches == 1  # the first unknown kid fetched; the rest used the cache

        status_code, body = await env.post(activity, bearer(keys.token(url)))
        assert status_code == 200 and body["value"] == NO_LONGER_KNOWN
    assert keys.fetches == 1
    assert env.connector.calls == [] and env.requests == []

    forged = {**refused_without_fetch, **refused_after_fetch}
    lines = check_log(caplog, signatures(forged))
    assert 1 <= len(lines) < len(forged)  # rate-limited
    assert "(401): no bearer token" in lines[0]


async def test_a_hundred_unknown_kids_fetch_the_keys_once(
    verified: Env, keys: FakeBotFrameworkKeys, caplog: pytest.LogCaptureFixture
) -> None:
    env = verified
    url = env.connector.service_url
    activity = invoke_activity(url, "hitl_refresh", UNKNOWN_REQUEST)
    forged = [bearer(keys.token(url, kid=f"forged-{i}", key=new_key())) for i in range(5)]
    forged += [bearer(keys.token(url, kid=f"forged-{i}")) for i in range(5, 100)]

    with caplog.at_level(logging.INFO):
        results = await asyncio.gather(*(env.post(activity, headers) for headers in forged))
    assert [status for status, _ in results] == [401] * 100
    assert keys.fetches == 1
    lines = check_log(caplog, [])
    assert 1 <= len(lines) <= 10

    status, body = await env.post(activity, bearer(keys.token(url)))  # the keys were cached
    assert status == 200 and body["value"] == NO_LONGER_KNOWN
    assert keys.fetches == 1


async def test_healthz_answers_while_forged_tokens_wait_for_the_keys(
    verified: Env, keys: FakeBotFrameworkKeys
) -> None:
    """The key endpoint holds its answer: a hundred tokens with unknown kids wait on the one
    fetch in flight while /healthz, and tokens refused by their header, are answered."""
    env = verified
    url = env.connector.service_url
    activity = invoke_activity(url, "hitl_refresh", UNKNOWN_REQUEST)
    keys.hold()
    waiting = [
        asyncio.create_task(env.post(activity, bearer(keys.token(url, kid=f"forged-{i}"))))
        for i in range(100)
    ]
    # Another client: the hundred requests take all of env.http's connections.
    async with asyncio.timeout(WAIT), aiohttp.ClientSession() as http:
        await keys.wait_for_fetches(1)
        async with http.get(f"{env.server.url}/healthz") as response:
            assert response.status == 200
            assert await response.json() == {"ok": True}
        none = bearer(keys.token(url, algorithm="none"))
        async with http.post(env.messages_url, json=activity, headers=none) as response:
            assert response.status == 401
        assert not any(task.done() for task in waiting)
        keys.release()
        results = await asyncio.gather(*waiting)
    assert [status for status, _ in results] == [401] * 100
    assert keys.fetches == 1


async def test_the_body_is_read_only_once_the_token_is_verified(
    verified: Env, keys: FakeBotFrameworkKeys, caplog: pytest.LogCaptureFixture
) -> None:
    env = verified
    url = env.connector.service_url
    valid = bearer(keys.token(url))
    deep = b'{"type": "message", "x": ' + b"[" * 10_000 + b"]" * 10_000 + b"}"
    deep_for_pydantic = b'{"type": "message", "x": ' + b"[" * 300 + b"]" * 300 + b"}"
    large = b'{"type": "message", "text": "' + b"x" * 1_000_000 + b'"}'

    async def chunked() -> AsyncIterator[bytes]:  # no Content-Length: stopped as it arrives
        yield b'{"type": "message", "text": "'
        for _ in range(10):
            yield b"x" * 65_536
        yield b'"}'

    with caplog.at_level(logging.INFO):
        assert await post_raw(env, deep) == 401
        assert await post_raw(env, deep, {"Authorization": "Bearer garbage"}) == 401
        assert await post_raw(env, large) == 401  # not 413: the body is not looked at
        assert await post_raw(env, deep, valid) == 400
        assert await post_raw(env, deep_for_pydantic, valid) == 400
        assert await post_raw(env, large, valid) == 413
        assert await post_raw(env, chunked(), valid) == 413
        assert await post_raw(env, b"not json", valid) == 400
        assert await post_raw(env, b"\xff\xfe{}", valid) == 400
        assert await post_raw(env, b"[1, 2]", valid) == 400
        assert await post_raw(env, b'{"n": 1' + b"0" * 5000 + b"}", valid) == 400
        message = invoke_activity(url, "hitl_refresh", UNKNOWN_REQUEST)
        assert (await env.post(message, valid))[0] == 200  # the same token, a good body
    check_log(caplog, signatures(valid))
    assert env.connector.calls == [] and env.requests == []


async def test_without_credentials_bodies_are_read_as_safely(
    env: Env, caplog: pytest.LogCaptureFixture
) -> None:
    """HITL_TEAMS_ALLOW_UNAUTHENTICATED (development): no token needed, the same limits."""
    deep = b'{"type": "message", "x": ' + b"[" * 10_000 + b"]" * 10_000 + b"}"
    with caplog.at_level(logging.INFO):
        assert await post_raw(env, deep) == 400
        assert await post_raw(env, b'{"x": ' + b"[" * 300 + b"]" * 300 + b"}") == 400
        assert await post_raw(env, b'{"text": "' + b"x" * 300_000 + b'"}') == 413
        assert await post_raw(env, b"[]") == 400
        activity = invoke_activity(env.connector.service_url, "hitl_refresh", UNKNOWN_REQUEST)
        status, body = await env.post(activity, {"Authorization": "Bearer garbage"})
    assert status == 200 and body["value"] == NO_LONGER_KNOWN  # no token is checked
    check_log(caplog, [])


async def test_the_keys_are_refreshed_in_the_background(
    start_verified: StartEnv, keys: FakeBotFrameworkKeys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Microsoft rotates its keys: a refresh picks up the new one without a request asking."""
    monkeypatch.setattr(tokens, "REFRESH_EVERY", 0.05)
    env = await start_verified()
    url = env.connector.service_url
    activity = invoke_activity(url, "hitl_refresh", UNKNOWN_REQUEST)
    old = keys.token(url)
    assert (await env.post(activity, bearer(old)))[0] == 200

    keys.rotate("rotated-key")
    # Fetches are one at a time: once the second after the rotation arrives, the first has
    # brought the new key set.
    await keys.wait_for_fetches(keys.fetches + 2)
    status, body = await env.post(activity, bearer(keys.token(url)))
    assert status == 200 and body["value"] == NO_LONGER_KNOWN
    assert (await env.post(activity, bearer(old)))[0] == 401  # no longer served
