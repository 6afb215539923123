"""hitl_client's own behaviour over real HTTP on loopback: retries, backoff, idempotent
re-creates, long polls that give up, errors read from bodies.

`StandIn` below serves the API's contract (/api/v1: bearer auth and 401, idempotent creates,
400 with the invalid fields, long polls, 404, pages, cancel) and, unlike the real service,
can fail on purpose (a 503 after recording a create, a 429 with Retry-After, a dropped
connection, a server that ignores `wait`): the faults the client must survive. The client
against the real service, answered by clicks in Slack, is tests/adapters/doors/api/
test_client_e2e.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import secrets
import socket
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple, TypeVar

import httpx
import pytest
from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from adapters.doors.api.openapi import openapi_document
from bot.human_tools.models import (
    AskUserQuestionArgs,
    CollectUserDataArgs,
    ConfirmActionArgs,
    RequestApprovalArgs,
    SelectOptionArgs,
    UploadFileArgs,
)
from hitl_client import (
    DataField,
    HitlApiError,
    HitlClient,
    HitlConnectionError,
    RequestApprovalAnswer,
    RequestCancelled,
    RequestDeclined,
    RequestExpired,
    RequestInfo,
    RequestNotAnswered,
    RequestUndeliverable,
    SelectOptionAnswer,
    UploadFileAnswer,
)
from tests.adapters.doors.api.contract import conforms
from tests.bot.conftest import within

ALICE = "hitl_alice_0123456789abcdef"  # the tokens the stand-in knows, and their names
BOB = "hitl_bob_fedcba9876543210"
TOKENS = {ALICE: "alice", BOB: "bob"}
DM = "slack:U0123ABCD"
CHANNEL = "slack:C0123ABCD"
THREAD = "slack:C0123ABCD/U0123ABCD@1712345678.000100"
LONG_POLL = 0.2  # the client's long-poll step here: several polls in a fraction of a second

T = TypeVar("T")
DOCUMENT = openapi_document()

# -- the stand-in of the API -------------------------------------------------------------------

MAX_WAIT = 60.0
DEFAULT_TIMEOUT = 300.0
ARGUMENTS: dict[str, type[BaseModel]] = {
    "AskUserQuestion": AskUserQuestionArgs,
    "requestApproval": RequestApprovalArgs,
    "selectOption": SelectOptionArgs,
    "collectUserData": CollectUserDataArgs,
    "uploadFile": UploadFileArgs,
    "confirmAction": ConfirmActionArgs,
}
ADDRESS = re.compile(
    r"slack:[CDGU][A-Z0-9]{2,}(/U[A-Z0-9]{2,})?(@\d+\.\d+)?|teams:\S+|email:[^@\s]+@[^@\s]+\.\w+"
)
STATUSES = ("pending", "answered", "declined", "expired", "cancelled", "undeliverable")


class Create(BaseModel):
    """The body of POST /api/v1/requests, as the contract reads it."""

    model_config = ConfigDict(extra="forbid")

    tool: str = Field(min_length=1, max_length=100)
    arguments: dict[str, Any] = Field(default_factory=dict)
    to: str = Field(min_length=1, max_length=500)
    timeout_seconds: float | None = Field(default=None, ge=1, le=7 * 86400)
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=200)
    callback_url: str | None = Field(default=None, max_length=2000)


class Refused(Exception):
    """An API error answer: its status, code, message and invalid fields."""

    def __init__(
        self, status: int, error: str, message: str, fields: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status, self.error, self.message = status, error, message
        self.fields = fields or {}


@dataclass
class Held:
    """A request the stand-in holds: its body (unset fields absent) and who made it."""

    body: dict[str, Any]
    owner: str
    created: datetime
    settled: asyncio.Event = field(default_factory=asyncio.Event)
    expiry: asyncio.TimerHandle | None = None


@dataclass
class Received:
    """A create the stand-in received: its body and the status it answered."""

    body: dict[str, Any]
    status: int


class StandIn:
    """The API on 127.0.0.1 (see the module's docstring); `url` once started."""

    def __init__(self) -> None:
        self.held: dict[str, Held] = {}  # in creation order
        self.keys: dict[tuple[str, str], str] = {}  # (owner, idempotency key) -> request id
        self.created: asyncio.Queue[str] = asyncio.Queue()  # ids of new requests
        self.creates: list[Received] = []  # every create received
        self.polls: list[float] = []  # the wait of every GET of one request
        self.polled = asyncio.Event()  # set by every GET of one request, as it is received
        self.fail_next: list[int] = []  # statuses the next creates answer (5xx after recording)
        self.ignore_wait = False  # answer long polls at once, as a misbehaving proxy might
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = web.Application(middlewares=[_documented, self._errors])
        app.router.add_post("/api/v1/requests", self._create)
        app.router.add_get("/api/v1/requests", self._list)
        app.router.add_get("/api/v1/requests/{id}", self._get)
        app.router.add_delete("/api/v1/requests/{id}", self._cancel)
        self._runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"

    async def close(self) -> None:
        for held in self.held.values():
            if held.expiry is not None:
                held.expiry.cancel()
        if self._runner is not None:
            await self._runner.cleanup()

    # -- the person's side (and the deadline sweep's) --------------------------------------

    def answer(self, request_id: str, answer: Any, by: str = "U0123ABCD") -> None:
        self._settle(request_id, "answered", answer=answer, answered_by=by)

    def decline(self, request_id: str, reason: str, by: str = "U0123ABCD") -> None:
        self._settle(request_id, "declined", reason=reason, answered_by=by)

    def expire(self, request_id: str) -> None:
        self._settle(request_id, "expired", reason="Timed out", answered_by="system")

    def undeliverable(self, request_id: str, reason: str) -> None:
        self._settle(request_id, "undeliverable", reason=reason, answered_by="system")

    def withdraw(self, request_id: str, by: str) -> None:
        self._settle(request_id, "cancelled", reason="Cancelled by its requester", answered_by=by)

    def _settle(self, request_id: str, status: str, **fields: Any) -> None:
        held = self.held[request_id]
        if held.body["status"] != "pending":
            return  # settled once only
        held.body.update(status=status, answered_at=_iso(datetime.now(UTC)), **fields)
        if held.expiry is not None:
            held.expiry.cancel()
        held.settled.set()

    # -- routes ----------------------------------------------------------------------------

    @web.middleware
    async def _errors(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        try:
            _owner(request)  # every route authenticates first
            return await handler(request)
        except Refused as err:
            body = {"error": err.error, "message": err.message, "fields": err.fields}
            return web.json_response(body, status=err.status)

    async def _create(self, request: web.Request) -> web.Response:
        owner = _owner(request)
        try:
            raw = await request.json()
        except ValueError:
            raise Refused(400, "invalid", "the body is not JSON") from None
        try:
            asked = Create.model_validate(raw)
        except ValidationError as err:
            raise _invalid(err, "invalid request") from None
        self._check(asked)
        if asked.idempotency_key and (owner, asked.idempotency_key) in self.keys:
            first = self.held[self.keys[owner, asked.idempotency_key]]
            return self._answer_create(raw, first, 200)
        if self.fail_next and self.fail_next[0] == 429:
            self.creates.append(Received(raw, self.fail_next.pop(0)))
            raise Refused(429, "unavailable", "slow down")
        held = self._record(owner, asked)
        return self._answer_create(raw, held, 201)

    def _check(self, asked: Create) -> None:
        model = ARGUMENTS.get(asked.tool)
        if model is None:
            raise Refused(400, "invalid", f"unknown tool '{asked.tool}'", {"tool": "unknown tool"})
        try:
            model.model_validate(asked.arguments)
        except ValidationError as err:
            raise _invalid(err, f"invalid arguments for {asked.tool}") from None
        if not ADDRESS.fullmatch(asked.to):
            raise Refused(400, "invalid", "unknown address", {"to": "not an address"})

    def _record(self, owner: str, asked: Create) -> Held:
        now = datetime.now(UTC)
        timeout = asked.timeout_seconds or DEFAULT_TIMEOUT
        body: dict[str, Any] = {
            "id": secrets.token_hex(12), "status": "pending", "tool": asked.tool, "to": asked.to,
            "arguments": asked.arguments, "created_at": _iso(now),
            "expires_at": _iso(now + timedelta(seconds=timeout)),
        }  # fmt: skip
        if asked.idempotency_key is not None:
            body["idempotency_key"] = asked.idempotency_key
            self.keys[owner, asked.idempotency_key] = body["id"]
        held = self.held[body["id"]] = Held(body, owner, now)
        loop = asyncio.get_running_loop()
        held.expiry = loop.call_later(timeout, self.expire, body["id"])
        self.created.put_nowait(body["id"])
        return held

    def _answer_create(self, raw: dict[str, Any], held: Held, status: int) -> web.Response:
        if self.fail_next:  # recorded, then the answer lost: as a crash or a proxy's 503
            status = self.fail_next.pop(0)
            self.creates.append(Received(raw, status))
            raise Refused(status, "unavailable", "the bridge cannot reach its database now")
        self.creates.append(Received(raw, status))
        return web.json_response(held.body, status=status)

    async def _get(self, request: web.Request) -> web.Response:
        held = self._own(request)
        wait = _number(request.query.get("wait", "0"), "wait", 0, MAX_WAIT)
        self.polls.append(wait)
        self.polled.set()
        if held.body["status"] == "pending" and wait > 0 and not self.ignore_wait:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(held.settled.wait(), wait)
        return web.json_response(held.body)

    async def _cancel(self, request: web.Request) -> web.Response:
        held = self._own(request)
        self.withdraw(held.body["id"], by=held.owner)
        return web.json_response(held.body)

    async def _list(self, request: web.Request) -> web.Response:
        owner, query = _owner(request), request.query
        limit = int(_number(query.get("limit", "50"), "limit", 1, 200))
        status, since = query.get("status"), _since(query.get("since"))
        if status and status not in STATUSES:
            raise Refused(
                400, "invalid", f"unknown status '{status}'", {"status": "unknown status"}
            )
        found = [h for h in reversed(self.held.values()) if h.owner == owner]
        if before := query.get("before"):
            ids = [h.body["id"] for h in found]
            found = found[ids.index(before) + 1 :] if before in ids else []
        found = [
            h for h in found
            if (not status or h.body["status"] == status)
            and (not query.get("to") or h.body["to"] == query["to"])
            and (since is None or h.created >= since)
        ]  # fmt: skip
        page = found[:limit]
        following = page[-1].body["id"] if len(found) > limit else None
        return web.json_response({"requests": [h.body for h in page], "next": following})

    def _own(self, request: web.Request) -> Held:
        held = self.held.get(request.match_info["id"])
        if held is None or held.owner != _owner(request):
            raise Refused(404, "not_found", f"no request {request.match_info['id']}")
        return held


@web.middleware
async def _documented(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """Every answer of the stand-in is one the served OpenAPI document describes: what the
    client is tested against is the contract, not a guess at it."""
    response = await handler(request)
    if isinstance(response, web.Response) and response.body is not None:
        body = json.loads(bytes(response.body))  # type: ignore[arg-type]
        path = request.raw_path.split("?")[0]  # as sent: an id's / stays %2F
        conforms(DOCUMENT, path, request.method, response.status, body)
    return response


def _owner(request: web.Request) -> str:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme != "Bearer" or token not in TOKENS:
        raise Refused(401, "unauthorized", "a valid bearer token is needed")
    return TOKENS[token]


def _invalid(err: ValidationError, what: str) -> Refused:
    fields = {".".join(str(p) for p in e["loc"]) or "body": e["msg"] for e in err.errors()}
    return Refused(400, "invalid", f"{what}: {'; '.join(fields)}", fields)


def _number(text: str, name: str, low: float, high: float) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not low <= value <= high:
        raise Refused(400, "invalid", f"{name} out of range", {name: "out of range"})
    return value


def _since(text: str | None) -> datetime | None:
    if not text:
        return None
    with contextlib.suppress(ValueError):
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
        if when.tzinfo is not None:
            return when
    raise Refused(400, "invalid", "since must be ISO 8601", {"since": "not ISO 8601"})


def _iso(when: datetime) -> str:
    return when.isoformat().replace("+00:00", "Z")


# -- fixtures ----------------------------------------------------------------------------------


@pytest.fixture
async def api() -> AsyncIterator[StandIn]:
    stand_in = StandIn()
    await stand_in.start()
    try:
        yield stand_in
    finally:
        await stand_in.close()


@pytest.fixture
async def client(api: StandIn) -> AsyncIterator[HitlClient]:
    async with HitlClient(api.url, ALICE, backoff=0.01, long_poll=LONG_POLL) as hitl:
        yield hitl


Background = Callable[[Coroutine[Any, Any, T]], "asyncio.Task[T]"]


@pytest.fixture
async def background() -> AsyncIterator[Background[Any]]:
    """Run a call as a task; any still running at the end are cancelled and awaited."""
    tasks: list[asyncio.Task[Any]] = []

    def run(call: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        tasks.append(asyncio.create_task(call))
        return tasks[-1]

    yield run
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


# -- the typed helpers -------------------------------------------------------------------------


class Helper(NamedTuple):
    call: Callable[[HitlClient], Coroutine[Any, Any, Any]]
    tool: str
    answer: dict[str, Any]
    expected: Any


HELPERS = {
    "ask": Helper(
        lambda c: c.ask("Which region?", DM, timeout_seconds=600),
        "AskUserQuestion", {"answer": "eu-west-1"}, "eu-west-1",
    ),
    "request_approval": Helper(
        lambda c: c.request_approval("Deploy v2 to prod", "Release day", CHANNEL),
        "requestApproval", {"approved": True}, RequestApprovalAnswer(approved=True),
    ),
    "select_option": Helper(
        lambda c: c.select_option("Where?", ["prod", "staging"], THREAD),
        "selectOption", {"selectedIndex": 1, "selectedValue": "staging"},
        SelectOptionAnswer(selectedIndex=1, selectedValue="staging"),
    ),
    "collect_data": Helper(
        lambda c: c.collect_data(
            [DataField(name="name", label="Name"),
             {"name": "age", "label": "Age", "type": "integer", "min": 0}],
            "teams:19:abc@thread.v2",
        ),
        "collectUserData", {"name": "Ada", "age": 36}, {"name": "Ada", "age": 36},
    ),
    "upload_file": Helper(
        lambda c: c.upload_file("The invoice", "email:ada@example.com", ["pdf"]),
        "uploadFile", {"fileName": "inv.pdf", "fileSize": 10, "url": "https://f.example/1"},
        UploadFileAnswer(fileName="inv.pdf", fileSize=10, url="https://f.example/1"),
    ),
    "confirm_action": Helper(
        lambda c: c.confirm_action("Drop the table", "users goes", "danger", DM),
        "confirmAction", {"confirmed": True}, True,
    ),
}  # fmt: skip


async def _asked(api: StandIn, helper: Helper) -> Held:
    """The request a helper made, once made."""
    held = api.held[await within(api.created.get())]
    assert held.body["tool"] == helper.tool
    return held


@pytest.mark.parametrize("name", HELPERS)
async def test_a_helper_returns_the_tools_typed_answer(
    name: str, api: StandIn, client: HitlClient, background: Background[Any]
) -> None:
    helper = HELPERS[name]
    asking = background(helper.call(client))
    held = await _asked(api, helper)
    ARGUMENTS[helper.tool].model_validate(held.body["arguments"])
    api.answer(held.body["id"], helper.answer)
    answer = await within(asking)
    assert answer == helper.expected
    assert type(answer) is type(helper.expected)


async def test_the_timeout_seconds_of_a_helper_sets_the_deadline(
    api: StandIn, client: HitlClient, background: Background[Any]
) -> None:
    background(HELPERS["ask"].call(client))
    held = await _asked(api, HELPERS["ask"])
    lasts = datetime.fromisoformat(held.body["expires_at"]) - held.created
    assert round(lasts.total_seconds()) == 600


@pytest.mark.parametrize("name", HELPERS)
async def test_a_declined_request_raises_request_declined(
    name: str, api: StandIn, client: HitlClient, background: Background[Any]
) -> None:
    asking = background(HELPERS[name].call(client))
    held = await _asked(api, HELPERS[name])
    api.decline(held.body["id"], "Not on a Friday", by="U0999ZZZ")
    with pytest.raises(RequestDeclined) as raised:
        await within(asking)
    assert (raised.value.reason, raised.value.answered_by) == ("Not on a Friday", "U0999ZZZ")
    assert raised.value.request.status == "declined"
    assert raised.value.request.id == held.body["id"]


@pytest.mark.parametrize("name", HELPERS)
async def test_an_expired_request_raises_request_expired(
    name: str, api: StandIn, client: HitlClient, background: Background[Any]
) -> None:
    asking = background(HELPERS[name].call(client))
    held = await _asked(api, HELPERS[name])
    api.expire(held.body["id"])
    with pytest.raises(RequestExpired) as raised:
        await within(asking)
    assert raised.value.request.status == "expired"


@pytest.mark.parametrize(
    ("settle", "error"),
    [
        (lambda api, rid: api.withdraw(rid, by="admin"), RequestCancelled),
        (lambda api, rid: api.undeliverable(rid, "no such user"), RequestUndeliverable),
    ],
)
async def test_cancelled_and_undeliverable_requests_raise_their_errors(
    settle: Callable[[StandIn, str], None],
    error: type[RequestNotAnswered],
    api: StandIn,
    client: HitlClient,
    background: Background[Any],
) -> None:
    asking = background(client.ask("Which region?", DM))
    settle(api, await within(api.created.get()))
    with pytest.raises(error) as raised:
        await within(asking)
    assert raised.value.reason


async def test_a_refused_confirmation_is_false_not_an_error(
    api: StandIn, client: HitlClient, background: Background[Any]
) -> None:
    asking = background(client.confirm_action("Reboot", "The box restarts", "warning", DM))
    api.answer(await within(api.created.get()), {"confirmed": False})
    assert await within(asking) is False


async def test_a_helper_given_up_withdraws_its_request(
    api: StandIn, client: HitlClient, background: Background[Any]
) -> None:
    asking = background(client.ask("Still there?", DM))
    held = api.held[await within(api.created.get())]
    await within(api.polled.wait())  # in the middle of a long poll
    asking.cancel()
    with pytest.raises(asyncio.CancelledError):
        await within(asking)
    assert held.body["status"] == "cancelled"
    assert held.body["answered_by"] == "alice"


# -- get, wait, cancel -------------------------------------------------------------------------


async def test_wait_long_polls_in_steps_until_the_request_settles(
    api: StandIn, client: HitlClient
) -> None:
    info = await client.create("AskUserQuestion", {"question": "Region?"}, DM)
    asyncio.get_running_loop().call_later(0.5, api.answer, info.id, {"answer": "eu"})
    settled = await within(client.wait(info.id))
    assert settled.status == "answered"
    assert settled.answer == {"answer": "eu"}
    assert settled.answered_by == "U0123ABCD"
    assert settled.answered_at is not None
    assert len(api.polls) >= 3
    assert all(0 < wait <= LONG_POLL for wait in api.polls)


async def test_wait_gives_the_pending_request_back_after_its_timeout(
    api: StandIn, client: HitlClient
) -> None:
    info = await client.create("AskUserQuestion", {"question": "Region?"}, DM)
    started = asyncio.get_running_loop().time()
    pending = await within(client.wait(info.id, timeout=0.5))
    assert pending.status == "pending"
    assert not pending.settled
    assert 0.5 <= asyncio.get_running_loop().time() - started < 1.5
    assert len(api.polls) >= 3
    assert 0.3 < sum(api.polls) <= 0.501  # each step what was left of the timeout, or less


async def test_wait_does_not_spin_on_a_server_that_ignores_wait(
    api: StandIn, client: HitlClient
) -> None:
    info = await client.create("AskUserQuestion", {"question": "Region?"}, DM)
    api.ignore_wait = True
    assert (await within(client.wait(info.id, timeout=0.5))).status == "pending"
    assert 2 <= len(api.polls) <= 6  # about one poll per step, not one per round trip


async def test_get_long_polls_once_and_returns_when_settled(
    api: StandIn, client: HitlClient
) -> None:
    info = await client.create("AskUserQuestion", {"question": "Region?"}, DM)
    assert (await client.get(info.id)).status == "pending"
    asyncio.get_running_loop().call_later(0.1, api.decline, info.id, "no")
    started = asyncio.get_running_loop().time()
    declined = await within(client.get(info.id, wait=30))
    assert declined.status == "declined"
    assert declined.reason == "no"
    assert asyncio.get_running_loop().time() - started < 1.5
    assert api.polls == [0.0, 30.0]
    with pytest.raises(ValueError):
        await client.get(info.id, wait=61)


async def test_cancel_withdraws_a_pending_request_and_leaves_a_settled_one(
    api: StandIn, client: HitlClient
) -> None:
    pending = await client.create("AskUserQuestion", {"question": "Region?"}, DM)
    cancelled = await client.cancel(pending.id)
    assert (cancelled.status, cancelled.answered_by) == ("cancelled", "alice")
    answered = await client.create("AskUserQuestion", {"question": "Zone?"}, DM)
    api.answer(answered.id, {"answer": "b"})
    assert (await client.cancel(answered.id)).status == "answered"


async def test_the_request_body_is_read_whole(api: StandIn, client: HitlClient) -> None:
    info = await client.create(
        "selectOption", {"question": "Where?", "options": ["a", "b"]}, THREAD,
        timeout_seconds=60, idempotency_key="deploy-42",
        callback_url="https://agent.example/hook",
    )  # fmt: skip
    assert isinstance(info, RequestInfo)
    assert (info.tool, info.to, info.status) == ("selectOption", THREAD, "pending")
    assert info.arguments == {"question": "Where?", "options": ["a", "b"]}
    assert info.idempotency_key == "deploy-42"
    assert info.created_at is not None and info.expires_at is not None
    assert info.expires_at - info.created_at == timedelta(seconds=60)
    assert api.creates[0].body["callback_url"] == "https://agent.example/hook"
    with pytest.raises(ValidationError):
        info.status = "answered"  # type: ignore[misc]  # frozen: a snapshot


# -- idempotency and retries -------------------------------------------------------------------


async def test_a_create_retried_after_a_503_gets_the_first_request_back(
    api: StandIn, client: HitlClient
) -> None:
    api.fail_next = [503]
    info = await client.create("AskUserQuestion", {"question": "Region?"}, DM)
    assert [c.status for c in api.creates] == [503, 200]
    keys = {c.body["idempotency_key"] for c in api.creates}
    assert len(keys) == 1  # one key, generated once, sent with the retry
    uuid.UUID(info.idempotency_key or "")
    assert list(api.held) == [info.id]
    assert keys == {info.idempotency_key}


async def test_a_create_waits_out_a_429_and_is_made_once(api: StandIn, client: HitlClient) -> None:
    api.fail_next = [429]
    info = await client.create("AskUserQuestion", {"question": "Region?"}, DM)
    assert [c.status for c in api.creates] == [429, 201]
    assert list(api.held) == [info.id]


class DropsFirstConnection(httpx.AsyncHTTPTransport):
    """A real transport whose first request fails to connect."""

    def __init__(self) -> None:
        super().__init__()
        self.dropped = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if not self.dropped:
            self.dropped += 1
            raise httpx.ConnectError("connection refused", request=request)
        return await super().handle_async_request(request)


async def test_a_create_is_retried_after_a_connection_error(api: StandIn) -> None:
    transport = DropsFirstConnection()
    async with HitlClient(api.url, ALICE, transport=transport, backoff=0.01) as hitl:
        info = await hitl.create("AskUserQuestion", {"question": "Region?"}, DM)
    assert transport.dropped == 1
    assert [c.status for c in api.creates] == [201]
    assert list(api.held) == [info.id]


async def test_retries_give_up_with_the_last_error(api: StandIn) -> None:
    api.fail_next = [503, 503, 503]
    async with HitlClient(api.url, ALICE, retries=2, backoff=0.01) as hitl:
        with pytest.raises(HitlApiError) as raised:
            await hitl.create("AskUserQuestion", {"question": "Region?"}, DM)
    assert (raised.value.status, raised.value.error) == (503, "unavailable")
    assert len({c.body["idempotency_key"] for c in api.creates}) == 1
    assert len(api.held) == 1  # recorded once, whatever the answers lost


async def test_an_unreachable_bridge_raises_hitl_connection_error() -> None:
    with socket.socket() as closed:  # a loopback port nobody listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    async with HitlClient(f"http://127.0.0.1:{port}", ALICE, retries=1, backoff=0.01) as hitl:
        with pytest.raises(HitlConnectionError):
            await hitl.get("r1")


async def test_the_same_idempotency_key_returns_the_first_request(
    api: StandIn, client: HitlClient
) -> None:
    first = await client.create("AskUserQuestion", {"question": "A?"}, DM, idempotency_key="k1")
    again = await client.create("AskUserQuestion", {"question": "B?"}, DM, idempotency_key="k1")
    assert again == first
    assert [c.status for c in api.creates] == [201, 200]
    async with HitlClient(api.url, BOB) as bob:  # keys are per token
        other = await bob.create("AskUserQuestion", {"question": "A?"}, DM, idempotency_key="k1")
    assert other.id != first.id


# -- errors ------------------------------------------------------------------------------------


async def test_a_bad_token_raises_a_401_and_the_token_is_never_shown(
    api: StandIn, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "hitl_wrong_secret_value"
    caplog.set_level(logging.DEBUG)
    async with HitlClient(api.url, secret) as hitl:
        with pytest.raises(HitlApiError) as raised:
            await hitl.create("AskUserQuestion", {"question": "Region?"}, DM)
        shown = [repr(hitl), str(raised.value), repr(raised.value), caplog.text]
    assert (raised.value.status, raised.value.error) == (401, "unauthorized")
    assert raised.value.message
    assert caplog.records  # httpx did log the exchange, without the token
    assert not [text for text in shown if secret in text]


async def test_an_invalid_create_raises_a_400_with_its_fields(client: HitlClient) -> None:
    with pytest.raises(HitlApiError) as raised:
        await client.create("AskUserQuestion", {"question": "Region?"}, "nowhere",
                            idempotency_key="k" * 201)  # fmt: skip
    assert (raised.value.status, raised.value.error) == (400, "invalid")
    assert set(raised.value.fields) == {"idempotency_key"}
    with pytest.raises(HitlApiError) as raised:
        await client.ask("", DM)
    assert set(raised.value.fields) == {"question"}
    with pytest.raises(HitlApiError) as raised:
        await client.ask("Region?", "nowhere")
    assert raised.value.fields == {"to": "not an address"}


async def test_an_unknown_request_raises_a_404(api: StandIn, client: HitlClient) -> None:
    for request_id in ("nope", "../requests", "a/b"):
        with pytest.raises(HitlApiError) as raised:
            await client.get(request_id)
        assert (raised.value.status, raised.value.error) == (404, "not_found")
    async with HitlClient(api.url, BOB) as bob:  # another token's request
        theirs = await bob.create("AskUserQuestion", {"question": "A?"}, DM)
    with pytest.raises(HitlApiError) as raised:
        await client.cancel(theirs.id)
    assert raised.value.status == 404


# -- list --------------------------------------------------------------------------------------


async def test_list_pages_newest_first_with_filters(api: StandIn, client: HitlClient) -> None:
    made = [
        await client.create("AskUserQuestion", {"question": f"Q{n}?"}, DM if n % 2 else CHANNEL)
        for n in range(5)
    ]
    async with HitlClient(api.url, BOB) as bob:
        await bob.create("AskUserQuestion", {"question": "Theirs?"}, DM)
    api.answer(made[1].id, {"answer": "x"})
    pages = [[r.id for r in page] async for page in client.list(limit=2)]
    newest_first = [r.id for r in reversed(made)]
    assert pages == [newest_first[:2], newest_first[2:4], newest_first[4:]]
    answered = [r async for page in client.list(status="answered") for r in page]
    assert [(r.id, r.answer) for r in answered] == [(made[1].id, {"answer": "x"})]
    to_dm = [r.id async for page in client.list(to=DM) for r in page]
    assert to_dm == [made[3].id, made[1].id]
    later = datetime.now(UTC) + timedelta(minutes=1)
    assert [page async for page in client.list(since=later)] == []
    earlier = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()  # "+00:00", quoted
    assert len([r async for page in client.list(since=earlier) for r in page]) == 5
    with pytest.raises(HitlApiError) as raised:
        [page async for page in client.list(limit=500)]
    assert raised.value.fields == {"limit": "out of range"}


async def test_the_base_url_may_name_the_api_itself(api: StandIn) -> None:
    async with HitlClient(f"{api.url}/api/v1/", ALICE) as hitl:
        info = await hitl.create("AskUserQuestion", {"question": "Region?"}, DM)
        assert (await hitl.get(info.id)).id == info.id
