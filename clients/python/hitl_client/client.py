"""`HitlClient`: the bridge's HTTP API (/api/v1) from Python.

The calls of the API (create, get, wait, cancel, list) and the human tools on them: each
typed helper asks, waits until the request settles, and returns the answer (parsed with the
tool's answer model of bot/human_tools/models.py) or raises the error of how it ended otherwise.
Every call is retried on transient failures (hitl_client/connection.py); a create always sends
an idempotency key (the caller's, or a uuid4 made once per `create`) so its retries
never make a second request.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, Literal, Self, TypeVar
from urllib.parse import quote

import httpx2
from pydantic import BaseModel, ValidationError

from bot.human_tools.models import (
    AskUserQuestionAnswer,
    ConfirmActionAnswer,
    DataField,
    RequestApprovalAnswer,
    SelectOptionAnswer,
    UploadFileAnswer,
)
from hitl_client.connection import Connection
from hitl_client.errors import HitlError, raise_unless_answered
from hitl_client.request_info import RequestInfo, RequestPage, Status
from hitl_client.retries import Retries

MAX_WAIT = 60.0  # seconds: the longest long poll the API serves
MIN_POLL_GAP = 1.0  # seconds between polls at least, should a server ignore `wait`
WITHDRAW_WITHIN = 5.0  # seconds a cancelled helper spends withdrawing its request

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)
Page = list[RequestInfo]  # named here: inside HitlClient, `list` is the method


class HitlClient:
    """The bridge's HTTP API. Use it as an async context manager (or call `aclose`):

        async with HitlClient("https://hitl.example.com", token) as hitl:
            region = await hitl.ask("Which region?", "slack:U0123ABCD")

    `timeout` bounds each HTTP exchange (a long poll gets its `wait` on top); `retries` and
    `backoff` (seconds, doubling) govern retries; `long_poll` is the step of `wait` (lower it
    behind a proxy that drops idle connections sooner). `transport`: httpx2's, for tests or
    a proxy.
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 30.0,
        transport: httpx2.AsyncBaseTransport | None = None,
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
        body: dict[str, Any] = {
            "tool": tool,
            "arguments": dict(arguments),
            "to": to,
            "idempotency_key": str(uuid.uuid4()) if idempotency_key is None else idempotency_key,
        }
        if timeout_seconds is not None:
            body["timeout_seconds"] = timeout_seconds
        if callback_url is not None:
            body["callback_url"] = callback_url
        return _read(RequestInfo, await self._bridge.call("POST", "requests", json=body))

    async def get(self, request_id: str, wait: float = 0) -> RequestInfo:
        """The request; with `wait` (seconds, at most 60), once it settles or `wait` passes."""
        if not 0 <= wait <= MAX_WAIT:
            raise ValueError(f"wait must be from 0 to {MAX_WAIT:g} seconds")
        params = {"wait": str(round(wait, 3))} if wait > 0 else None
        sent = self._bridge.call(
            "GET", _path(request_id), params=params, timeout=self._bridge.timeout + wait
        )
        return _read(RequestInfo, await sent)

    async def wait(self, request_id: str, *, timeout: float | None = None) -> RequestInfo:
        """The request once settled, long polling in steps of `long_poll`; after `timeout`
        seconds (None: no limit), the request as it then is, pending perhaps."""
        clock = asyncio.get_running_loop().time
        deadline = None if timeout is None else clock() + max(timeout, 0.0)
        while True:
            step = self._long_poll if deadline is None else min(self._long_poll, deadline - clock())
            asked = clock()
            info = await self.get(request_id, wait=max(step, 0.0))
            if info.settled or (deadline is not None and clock() >= deadline):
                return info
            # A server (or a proxy) that answers long polls at once must not make this spin.
            gap = min(MIN_POLL_GAP, step) - (clock() - asked)
            if gap > 0:
                await asyncio.sleep(gap)

    async def cancel(self, request_id: str) -> RequestInfo:
        """Withdraw a pending request; a settled one comes back as it settled."""
        return _read(RequestInfo, await self._bridge.call("DELETE", _path(request_id)))

    async def list(
        self,
        status: Status | None = None,
        to: str | None = None,
        since: datetime | str | None = None,
        limit: int = 50,
    ) -> AsyncIterator[Page]:
        """This token's requests, newest first, a page (of at most `limit`) at a time."""
        query: dict[str, str] = {"limit": str(limit)}
        if status is not None:
            query["status"] = status
        if to is not None:
            query["to"] = to
        if since is not None:
            query["since"] = since.isoformat() if isinstance(since, datetime) else since
        while True:
            page = _read(RequestPage, await self._bridge.call("GET", "requests", params=query))
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
        answered = await self._answer(
            "AskUserQuestion", {"question": question}, to, _model(AskUserQuestionAnswer),
            timeout_seconds, idempotency_key,
        )  # fmt: skip
        return answered.answer

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
        return await self._answer(
            "requestApproval", {"action": action, "reason": reason}, to,
            _model(RequestApprovalAnswer), timeout_seconds, idempotency_key,
        )  # fmt: skip

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
        return await self._answer(
            "selectOption", {"question": question, "options": list(options)}, to,
            _model(SelectOptionAnswer), timeout_seconds, idempotency_key,
        )  # fmt: skip

    async def collect_data(
        self,
        fields: Sequence[DataField | Mapping[str, Any]],
        to: str,
        *,
        timeout_seconds: float | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """collectUserData: the filled-in form, {field name: value}, as the bridge checked it."""
        return await self._answer(
            "collectUserData", {"fields": [_field(f) for f in fields]}, to, _form,
            timeout_seconds, idempotency_key,
        )  # fmt: skip

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
        return await self._answer(
            "uploadFile", {"purpose": purpose, "acceptedTypes": list(accepted_types)}, to,
            _model(UploadFileAnswer), timeout_seconds, idempotency_key,
        )  # fmt: skip

    async def confirm_action(
        self,
        title: str,
        message: str,
        severity: Literal["info", "warning", "danger"],
        to: str,
        *,
        timeout_seconds: float | None = None,
        idempotency_key: str | None = None,
    ) -> bool:
        """confirmAction: whether the person confirmed."""
        confirmed = await self._answer(
            "confirmAction", {"title": title, "message": message, "severity": severity}, to,
            _model(ConfirmActionAnswer), timeout_seconds, idempotency_key,
        )  # fmt: skip
        return confirmed.confirmed

    async def _answer(
        self,
        tool: str,
        arguments: dict[str, Any],
        to: str,
        parse: Callable[[Any], T],
        timeout_seconds: float | None,
        idempotency_key: str | None,
    ) -> T:
        """Ask, wait, and return the answer parsed; the error of any other end."""
        info = await self.create(
            tool, arguments, to, timeout_seconds=timeout_seconds, idempotency_key=idempotency_key
        )
        try:
            info = await self.wait(info.id)
        except asyncio.CancelledError:
            # Whoever waited gave up: withdraw the question rather than leave a person
            # answering it for nobody.
            with contextlib.suppress(HitlError, TimeoutError):
                async with asyncio.timeout(WITHDRAW_WITHIN):
                    await self.cancel(info.id)
            raise
        raise_unless_answered(info)
        try:
            return parse(info.answer)
        except (ValidationError, TypeError) as err:
            raise HitlError(f"request {info.id}: its answer is not a {info.tool} answer") from err


def _path(request_id: str) -> str:
    # Quoted whole: an id with a slash or dots must not reach another route.
    return f"requests/{quote(request_id, safe='')}"


def _read(model: type[M], body: Any) -> M:
    try:
        return model.model_validate(body)
    except ValidationError as err:
        raise HitlError(f"the bridge's answer is not a {model.__name__}: {err}") from err


def _model(model: type[M]) -> Callable[[Any], M]:
    return model.model_validate


def _form(answer: Any) -> dict[str, Any]:
    if not isinstance(answer, dict):
        raise TypeError("a form's answer is an object")
    return answer


def _field(spec: DataField | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(spec, DataField):
        dumped: dict[str, Any] = spec.model_dump(mode="json", exclude_none=True)
        return dumped
    return dict(spec)
