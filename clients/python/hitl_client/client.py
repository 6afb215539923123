"""`HitlClient`: the bridge's HTTP API (/api/v1) from asyncio (`SyncHitlClient`, sync_client.py,
is the same without it).

The calls of the API (create, get, wait, cancel, list) and the human tools on them: each
typed helper asks, waits until the request settles, and returns the answer (parsed with the
tool's answer model of hitl_client/models.py) or raises the error of how it ended otherwise.
Every call is retried on transient failures (hitl_client/connection.py); a create always sends
an idempotency key (the caller's, or a uuid4 made once per `create`) so its retries
never make a second request.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, Self, TypeVar

import httpx

from hitl_client import calls
from hitl_client.calls import MAX_WAIT, Ask
from hitl_client.connection import Connection
from hitl_client.errors import HitlError
from hitl_client.models import (
    DataField,
    RequestApprovalAnswer,
    SelectOptionAnswer,
    Severity,
    ToolCallReview,
    UploadFileAnswer,
)
from hitl_client.request_info import RequestInfo, RequestPage, Status
from hitl_client.retries import Retries

WITHDRAW_WITHIN = 5.0  # seconds a cancelled helper spends withdrawing its request

T = TypeVar("T")
Page = list[RequestInfo]  # named here: inside HitlClient, `list` is the method


class HitlClient:
    """The bridge's HTTP API. Use it as an async context manager (or call `aclose`):

        async with HitlClient("https://hitl.example.com", token) as hitl:
            region = await hitl.ask("Which region?", "slack:U0123ABCD")

    `timeout` bounds each HTTP exchange (a long poll gets its `wait` on top); `retries` and
    `backoff` (seconds, doubling) govern retries; `long_poll` is the step of `wait` (lower it
    behind a proxy that drops idle connections sooner). `transport`: httpx's, for tests or a
    proxy.
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
        retries: int = 3,
        backoff: float = 0.5,
        long_poll: float = MAX_WAIT,
    ) -> None:
        if not 0 < long_poll <= MAX_WAIT:
            raise ValueError(f"long_poll must be above 0 and at most {MAX_WAIT:g} seconds")
        self._long_poll = long_poll
        self._bridge = Connection(
            base_url, token, timeout=timeout, retries=Retries(retries, backoff), transport=transport
        )

    def __repr__(self) -> str:
        return f"HitlClient({self._bridge.url!r})"

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._bridge.aclose()

    # -- the API ----------------------------------------------------------------------------

    async def create(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        to: str,
        *,
        timeout_seconds: float | None = None,
        idempotency_key: str | None = None,
        callback_url: str | None = None,
    ) -> RequestInfo:
        """Ask `to` with a human tool's call. The same `idempotency_key` (≤200 characters)
        returns the first request made with it; without one, a fresh key covers the retries."""
        body = calls.create_body(
            tool, arguments, to, timeout_seconds=timeout_seconds,
            idempotency_key=idempotency_key, callback_url=callback_url,
        )  # fmt: skip
        return calls.read(RequestInfo, await self._bridge.call("POST", "requests", json=body))

    async def get(self, request_id: str, wait: float = 0) -> RequestInfo:
        """The request; with `wait` (seconds, at most 60), once it settles or `wait` passes."""
        sent = self._bridge.call("GET", calls.request_path(request_id),
                                 params=calls.wait_params(wait),
                                 timeout=self._bridge.timeout + wait)  # fmt: skip
        return calls.read(RequestInfo, await sent)

    async def wait(self, request_id: str, *, timeout: float | None = None) -> RequestInfo:
        """The request once settled, long polling in steps of `long_poll`; after `timeout`
        seconds (None: no limit), the request as it then is, pending perhaps."""
        clock = asyncio.get_running_loop().time
        deadline = None if timeout is None else clock() + max(timeout, 0.0)
        while True:
            step, asked = calls.next_poll(self._long_poll, clock(), deadline), clock()
            info = await self.get(request_id, wait=step)
            if info.settled or (deadline is not None and clock() >= deadline):
                return info
            await asyncio.sleep(calls.poll_gap(step, asked, clock()))

    async def cancel(self, request_id: str) -> RequestInfo:
        """Withdraw a pending request; a settled one comes back as it settled."""
        answer = await self._bridge.call("DELETE", calls.request_path(request_id))
        return calls.read(RequestInfo, answer)

    async def list(
        self,
        status: Status | None = None,
        to: str | None = None,
        since: datetime | str | None = None,
        limit: int = 50,
    ) -> AsyncIterator[Page]:
        """This token's requests, newest first, a page (of at most `limit`) at a time."""
        query = calls.list_query(status, to, since, limit)
        while True:
            body = await self._bridge.call("GET", "requests", params=query)
            page = calls.read(RequestPage, body)
            if page.requests:
                yield page.requests
            if page.next is None:
                return
            query["before"] = page.next

    # -- the human tools: ask, then wait for the answer ---------------------------------------
    # Each takes timeout_seconds (how long the person has) and idempotency_key, as `create`.

    async def ask(
        self,
        question: str,
        to: str,
        *,
        timeout_seconds: float | None = None,
        idempotency_key: str | None = None,
    ) -> str:
        """AskUserQuestion: the person's answer, as they wrote it."""
        return await self._answer(calls.ask_question(question), to, timeout_seconds,
                                  idempotency_key)  # fmt: skip

    async def request_approval(
        self,
        action: str,
        reason: str,
        to: str,
        *,
        timeout_seconds: float | None = None,
        idempotency_key: str | None = None,
    ) -> RequestApprovalAnswer:
        """requestApproval: an approval (a "no" raises RequestDeclined, with its reason)."""
        return await self._answer(calls.request_approval(action, reason), to, timeout_seconds,
                                  idempotency_key)  # fmt: skip

    async def select_option(
        self,
        question: str,
        options: Sequence[str],
        to: str,
        *,
        timeout_seconds: float | None = None,
        idempotency_key: str | None = None,
    ) -> SelectOptionAnswer:
        """selectOption: the chosen option's index (from 0) and text."""
        return await self._answer(calls.select_option(question, options), to, timeout_seconds,
                                  idempotency_key)  # fmt: skip

    async def collect_data(
        self,
        fields: Sequence[DataField | Mapping[str, Any]],
        to: str,
        *,
        timeout_seconds: float | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """collectUserData: the filled-in form, {field name: value}, as the bridge checked it."""
        return await self._answer(calls.collect_data(fields), to, timeout_seconds,
                                  idempotency_key)  # fmt: skip

    async def upload_file(
        self,
        purpose: str,
        to: str,
        accepted_types: Sequence[str] = (),
        *,
        timeout_seconds: float | None = None,
        idempotency_key: str | None = None,
    ) -> UploadFileAnswer:
        """uploadFile (accepted_types: extensions or MIME types): the file's name, size, URL."""
        return await self._answer(calls.upload_file(purpose, accepted_types), to,
                                  timeout_seconds, idempotency_key)  # fmt: skip

    async def confirm_action(
        self,
        title: str,
        message: str,
        severity: Severity,
        to: str,
        *,
        timeout_seconds: float | None = None,
        idempotency_key: str | None = None,
    ) -> bool:
        """confirmAction: whether the person confirmed."""
        return await self._answer(calls.confirm_action(title, message, severity), to,
                                  timeout_seconds, idempotency_key)  # fmt: skip

    async def review_tool_call(
        self,
        tool_name: str,
        arguments: Mapping[str, Any],
        to: str,
        *,
        timeout_seconds: float | None = None,
        idempotency_key: str | None = None,
        description: str | None = None,
        allow: str | None = None,
    ) -> ToolCallReview:
        """approveToolCall: another agent's call of `tool_name` with `arguments`, shown with
        Approve, Edit and Decline (and "approve and allow" for what `allow` names: then the
        review's `grant` says whether the person chose it). `description` is what the person
        reads of the call. A decline is a review too (`approved` false, its reason); an expiry
        or a withdrawal raises as for the other helpers."""
        ask = calls.review_tool_call(tool_name, arguments, description, allow)
        return await self._answer(ask, to, timeout_seconds, idempotency_key)

    async def _answer(
        self, ask: Ask[T], to: str, timeout_seconds: float | None, idempotency_key: str | None
    ) -> T:
        """Ask, wait, and return the answer parsed; the error of any other end."""
        info = await self.create(ask.tool, ask.arguments, to, timeout_seconds=timeout_seconds,
                                 idempotency_key=idempotency_key)  # fmt: skip
        try:
            info = await self.wait(info.id)
        except asyncio.CancelledError:
            # Whoever waited gave up: withdraw the question rather than leave a person
            # answering it for nobody.
            with contextlib.suppress(HitlError, TimeoutError):
                async with asyncio.timeout(WITHDRAW_WITHIN):
                    await self.cancel(info.id)
            raise
        return ask.answer(info)
