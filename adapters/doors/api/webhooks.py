"""Signed webhooks: a door request's settle POSTed to the callback URL its requester gave.

Why a table and not a task: a callback must survive the worker that heard the settle. The
settle's hook (`Doors.on_settled`) writes one delivery row per request (a unique key, so two
workers hearing the same settle make one), and a sender on every worker's event loop claims
due rows one attempt at a time with a compare-and-set lease (bot/store/webhooks.py): two
workers never send the same attempt at once, and a row left by a dead worker is sent by another
once its lease lapses. Delivery is at least once (a worker dying between the receiver's 2xx and
writing it down sends again): receivers deduplicate on `X-Hitl-Delivery`, the same on every
attempt of a delivery.

The receiver checks `X-Hitl-Signature: sha256=<hex HMAC-SHA256 of "{X-Hitl-Timestamp}.{body}">`
keyed with its token's webhook secret, and refuses old timestamps (replays). A 2xx is delivered;
anything else (a status, a redirect: none is followed, a timeout, a refused connection) is
retried with exponential backoff and jitter until `give_up_after` seconds after the first
attempt. Each delivery, failure and giving up is an audit line naming the URL's host, never the
URL's path or query, the body or the secret.

Callback URLs are checked for SSRF at create time and again at delivery
(adapters/doors/api/callback_urls.py).

A2A push notifications (adapters/doors/a2a/push.py) are deliveries too (`enqueue_push`): one per
request and push config, their body the A2A task, signed, retried and checked alike, the
config's token sent as `X-A2A-Notification-Token` (never in a log or an audit line).

One token's receiver never delays another's (adapters/doors/api/webhook_traffic.py): attempts in
flight are limited per destination host and per token, a host that keeps failing or hanging
has its deliveries postponed while its circuit is open, and a token has at most `queue_cap`
deliveries not done: a settle beyond that is dropped, and its drop is an audit line
(`webhook.dropped`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import random
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from adapters.doors.api.callback_urls import CheckedResolver, RefusedUrl, checked_target
from adapters.doors.api.webhook_traffic import Limits, Traffic
from bot.failures import RepeatedFailures, first_line
from bot.records import Asked, AuditEntry
from bot.store.push_configs import PushConfig
from bot.store.webhooks import Added, WebhookDelivery, WebhookTables

log = logging.getLogger(__name__)

SecretFor = Callable[[str], Awaitable[str | None]]  # a token's webhook secret; None: gone
MAX_IN_FLIGHT = 16  # attempts one worker sends at once
DUE_READ = 200  # due rows read a claim, to choose among (at most 16 a token: webhook_rows)
DEFAULT_LIMITS = Limits()
QUEUE_CAP = 1000  # deliveries not done a token may have; a settle beyond is dropped, audited
LEASE_MARGIN = 30.0  # seconds an attempt's lease outlasts its timeout (writing its outcome)
RECHECK = 5.0  # seconds between looks for rows other workers left (they cannot wake this one)
RETRY_DELAY = 1.0  # seconds before the next round after one failed (the database unavailable)
REQUESTER_GONE = "the token is gone (revoked or deleted)"
NOTIFICATION_TOKEN = "X-A2A-Notification-Token"  # noqa: S105 (a header's name)
_URLS = re.compile(r"\w+://\S+")  # aiohttp's error messages may quote the full URL


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """`X-Hitl-Signature` of `body` sent at `timestamp` (unix seconds, as sent)."""
    signed = timestamp.encode() + b"." + body
    return "sha256=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def host_of(url: str) -> str:
    """The host (and port, if given) of `url`: what audit lines say of it."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    host = f"[{host}]" if ":" in host else host
    with contextlib.suppress(ValueError):
        if parts.port is not None:
            return f"{host}:{parts.port}"
    return host


@dataclass(frozen=True, slots=True)
class Sent:
    """What came of one attempt: the receiver's status, or why there was none (`error`, one
    line; retried), or why it was not sent and will not be (`refused`)."""

    status: int | None = None
    error: str | None = None
    refused: str | None = None

    @property
    def delivered(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def failure(self) -> dict[str, Any]:
        return {"status": self.status} if self.status is not None else {"error": self.error}


class Webhooks:
    """Deliveries of door requests' settles: `enqueue` is the `Doors.on_settled` hook; `start`
    runs the sender on the event loop, `close` stops it (see the module's docstring)."""

    def __init__(
        self,
        store: WebhookTables,
        secret_for: SecretFor,
        *,
        allow_private: bool = False,
        give_up_after: float = 3600.0,
        first_retry: float = 1.0,
        max_retry: float = 300.0,
        timeout: float = 10.0,
        limits: Limits = DEFAULT_LIMITS,
        queue_cap: int = QUEUE_CAP,
        trace_configs: Sequence[aiohttp.TraceConfig] = (),
        counted: Callable[[str], None] | None = None,
    ) -> None:
        """`counted` is told the outcome of each attempt this worker finished (`delivered`,
        `failed`: to be retried, `gave_up`) and of each delivery dropped (`dropped`): the
        metrics (adapters/ops/metrics.py)."""
        self.store = store
        self.counted = counted
        self.secret_for = secret_for
        self.allow_private = allow_private
        self.give_up_after = give_up_after
        self.first_retry = first_retry
        self.max_retry = max_retry
        self.timeout = timeout
        self.queue_cap = queue_cap
        self.traffic = Traffic(limits)
        self.worker = f"webhooks-{secrets.token_hex(6)}"  # the holder of this sender's leases
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._session: aiohttp.ClientSession | None = None
        self._trace_configs = list(trace_configs)  # adapters/ops/tracing.py: traceparent sent
        self._attempts: set[asyncio.Task[None]] = set()
        # A database that is down fails every round alike: one line, not a traceback each.
        self._failures = RepeatedFailures(log)

    async def enqueue(self, body: dict[str, Any], asked: Asked) -> None:
        """Write the request's delivery (once per request, whoever enqueues it) and wake the
        sender; nothing for a request without a callback URL. Beyond its token's `queue_cap`,
        the delivery is dropped and the drop audited."""
        if asked.callback_url is None:
            return
        raw = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
        await self._add(asked.request_id, asked.requester, asked.callback_url, raw)

    async def enqueue_push(self, config: PushConfig, body: str) -> None:
        """Write an A2A push notification's delivery of `body` (the task, as A2A serializes
        it) to `config` (once per request and config), sent as a webhook is (signed, retried,
        checked), the config's token in X-A2A-Notification-Token, its authentication (if any) in
        Authorization."""
        await self._add(config.request_id, config.requester, config.url, body,
                        push_config=config.id, push_token=config.token,
                        push_authorization=config.authorization)  # fmt: skip

    async def _add(self, request_id: str, requester: str, url: str, raw: str, **push: Any) -> None:
        now = datetime.now(UTC)
        delivery = WebhookDelivery(
            id=secrets.token_hex(12), request_id=request_id, requester=requester,
            url=url, body=raw, attempts=0, first_at=now, next_at=now, **push,
        )  # fmt: skip
        why = f"{requester[:100]} has {self.queue_cap} webhooks not delivered yet"
        dropped = _line("webhook.dropped", delivery, now, reason=why)
        added = await self.store.add(delivery, self.queue_cap, dropped)
        if added is Added.ADDED:
            self._wake.set()
        elif added is Added.DROPPED:
            log.warning("webhook of request %s dropped: %s", request_id, why)
            self._count("dropped")

    async def start(self) -> None:
        """Send what is due (rows dead workers left included), then keep sending."""
        if self._task is not None:
            return
        connector = aiohttp.TCPConnector(resolver=CheckedResolver(self.allow_private))
        timeout = aiohttp.ClientTimeout(total=self.timeout)
        self._session = aiohttp.ClientSession(
            connector=connector, timeout=timeout, trace_configs=self._trace_configs
        )
        self._task = asyncio.create_task(self._run(), name="hitl-webhooks")

    async def close(self) -> None:
        """Stop sending; attempts in flight are cancelled and given back (due again)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        attempts = list(self._attempts)
        for attempt in attempts:
            attempt.cancel()
        await asyncio.gather(*attempts, return_exceptions=True)
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    # -- the sender ---------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            self._wake.clear()  # before the round: a wake-up during it is not lost
            try:
                delay = await self._round()
                self._failures.recovered("sending webhooks")
            except Exception as err:
                self._failures.failed("sending webhooks", err)
                delay = RETRY_DELAY
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._wake.wait()

    async def _round(self) -> float:
        """Claim what is due and start sending it; the seconds until more may be due."""
        room = MAX_IN_FLIGHT - len(self._attempts)
        if room <= 0:
            return RECHECK  # an attempt that ends wakes the loop
        now = datetime.now(UTC)
        lease = now + timedelta(seconds=self.timeout + LEASE_MARGIN)
        choose = self.traffic.chooser(room, now, self.give_up_after)
        skipped = self.traffic.full_tokens()  # their rows are not even read
        claimed = await self.store.claim_due(self.worker, now, lease, DUE_READ, choose, skipped)
        for delivery in claimed:
            self._spawn(delivery)
        if len(claimed) == room:
            return 0.0  # more may be due
        # What is due and left unclaimed waits for a host's or token's attempt to end (which
        # wakes this loop): the wait is until what is not due yet.
        due = await self.store.next_due(after=now)
        if due is None:
            return RECHECK
        seconds = (due - datetime.now(UTC)).total_seconds()
        return min(max(seconds, 0.01), RECHECK)  # the floor: never a busy loop

    def _spawn(self, delivery: WebhookDelivery) -> None:
        task = asyncio.create_task(self._attempt(delivery), name="hitl-webhook")
        self._attempts.add(task)
        self.traffic.started(delivery)
        task.add_done_callback(lambda ended: self._ended(ended, delivery))

    def _ended(self, task: asyncio.Task[None], delivery: WebhookDelivery) -> None:
        self._attempts.discard(task)
        self.traffic.ended(delivery)
        self._wake.set()  # room for another, and perhaps a retry sooner than the loop's sleep

    async def _attempt(self, delivery: WebhookDelivery) -> None:
        try:
            sent = await self._send(delivery)
            done, audit = self._outcome(delivery, sent, datetime.now(UTC))
            if not await self.store.finish(done, self.worker, audit):
                log.info("webhook %s: its lease lapsed; another worker has it", delivery.id)
            else:
                self._count(audit[-1].action.removeprefix("webhook."))
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):  # else its lease lapses: the same, later
                await self.store.release(delivery, self.worker)
            raise
        except Exception as err:  # the store: the row stays leased, and is retried once it lapses
            self._failures.failed("delivering a webhook", err)

    def _count(self, outcome: str) -> None:
        if self.counted is not None:
            self.counted(outcome)

    async def _send(self, delivery: WebhookDelivery) -> Sent:
        """One POST of the delivery, signed with its token's secret now (a rotated secret
        signs the retries)."""
        secret = await self.secret_for(delivery.requester)
        if secret is None:
            return Sent(refused=REQUESTER_GONE)
        assert self._session is not None, "start() first"
        raw = delivery.body.encode()
        timestamp = str(int(time.time()))
        headers = {
            "Content-Type": "application/json", "X-Hitl-Timestamp": timestamp,
            "X-Hitl-Signature": signature(secret, timestamp, raw), "X-Hitl-Delivery": delivery.id,
        }  # fmt: skip
        if delivery.push_token:  # A2A's: the receiver tells this task's notifications by it
            headers[NOTIFICATION_TOKEN] = delivery.push_token
        if delivery.push_authorization:  # A2A's AuthenticationInfo: the receiver's credentials
            headers["Authorization"] = delivery.push_authorization
        try:
            checked_target(delivery.url, self.allow_private)  # an IP literal is not resolved: here
            async with self._session.post(
                delivery.url, data=raw, headers=headers, allow_redirects=False
            ) as response:
                return Sent(status=response.status)
        except RefusedUrl as err:
            return Sent(refused=str(err))
        except (aiohttp.ClientError, OSError) as err:  # TimeoutError is an OSError
            line = _URLS.sub(host_of(delivery.url), first_line(err))
            return Sent(error=line[:300])

    def _outcome(
        self, delivery: WebhookDelivery, sent: Sent, now: datetime
    ) -> tuple[WebhookDelivery, list[AuditEntry]]:
        """The delivery after this attempt, and its audit lines."""
        if sent.delivered:
            self.traffic.delivered(delivery.url)
            done = replace(delivery, done_at=now, outcome=f"delivered ({sent.status})")
            return done, [_line("webhook.delivered", delivery, now, status=sent.status)]
        if sent.refused is not None:
            return self._give_up(delivery, now, sent.refused, [])
        failed = _line("webhook.failed", delivery, now, **sent.failure)
        reopens = self.traffic.failed(delivery.url, now)
        deadline = delivery.first_at + timedelta(seconds=self.give_up_after)
        if now >= deadline:
            why = f"status {sent.status}" if sent.status is not None else sent.error
            tried = f"{delivery.attempts} attempts in {self.give_up_after:g} s"
            reason = f"no 2xx after {tried} (last: {why})"
            return self._give_up(delivery, now, reason, [failed])
        retry = max(now + self._backoff(delivery.attempts), reopens or now)  # its circuit's
        return replace(delivery, next_at=min(retry, deadline)), [failed]  # a last try at the end

    def _give_up(
        self, delivery: WebhookDelivery, now: datetime, reason: str, audit: list[AuditEntry]
    ) -> tuple[WebhookDelivery, list[AuditEntry]]:
        log.info("webhook %s of request %s: gave up: %s", delivery.id, delivery.request_id, reason)
        done = replace(delivery, done_at=now, outcome=f"gave up: {reason}")
        return done, [*audit, _line("webhook.gave_up", delivery, now, reason=reason)]

    def _backoff(self, attempt: int) -> timedelta:
        base = min(self.max_retry, self.first_retry * 2 ** min(attempt - 1, 32))
        # Jitter: deliveries that failed together (their receiver down) do not retry in step.
        jittered = base * random.uniform(0.8, 1.2)  # noqa: S311 (timing, not a secret)
        return timedelta(seconds=min(self.max_retry, jittered))


def _line(action: str, delivery: WebhookDelivery, at: datetime, **detail: Any) -> AuditEntry:
    """An audit line of an attempt: the host only (a URL's path and query may hold secrets)."""
    said = {"host": host_of(delivery.url), "attempt": delivery.attempts, "delivery": delivery.id,
            "requester": delivery.requester, **detail}  # fmt: skip
    if delivery.push_config:  # never its token
        said["push_config"] = delivery.push_config
    return AuditEntry(action, at, delivery.request_id, None, said)
