"""`SyncHitlClient`: `HitlClient` without asyncio, for scripts and frameworks that block.

The same calls, helpers, answers and errors (what both build and read is hitl_client/calls.py);
each call blocks until the bridge answers, and a helper until the person does. A helper
interrupted (Ctrl-C: KeyboardInterrupt) withdraws its request before the interrupt goes on.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, Self, TypeVar

import httpx

from hitl_client import calls
from hitl_client.calls import MAX_WAIT, Ask
from hitl_client.connection import SyncConnection
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

T = TypeVar("T")
Page = list[RequestInfo]


class SyncHitlClient:
    """The bridge's HTTP API, blocking. Use it as a context manager (or call `close`):

        with SyncHitlClient("https://hitl.example.com", token) as hitl:
            region = hitl.ask("Which region?", "slack:U0123ABCD")

    The options are `HitlClient`'s; `transport` is an `httpx.BaseTransport`.
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        retries: int = 3,
        backoff: float = 0.5,
        long_poll: float = MAX_WAIT,
    ) -> None:
        if not 0 < long_poll <= MAX_WAIT:
            raise ValueError(f"long_poll must be above 0 and at most {MAX_WAIT:g} seconds")
        self._long_poll = long_poll
        self._bridge = SyncConnection(
            base_url, token, timeout=timeout, retries=Retries(retries, backoff), transport=transport
        )

    def __repr__(self) -> str:
        return f"SyncHitlClient({self._bridge.url!r})"

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._bridge.close()

    # -- the API ----------------------------------------------------------------------------

    def create(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        to: str,
        *,
        timeout_seconds: float | None = None,
        idempotency_key: str | None = None,
        callback_url: str | None = None,
    ) -> RequestInfo:
        """As `HitlClient.create`."""
        body = calls.create_body(
            tool, arguments, to, timeout_seconds=timeout_seconds,
            idempotency_key=idempotency_key, callback_url=callback_url,
        )  # fmt: skip
        return calls.read(RequestInfo, self._bridge.call("POST", "requests", json=body))

    def get(self, request_id: str, wait: float = 0) -> RequestInfo:
        """As `HitlClient.get`."""
        answer = self._bridge.call("GET", calls.request_path(request_id),
                                   params=calls.wait_params(wait),
                                   timeout=self._bridge.timeout + wait)  # fmt: skip
        return calls.read(RequestInfo, answer)

    def wait(self, request_id: str, *, timeout: float | None = None) -> RequestInfo:
        """As `HitlClient.wait`."""
        clock = time.monotonic
        deadline = None if timeout is None else clock() + max(timeout, 0.0)
        while True:
            step, asked = calls.next_poll(self._long_poll, clock(), deadline), clock()
            info = self.get(request_id, wait=step)
            if info.settled or (deadline is not None and clock() >= deadline):
                return info
            time.sleep(calls.poll_gap(step, asked, clock()))

    def cancel(self, request_id: str) -> RequestInfo:
        """As `HitlClient.cancel`."""
        return calls.read(RequestInfo, self._bridge.call("DELETE", calls.request_path(request_id)))

    def list(
        self,
        status: Status | None = None,
        to: str | None = None,
        since: datetime | str | None = None,
        limit: int = 50,
    ) -> Iterator[Page]:
        """As `HitlClient.list`: this token's requests, newest first, a page at a time."""
        query = calls.list_query(status, to, since, limit)
        while True:
            page = calls.read(RequestPage, self._bridge.call("GET", "requests", params=query))
            if page.requests:
                yield page.requests
            if page.next is None:
                return
            query["before"] = page.next

    # -- the human tools: ask, then wait for the answer ---------------------------------------

    def ask(
        self, question: str, to: str, *, timeout_seconds: float | None = None,
        idempotency_key: str | None = None,
    ) -> str:  # fmt: skip
        """AskUserQuestion: the person's answer, as they wrote it."""
        return self._answer(calls.ask_question(question), to, timeout_seconds, idempotency_key)

    def request_approval(
        self, action: str, reason: str, to: str, *, timeout_seconds: float | None = None,
        idempotency_key: str | None = None,
    ) -> RequestApprovalAnswer:  # fmt: skip
        """requestApproval: an approval (a "no" raises RequestDeclined, with its reason)."""
        ask = calls.request_approval(action, reason)
        return self._answer(ask, to, timeout_seconds, idempotency_key)

    def select_option(
        self, question: str, options: Sequence[str], to: str, *,
        timeout_seconds: float | None = None, idempotency_key: str | None = None,
    ) -> SelectOptionAnswer:  # fmt: skip
        """selectOption: the chosen option's index (from 0) and text."""
        ask = calls.select_option(question, options)
        return self._answer(ask, to, timeout_seconds, idempotency_key)

    def collect_data(
        self, fields: Sequence[DataField | Mapping[str, Any]], to: str, *,
        timeout_seconds: float | None = None, idempotency_key: str | None = None,
    ) -> dict[str, Any]:  # fmt: skip
        """collectUserData: the filled-in form, {field name: value}, as the bridge checked it."""
        return self._answer(calls.collect_data(fields), to, timeout_seconds, idempotency_key)

    def upload_file(
        self, purpose: str, to: str, accepted_types: Sequence[str] = (), *,
        timeout_seconds: float | None = None, idempotency_key: str | None = None,
    ) -> UploadFileAnswer:  # fmt: skip
        """uploadFile (accepted_types: extensions or MIME types): the file's name, size, URL."""
        ask = calls.upload_file(purpose, accepted_types)
        return self._answer(ask, to, timeout_seconds, idempotency_key)

    def confirm_action(
        self, title: str, message: str, severity: Severity, to: str, *,
        timeout_seconds: float | None = None, idempotency_key: str | None = None,
    ) -> bool:  # fmt: skip
        """confirmAction: whether the person confirmed."""
        ask = calls.confirm_action(title, message, severity)
        return self._answer(ask, to, timeout_seconds, idempotency_key)

    def review_tool_call(
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
        return self._answer(ask, to, timeout_seconds, idempotency_key)

    def _answer(
        self, ask: Ask[T], to: str, timeout_seconds: float | None, idempotency_key: str | None
    ) -> T:
        info = self.create(ask.tool, ask.arguments, to, timeout_seconds=timeout_seconds,
                           idempotency_key=idempotency_key)  # fmt: skip
        try:
            info = self.wait(info.id)
        except KeyboardInterrupt:
            with contextlib.suppress(HitlError):  # withdrawn: nobody waits for the answer
                self.cancel(info.id)
            raise
        return ask.answer(info)
