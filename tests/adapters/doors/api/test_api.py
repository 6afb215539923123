"""The HTTP API end to end: `hitl-bridge serve` (Server.start) with the fake Slack around it,
called over HTTP with bearer tokens; requests posted in Slack, answered by clicks there."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping
from typing import Any

import pytest
from aiohttp import web
from openapi_spec_validator import validate as validate_openapi

from adapters.doors.api.webhooks import signature
from bot.doors.long_polls import LongPolls
from bot.doors.tokens import Tokens
from bot.store.doors import DoorTables
from tests.adapters.doors.api.contract import conforms
from tests.adapters.surfaces.slack.conftest import (
    ALICE,
    CHANNEL,
    STRANGER,
    WAIT,
    Env,
    StartEnv,
    has_actions,
)

JSON = dict[str, Any]
APPROVAL = {"action": "Deploy v2 to production", "reason": "Release day"}
TO = f"slack:{CHANNEL}/{ALICE}"


class Api:
    """The API as a caller sees it: its token, its calls, each response checked against the
    served OpenAPI document."""

    def __init__(self, env: Env, token: str, document: JSON) -> None:
        self.env, self.token, self.document = env, token, document

    async def call(
        self, method: str, path: str, body: Any = None, *, token: str | None = None, **query: Any
    ) -> tuple[int, JSON]:
        headers = {"Authorization": f"Bearer {token or self.token}"}
        data = json.dumps(body).encode() if body is not None else None
        url = f"{self.env.server.url}/api/v1{path}"
        async with self.env.http.request(method, url, data=data, headers=headers,
                                         params=query) as response:  # fmt: skip
            answer: JSON = await response.json()
            conforms(self.document, path, method, response.status, answer)
            return response.status, answer

    async def create(self, **fields: Any) -> tuple[int, JSON]:
        return await self.call("POST", "/requests", {
            "tool": "requestApproval", "arguments": APPROVAL, "to": TO, **fields})  # fmt: skip


async def start(start_env: StartEnv, **settings: Any) -> tuple[Env, Api]:
    env = await start_env(**settings)
    env.slack.channels.add(CHANNEL)
    env.slack.users[ALICE]["profile"]["email"] = "alice@example.com"
    plain, _ = await Tokens(DoorTables(env.store)).create("ci-agent")
    async with env.http.get(f"{env.server.url}/api/v1/openapi.json") as response:
        document = await response.json()
    return env, Api(env, plain, document)


@pytest.fixture
async def api(start_env: StartEnv) -> Api:
    return (await start(start_env))[1]


async def posted(env: Env, request_id: str) -> JSON:
    """The request's Slack message, live, once posted."""

    async def ref() -> Mapping[str, str]:
        for _ in range(int(WAIT / 0.02)):
            record = await env.store.get_request(request_id)
            if record is not None and "slack" in record.message_refs:
                return record.message_refs["slack"]
            await asyncio.sleep(0.02)
        raise AssertionError("never posted")

    where = await ref()
    return await env.slack.wait_for(lambda: env.slack.message(where["channel"], where["ts"]), WAIT)


def polls_of(env: Env) -> LongPolls:
    assert env.server.service.doors is not None
    return env.server.service.doors.doors.polls


async def held(env: Env, count: int, requester: str | None = None) -> None:
    """Until the worker holds `count` polls (of `requester`'s, given one)."""
    deadline = time.monotonic() + WAIT
    while polls_of(env).held(requester) != count:
        assert time.monotonic() < deadline, f"never {count} polls held"
        await asyncio.sleep(0.01)


def test_the_document_is_valid_openapi_3_1() -> None:
    from adapters.doors.api.openapi import openapi_document

    document = openapi_document()
    validate_openapi(document)
    assert document["openapi"] == "3.1.0"


async def test_a_request_made_waits_on_a_long_poll_woken_by_the_click(api: Api) -> None:
    status, made = await api.create(timeout_seconds=600)
    assert status == 201 and made["status"] == "pending" and made["to"] == TO
    message = await posted(api.env, made["id"])
    assert has_actions(message) and "Deploy v2 to production" in json.dumps(message)

    polled = asyncio.create_task(api.call("GET", f"/requests/{made['id']}", wait=30))
    await held(api.env, 1)
    assert not polled.done()  # still waiting: nobody answered
    refused = await api.env.click(message, "hitl_approve", user=STRANGER)  # not theirs
    assert refused.status == 200 and not polled.done()
    await api.env.click(message, "hitl_approve")
    status, answered = await asyncio.wait_for(polled, WAIT)
    assert status == 200 and answered["status"] == "answered"
    assert answered["answer"] == {"approved": True} and answered["answered_by"] == ALICE
    assert answered["answered_at"].endswith("Z")
    audit = await api.env.store.list_audit(request_id=made["id"])
    asked = next(e for e in audit if e.action == "door.asked")
    assert asked.detail == {"requester": "ci-agent", "to": TO, "tool": "requestApproval",
                            "door": "api"}  # fmt: skip
    created = next(e for e in audit if e.action == "request.created")
    assert (created.detail["door"], created.detail["requester"]) == ("api", "ci-agent")


async def test_the_same_idempotency_key_is_the_same_request(api: Api) -> None:
    first = await api.create(idempotency_key="deploy-42")
    again = await api.create(idempotency_key="deploy-42")
    assert first[0] == 201 and again[0] == 200 and again[1]["id"] == first[1]["id"]
    assert again[1]["idempotency_key"] == "deploy-42"
    other = await api.create(idempotency_key="deploy-43")
    assert other[1]["id"] != first[1]["id"]
    await posted(api.env, other[1]["id"])
    posts = api.env.slack.calls_to("chat.postMessage")
    assert len(posts) == 2  # one per key, however often a key is sent


async def test_a_cancelled_request_says_so_in_its_message(api: Api) -> None:
    _, made = await api.create()
    message = await posted(api.env, made["id"])
    status, cancelled = await api.call("DELETE", f"/requests/{made['id']}")
    assert status == 200 and cancelled["status"] == "cancelled"
    assert cancelled["answered_by"] == "ci-agent"
    record = await api.env.store.get_request(str(made["id"]))
    assert record is not None
    where = record.message_refs["slack"]

    def settled() -> JSON:
        current = api.env.slack.message(where["channel"], where["ts"])
        return {} if has_actions(current) else current

    edited = await api.env.slack.wait_for(settled, WAIT)
    assert message["ts"] == where["ts"]
    assert "Withdrawn: no answer is needed any more." in json.dumps(edited)
    again = await api.call("DELETE", f"/requests/{made['id']}")
    assert again == (200, cancelled)  # settled already: left as it is


@pytest.mark.slow  # its deadline passes
async def test_a_request_expires(start_env: StartEnv) -> None:
    _, api = await start(start_env)
    _, made = await api.create(timeout_seconds=1)
    await posted(api.env, made["id"])
    status, expired = await api.call("GET", f"/requests/{made['id']}", wait=10)
    assert status == 200 and expired["status"] == "expired" and "answer" not in expired


async def test_a_direct_message_by_user_or_email(api: Api) -> None:
    for to in (f"slack:{ALICE}", "email:Alice@Example.com"):
        status, made = await api.create(to=to)
        assert status == 201, made
        message = await posted(api.env, made["id"])
        record = await api.env.store.get_request(made["id"])
        assert record is not None and record.actor_id == ALICE
        assert record.message_refs["slack"]["channel"] == "D" + ALICE[1:]
        assert has_actions(message)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"to": None}, "to"),
        ({"tool": "deployEverything"}, ""),
        ({"arguments": {"reason": "no action"}}, "action"),
        ({"timeout_seconds": 0}, "timeout_seconds"),
        ({"to": "slack:not-an-id"}, "to"),
        ({"to": "slack:U0NOBODY1"}, "to"),
        ({"to": "email:nobody@example.com"}, "to"),
        ({"idempotency_key": "k" * 201}, "idempotency_key"),
        ({"surprise": 1}, "surprise"),
    ],
)
async def test_a_bad_field_is_a_400_naming_it(api: Api, fields: JSON, field: str) -> None:
    body = {"tool": "requestApproval", "arguments": APPROVAL, "to": TO, **fields}
    status, refused = await api.call("POST", "/requests", {k: v for k, v in body.items()
                                                           if v is not None})  # fmt: skip
    assert status == 400 and refused["error"] == "invalid", refused
    if field:
        assert field in refused["fields"], refused
    assert api.env.slack.calls_to("chat.postMessage") == []


async def test_bodies_and_queries_that_are_not_what_they_should_be(api: Api) -> None:
    url = f"{api.env.server.url}/api/v1/requests"
    headers = {"Authorization": f"Bearer {api.token}"}
    for data in (b"not json", b"[1, 2]", b"{" * 50 + b"}" * 50):
        async with api.env.http.post(url, data=data, headers=headers) as response:
            assert response.status == 400, await response.text()
    async with api.env.http.post(url, data=b"x" * 300_000, headers=headers) as response:
        assert response.status == 413
    assert (await api.call("GET", "/requests/nope"))[0] == 404
    assert (await api.call("GET", "/requests/nope", wait="soon"))[0] == 400
    assert (await api.call("GET", "/requests", since="yesterday"))[0] == 400
    assert (await api.call("GET", "/requests", status="sideways"))[0] == 400
    status, refused = await api.call("GET", "/requests", to="fax:123")
    assert status == 400 and "to" in refused["fields"]


async def test_a_token_is_needed_and_sees_its_own_requests_only(api: Api) -> None:
    tokens = Tokens(DoorTables(api.env.store))
    _, made = await api.create()
    url = f"{api.env.server.url}/api/v1/requests/{made['id']}"
    for headers in ({}, {"Authorization": "Bearer hitl_wrong"}, {"Authorization": api.token}):
        async with api.env.http.get(url, headers=headers) as response:
            assert response.status == 401
            assert (await response.json())["error"] == "unauthorized"
    other, _ = await tokens.create("another-agent")
    assert (await api.call("GET", f"/requests/{made['id']}", token=other))[0] == 404
    assert (await api.call("DELETE", f"/requests/{made['id']}", token=other))[0] == 404
    assert (await api.call("GET", "/requests", token=other))[1]["requests"] == []
    await tokens.revoke("ci-agent")
    assert (await api.call("GET", f"/requests/{made['id']}"))[0] == 401


async def test_requests_listed_newest_first_by_page_and_filter(api: Api) -> None:
    made = [(await api.create(idempotency_key=f"k{n}"))[1]["id"] for n in range(5)]
    await api.create(to=f"slack:{ALICE}")
    _, first = await api.call("GET", "/requests", limit=2, to=TO)
    assert [r["id"] for r in first["requests"]] == made[::-1][:2]
    seen = [r["id"] for r in first["requests"]]
    page = first
    while page["next"] is not None:
        _, page = await api.call("GET", "/requests", limit=2, to=TO, before=page["next"])
        seen += [r["id"] for r in page["requests"]]
    assert seen == made[::-1]
    _, pending = await api.call("GET", "/requests", status="pending")
    assert len(pending["requests"]) == 6
    _, none = await api.call("GET", "/requests", status="answered")
    assert none == {"requests": [], "next": None}


@pytest.mark.slow  # a retry's backoff
async def test_a_settle_is_posted_to_the_callback_signed_and_retried(
    start_env: StartEnv,
) -> None:
    received: list[tuple[JSON, bytes]] = []
    arrived = asyncio.Event()

    async def callback(request: web.Request) -> web.Response:
        received.append((dict(request.headers), await request.read()))
        if len(received) == 1:
            return web.Response(status=500)  # the first delivery fails: retried
        arrived.set()
        return web.Response(status=204)

    app = web.Application()
    app.router.add_post("/hook", callback)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    try:
        env, api = await start(start_env, HITL_WEBHOOK_ALLOW_PRIVATE=1)
        (token,) = await DoorTables(env.store).list_tokens()
        status, made = await api.create(callback_url=f"http://{host}:{port}/hook?x=1")
        assert status == 201
        await env.click(await posted(env, made["id"]), "hitl_approve")
        await asyncio.wait_for(arrived.wait(), WAIT)
    finally:
        await runner.cleanup()
    (_, first), (headers, body) = received
    assert first == body  # the same delivery, again
    sent = json.loads(body)
    assert sent["id"] == made["id"] and sent["status"] == "answered"
    assert sent["answer"] == {"approved": True}
    expected = signature(token.webhook_secret, headers["X-Hitl-Timestamp"], body)
    assert headers["X-Hitl-Signature"] == expected
    lines = [e.action for e in await env.store.list_audit(request_id=made["id"])]
    assert lines.count("webhook.failed") == 1 and lines.count("webhook.delivered") == 1


async def test_a_callback_to_a_private_address_is_refused(api: Api) -> None:
    for url in ("http://127.0.0.1:9/hook", "http://10.0.0.8/hook", "ftp://example.com/x"):
        status, refused = await api.create(callback_url=url)
        assert status == 400 and "callback_url" in refused["fields"], refused
