"""adapters/doors/api/webhooks.py on a real store (SQLite; PostgreSQL too when
HITL_TEST_POSTGRES_URL
is set), posting to a real aiohttp receiver on 127.0.0.1: signed deliveries, retries, giving up,
one delivery per request across workers, rows dead workers left, audit lines, and the SSRF
checks of callback URLs."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Any

import pytest
from aiohttp import web
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from adapters.doors.api.callback_urls import CheckedResolver, RefusedUrl, check_url
from adapters.doors.api.webhook_traffic import Limits
from adapters.doors.api.webhooks import Webhooks
from adapters.ops.tracing import Tracing
from bot.records import Asked, AuditEntry
from bot.store import SqlStore, open_store
from bot.store.webhooks import WebhookDelivery, WebhookTables
from tests.bot.store.conftest import Database, database  # noqa: F401  (the fixture)

SECRET = "whsec_test-secret"
WAIT = 5.0  # seconds anything awaited here may take before the test fails
BODY = {"id": "r1", "status": "answered", "answer": {"approved": True}, "reason": None}


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float


@dataclass
class Receiver:
    """A callback receiver: records every request; answers 500 while `failures` lasts."""

    base: str = ""
    got: list[Received] = field(default_factory=list)
    failures: int = 0

    async def hook(self, request: web.Request) -> web.Response:
        body = await request.read()
        self.got.append(Received(request.path_qs, dict(request.headers), body, time.monotonic()))
        if self.failures > 0:
            self.failures -= 1
            return web.Response(status=500, text="down")
        return web.Response(status=204)

    async def moved(self, request: web.Request) -> web.Response:
        self.got.append(Received(request.path_qs, dict(request.headers), b"", time.monotonic()))
        raise web.HTTPFound("/hook")

    @property
    def url(self) -> str:
        return f"{self.base}/hook?signed=yes"


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async for made in serve_receiver():
        yield made


@pytest.fixture
async def other_receiver() -> AsyncIterator[Receiver]:
    """Another receiver, on a host (port) of its own."""
    async for made in serve_receiver():
        yield made


async def serve_receiver() -> AsyncIterator[Receiver]:
    made = Receiver()
    app = web.Application()
    app.router.add_post("/hook", made.hook)
    app.router.add_post("/moved", made.moved)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    made.base = f"http://{host}:{port}"
    yield made
    await runner.cleanup()


@pytest.fixture
async def store(database: Database) -> AsyncIterator[SqlStore]:  # noqa: F811
    opened = await open_store(database.url, schema=database.schema)
    yield opened
    await opened.close()


async def secret_for(requester: str) -> str | None:
    return SECRET if requester == "ci-agent" else None


Make = Callable[..., Webhooks]


@pytest.fixture
async def make(store: SqlStore) -> AsyncIterator[Make]:
    """Webhooks on the test's store (each one a worker), quick to retry; closed afterwards."""
    made: list[Webhooks] = []

    def webhooks(**options: Any) -> Webhooks:
        options = {"allow_private": True, "first_retry": 0.05, "max_retry": 0.2,
                   "timeout": 2.0, **options}  # fmt: skip
        made.append(Webhooks(WebhookTables(store), secret_for, **options))
        return made[-1]

    yield webhooks
    for webhooks_ in made:
        await webhooks_.close()


def asked(url: str, request_id: str = "r1", requester: str = "ci-agent") -> Asked:
    now = datetime.now(UTC)
    return Asked(request_id, requester, "slack:C1/U1", now, callback_url=url)


async def until(done: Callable[[], Awaitable[bool]], what: str) -> None:
    """Poll `done` until true, for WAIT seconds at most."""
    deadline = time.monotonic() + WAIT
    while not await done():
        assert time.monotonic() < deadline, f"not within {WAIT} s: {what}"
        await asyncio.sleep(0.01)


async def finished(store: SqlStore, request_id: str = "r1") -> WebhookDelivery:
    """The request's delivery once it is done (delivered or given up)."""
    tables = WebhookTables(store)

    async def done() -> bool:
        found = await tables.delivery(request_id)
        return found is not None and found.done_at is not None

    await until(done, f"the delivery of {request_id} done")
    found = await tables.delivery(request_id)
    assert found is not None
    return found


async def audit(store: SqlStore, request_id: str = "r1") -> list[AuditEntry]:
    """The request's webhook audit lines, oldest first."""
    lines = await store.list_audit(request_id=request_id)
    return [line for line in reversed(lines) if line.action.startswith("webhook.")]


def signed(received: Received) -> bool:
    timestamp = received.headers["X-Hitl-Timestamp"]
    mac = hmac.new(SECRET.encode(), timestamp.encode() + b"." + received.body, hashlib.sha256)
    return hmac.compare_digest(received.headers["X-Hitl-Signature"], f"sha256={mac.hexdigest()}")


async def test_a_settle_is_posted_signed_and_audited(
    store: SqlStore, receiver: Receiver, make: Make
) -> None:
    webhooks = make()
    await webhooks.start()
    await webhooks.enqueue(BODY, asked(receiver.url))

    delivery = await finished(store)
    assert delivery.outcome == "delivered (204)" and delivery.attempts == 1
    (got,) = receiver.got
    assert got.path == "/hook?signed=yes"
    assert got.headers["Content-Type"] == "application/json"
    assert abs(int(got.headers["X-Hitl-Timestamp"]) - time.time()) < 60
    assert signed(got)
    assert got.headers["X-Hitl-Delivery"] == delivery.id
    assert json.loads(got.body) == BODY
    assert got.body.decode() == delivery.body  # the exact JSON stored is the JSON sent

    (line,) = await audit(store)
    assert line.action == "webhook.delivered" and line.request_id == "r1"
    host = receiver.base.removeprefix("http://")
    assert line.detail == {"host": host, "attempt": 1, "delivery": delivery.id,
                           "requester": "ci-agent", "status": 204}  # fmt: skip


async def test_a_forged_signature_would_not_verify(receiver: Receiver, make: Make) -> None:
    """The check above would catch a wrong key or a body signed other than as sent."""
    webhooks = make()
    await webhooks.start()
    await webhooks.enqueue(BODY, asked(receiver.url))

    async def arrived() -> bool:
        return bool(receiver.got)

    await until(arrived, "the delivery")
    got = receiver.got[0]
    tampered = Received(got.path, got.headers, got.body.replace(b"true", b"false"), got.at)
    assert signed(got) and not signed(tampered)


async def test_retried_after_failures_then_delivered(
    store: SqlStore, receiver: Receiver, make: Make
) -> None:
    receiver.failures = 2
    webhooks = make()
    await webhooks.start()
    await webhooks.enqueue(BODY, asked(receiver.url))

    delivery = await finished(store)
    assert delivery.outcome == "delivered (204)" and delivery.attempts == 3
    assert len(receiver.got) == 3
    assert {got.headers["X-Hitl-Delivery"] for got in receiver.got} == {delivery.id}
    assert all(signed(got) for got in receiver.got)
    gaps = [later.at - earlier.at for earlier, later in pairwise(receiver.got)]
    assert gaps[0] >= 0.05 * 0.8 - 0.005 and gaps[1] >= 0.1 * 0.8 - 0.005  # backoff, doubled

    lines = await audit(store)
    assert [(line.action, line.detail["attempt"]) for line in lines] == [
        ("webhook.failed", 1), ("webhook.failed", 2), ("webhook.delivered", 3),
    ]  # fmt: skip
    assert lines[0].detail["status"] == 500


async def test_gives_up_after_give_up_after(
    store: SqlStore, receiver: Receiver, make: Make
) -> None:
    receiver.failures = 10**6
    webhooks = make(give_up_after=0.3)
    await webhooks.start()
    await webhooks.enqueue(BODY, asked(receiver.url))

    delivery = await finished(store)
    assert delivery.outcome is not None and delivery.outcome.startswith("gave up: no 2xx")
    assert len(receiver.got) == delivery.attempts >= 3
    assert delivery.done_at is not None  # tried until the end, measured from the first try:
    assert (delivery.done_at - delivery.first_at).total_seconds() >= 0.3
    lines = await audit(store)
    assert [line.action for line in lines] == [
        *["webhook.failed"] * delivery.attempts,
        "webhook.gave_up",
    ]
    assert lines[-1].detail["attempt"] == delivery.attempts
    assert "status 500" in lines[-1].detail["reason"]


async def test_connection_errors_and_redirects_are_failures(
    store: SqlStore, receiver: Receiver, make: Make
) -> None:
    with socket.socket() as unused:  # a port nobody listens on
        unused.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{unused.getsockname()[1]}/hook?key=hidden"
    webhooks = make(give_up_after=0.1)
    await webhooks.start()
    await webhooks.enqueue(BODY, asked(closed, "r1"))
    await webhooks.enqueue(BODY, asked(f"{receiver.base}/moved", "r2"))

    for request_id in ("r1", "r2"):
        assert (await finished(store, request_id)).outcome.startswith("gave up")  # type: ignore[union-attr]
    refused = (await audit(store, "r1"))[0]
    assert refused.action == "webhook.failed" and "error" in refused.detail
    assert "hidden" not in json.dumps(refused.detail)  # the query string is never said
    moved = (await audit(store, "r2"))[0]
    assert moved.action == "webhook.failed" and moved.detail["status"] == 302
    assert {got.path for got in receiver.got} == {"/moved"}  # the redirect was not followed


async def test_two_workers_make_one_delivery_per_request(
    store: SqlStore, receiver: Receiver, make: Make
) -> None:
    first, second = make(), make()
    await asyncio.gather(first.start(), second.start())
    ids = [f"r{n}" for n in range(12)]
    await asyncio.gather(*(
        webhooks.enqueue({**BODY, "id": request_id}, asked(receiver.url, request_id))
        for request_id in ids for webhooks in (first, second)
    ))  # fmt: skip

    for request_id in ids:
        assert (await finished(store, request_id)).attempts == 1
    assert sorted(json.loads(got.body)["id"] for got in receiver.got) == sorted(ids)
    for request_id in ids:
        assert [line.action for line in await audit(store, request_id)] == ["webhook.delivered"]


async def test_a_dead_workers_rows_are_sent_by_another(
    store: SqlStore, receiver: Receiver, make: Make
) -> None:
    # One died in the middle of an attempt: its lease lapses soon.
    await make().enqueue({**BODY, "id": "r2"}, asked(receiver.url, "r2"))
    now = datetime.now(UTC)
    tables = WebhookTables(store)
    (leased,) = await tables.claim_due("dead", now, now + timedelta(seconds=0.3), 10)
    assert leased.request_id == "r2"
    dead = make()  # another enqueued, and died before its sender ever ran
    await dead.enqueue(BODY, asked(receiver.url, "r1"))
    await dead.close()

    alive = make()
    await alive.start()
    assert (await finished(store, "r1")).attempts == 1
    adopted = await finished(store, "r2")
    assert adopted.attempts == 2 and adopted.outcome == "delivered (204)"
    assert (datetime.now(UTC) - now).total_seconds() >= 0.3  # not before the lease lapsed
    assert sorted(json.loads(got.body)["id"] for got in receiver.got) == ["r1", "r2"]


async def test_a_refused_address_is_given_up_at_once(
    store: SqlStore, receiver: Receiver, make: Make
) -> None:
    """The URL was accepted once (or its name resolved elsewhere then): at delivery its address
    is checked again, and a refusal is not retried."""
    webhooks = make(allow_private=False)
    await webhooks.start()
    await webhooks.enqueue(BODY, asked(receiver.url))

    delivery = await finished(store)
    assert delivery.attempts == 1 and receiver.got == []
    (line,) = await audit(store)
    assert line.action == "webhook.gave_up"
    assert line.detail["reason"] == "127.0.0.1 is a loopback address"


async def test_a_gone_token_drops_its_deliveries(
    store: SqlStore, receiver: Receiver, make: Make
) -> None:
    webhooks = make()
    await webhooks.start()
    await webhooks.enqueue(BODY, asked(receiver.url, requester="revoked-agent"))

    delivery = await finished(store)
    assert delivery.outcome == "gave up: the token is gone (revoked or deleted)"
    assert receiver.got == []
    (line,) = await audit(store)
    assert line.action == "webhook.gave_up" and line.detail["attempt"] == 1


async def test_audit_lines_never_hold_the_secret_or_the_body(
    store: SqlStore, receiver: Receiver, make: Make
) -> None:
    receiver.failures = 1
    webhooks = make()
    await webhooks.start()
    await webhooks.enqueue({**BODY, "answer": "the-answer-text"}, asked(receiver.url))

    await finished(store)
    said = json.dumps([line.detail for line in await audit(store)])
    assert "webhook.delivered" in [line.action for line in await audit(store)]
    for secret in (SECRET, "the-answer-text", "signed=yes"):
        assert secret not in said


async def test_requests_without_a_callback_url_send_nothing(store: SqlStore, make: Make) -> None:
    webhooks = make()
    await webhooks.enqueue(BODY, Asked("r1", "ci-agent", "slack:C1", datetime.now(UTC)))
    assert await WebhookTables(store).delivery("r1") is None


async def test_a_tokens_queue_is_capped_and_what_is_dropped_is_audited(
    store: SqlStore, receiver: Receiver, make: Make
) -> None:
    webhooks = make(queue_cap=2)  # not started yet: the deliveries wait
    for n in (1, 2, 3):
        await webhooks.enqueue({**BODY, "id": f"r{n}"}, asked(receiver.url, f"r{n}"))
    await webhooks.enqueue(BODY, asked(receiver.url, "r1"))  # again (another worker): no drop
    await webhooks.enqueue(BODY, asked(receiver.url, "r4", requester="other-agent"))
    tables = WebhookTables(store)
    assert await tables.delivery("r3") is None
    assert all([await tables.delivery(r) for r in ("r1", "r2", "r4")])  # another token's too
    (line,) = await audit(store, "r3")
    assert line.action == "webhook.dropped" and line.detail["requester"] == "ci-agent"
    assert line.detail["reason"] == "ci-agent has 2 webhooks not delivered yet"
    assert line.detail["host"] == receiver.base.removeprefix("http://")
    assert await audit(store, "r1") == []

    await webhooks.start()  # once some are delivered, the token has room again
    await finished(store, "r1")
    await finished(store, "r2")
    await webhooks.enqueue({**BODY, "id": "r5"}, asked(receiver.url, "r5"))
    assert (await finished(store, "r5")).outcome == "delivered (204)"


async def test_a_failing_host_is_backed_off_without_delaying_others(
    store: SqlStore, receiver: Receiver, other_receiver: Receiver, make: Make
) -> None:
    receiver.failures = 10**6
    webhooks = make(limits=Limits(failures_to_open=2, first_open=60.0), first_retry=0.01)
    await webhooks.start()
    await webhooks.enqueue(BODY, asked(receiver.url, "r1"))
    tables = WebhookTables(store)

    async def opened() -> bool:  # two failures in a row: the retry waits for the circuit
        found = await tables.delivery("r1")
        return found is not None and found.next_at > datetime.now(UTC) + timedelta(seconds=30)

    await until(opened, "r1 postponed by its host's circuit")
    await webhooks.enqueue({**BODY, "id": "r2"}, asked(receiver.url, "r2"))
    await webhooks.enqueue({**BODY, "id": "r3"}, asked(other_receiver.url, "r3"))
    assert (await finished(store, "r3")).outcome == "delivered (204)"  # another host: at once

    postponed = await tables.delivery("r2")  # the same host: postponed, not sent, not lost
    assert postponed is not None and postponed.done_at is None and postponed.attempts == 0
    assert postponed.next_at > datetime.now(UTC) + timedelta(seconds=30)
    assert len(receiver.got) == 2 and [json.loads(g.body)["id"] for g in receiver.got] == ["r1"] * 2


PRIVATE_URLS = [
    ("http://127.0.0.1:8080/hook", "127.0.0.1 is a loopback address"),
    ("http://10.1.2.3/hook", "10.1.2.3 is a private address"),
    ("http://169.254.169.254/latest", "169.254.169.254 is a link-local address"),
    ("http://[::1]:8080/hook", "::1 is a loopback address"),
    ("http://[::ffff:10.0.0.1]/hook", "::ffff:10.0.0.1 is a private address"),
    ("http://0.0.0.0/hook", "0.0.0.0 is an unspecified address"),
    ("http://224.0.0.1/hook", "224.0.0.1 is a multicast address"),
    ("http://localhost:8080/hook", "localhost resolves to "),
]


@pytest.mark.parametrize(("url", "reason"), PRIVATE_URLS)
async def test_check_url_refuses_private_addresses_unless_allowed(url: str, reason: str) -> None:
    refused = await check_url(url, allow_private=False)
    assert refused is not None and refused.startswith(reason)
    assert await check_url(url, allow_private=True) is None


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://8.8.8.8/hook", "only http and https URLs are allowed"),
        ("https://user:pass@8.8.8.8/hook", "the URL must not carry a user name or password"),
        ("https://token@8.8.8.8/hook", "the URL must not carry a user name or password"),
        ("https:///hook", "the URL has no host"),
        ("https://8.8.8.8:99999/hook", "not a valid URL (Port out of range 0-65535)"),
    ],
)
async def test_check_url_refuses_what_is_not_a_plain_web_url(url: str, reason: str) -> None:
    assert await check_url(url, allow_private=False) == reason
    assert await check_url(url, allow_private=True) == reason


async def test_check_url_accepts_public_addresses() -> None:
    assert await check_url("https://8.8.8.8/hook?x=1", allow_private=False) is None
    assert await check_url("http://[2606:4700:4700::1111]:8443/", allow_private=False) is None


async def test_the_resolver_refuses_a_name_resolving_to_a_private_address() -> None:
    """What the sender connects with: a name is checked on the addresses it resolves to at
    connect time, not only when the request was made (DNS rebinding)."""
    with pytest.raises(RefusedUrl, match=r"localhost resolves to .*, a loopback address"):
        await CheckedResolver(allow_private=False).resolve("localhost", 80)
    assert await CheckedResolver(allow_private=True).resolve("localhost", 80)


async def test_a_traced_attempt_sends_its_traceparent_and_is_a_client_span(
    store: SqlStore, receiver: Receiver, make: Make
) -> None:
    exporter = InMemorySpanExporter()
    tracing = Tracing(exporter, worker="w", batch=False)
    webhooks = make(trace_configs=[tracing.client_trace()])
    await webhooks.start()
    await webhooks.enqueue(BODY, asked(receiver.url))
    await finished(store)
    (got,) = receiver.got
    (span,) = [s for s in exporter.get_finished_spans() if s.name == "POST 127.0.0.1/hook"]
    assert span.context is not None and span.attributes is not None
    assert got.headers["traceparent"].split("-")[1:3] == [
        f"{span.context.trace_id:032x}", f"{span.context.span_id:016x}",
    ]  # fmt: skip
    assert span.attributes["http.response.status_code"] == 204
    assert span.attributes["url.full"] == f"{receiver.base}/hook"  # no query: it may hold secrets
    assert signed(got)  # the header is not part of what is signed
    await tracing.close()
