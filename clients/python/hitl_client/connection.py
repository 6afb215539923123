"""The connection to the bridge's API: one `httpx.AsyncClient` (or `httpx.Client`, for the
sync client), authenticated, retrying.

Every call is retried on connection errors, 5xx and 429 (`Retries`). That is safe for every
call of the API: reads and cancels change nothing twice, and a create always carries an
idempotency key, so a create the bridge recorded before its answer was lost returns that same
request when retried, never a second one.

The token is only ever the Authorization header: never logged, never in an error or a repr
(httpx masks the header in its own reprs).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from hitl_client.errors import HitlApiError, HitlConnectionError
from hitl_client.retries import TRANSIENT, Retries

USER_AGENT = "hitl-bridge-client/0.1"


def _headers(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "Accept": "application/json",
            "User-Agent": USER_AGENT}  # fmt: skip


class Connection:
    """Calls to the API under `base_url` (the bridge's root, or its /api/v1)."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float,
        retries: Retries,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.timeout = timeout
        self.retries = retries
        self._http = httpx.AsyncClient(base_url=_api_root(base_url), headers=_headers(token),
                                       timeout=timeout, transport=transport)  # fmt: skip

    @property
    def url(self) -> str:
        return str(self._http.base_url)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def call(self, method: str, path: str, **sent: Any) -> Any:
        """The JSON body of a 2xx answer to `method path` (`sent`: httpx's request options),
        retrying transient failures; HitlApiError for an HTTP error, HitlConnectionError when
        the bridge stays unreachable."""
        for attempt in range(self.retries.attempts + 1):
            try:
                response = await self._http.request(method, path, **sent)
            except TRANSIENT as err:
                await asyncio.sleep(_after_error(self.retries, attempt, f"{method} {path}", err))
                continue
            delay = _after_answer(self.retries, attempt, response)
            if delay is None:
                return _json(response)
            await asyncio.sleep(delay)
        raise AssertionError("unreachable: the last attempt returns or raises")


class SyncConnection:
    """`Connection` without asyncio: the same calls, retries and errors, blocking."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float,
        retries: Retries,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.timeout = timeout
        self.retries = retries
        self._http = httpx.Client(base_url=_api_root(base_url), headers=_headers(token),
                                  timeout=timeout, transport=transport)  # fmt: skip

    @property
    def url(self) -> str:
        return str(self._http.base_url)

    def close(self) -> None:
        self._http.close()

    def call(self, method: str, path: str, **sent: Any) -> Any:
        """As `Connection.call`."""
        for attempt in range(self.retries.attempts + 1):
            try:
                response = self._http.request(method, path, **sent)
            except TRANSIENT as err:
                time.sleep(_after_error(self.retries, attempt, f"{method} {path}", err))
                continue
            delay = _after_answer(self.retries, attempt, response)
            if delay is None:
                return _json(response)
            time.sleep(delay)
        raise AssertionError("unreachable: the last attempt returns or raises")


def _after_error(retries: Retries, attempt: int, call: str, err: Exception) -> float:
    """The delay before trying `call` again after `err`; HitlConnectionError after the last."""
    if attempt == retries.attempts:
        raise HitlConnectionError(f"{call}: {err!r}") from err
    return retries.delay(attempt)


def _after_answer(retries: Retries, attempt: int, response: httpx.Response) -> float | None:
    """The delay before trying again after `response`, or None: it is the answer."""
    if attempt == retries.attempts or not Retries.retried(response.status_code):
        return None
    return retries.delay(attempt, response.headers.get("Retry-After"))


def _api_root(base_url: str) -> str:
    root = base_url.rstrip("/")
    return root if root.endswith("/api/v1") else f"{root}/api/v1"


def _json(response: httpx.Response) -> Any:
    """A 2xx answer's JSON body; any other answer as a HitlApiError."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.is_success and body is not None:
        return body
    if not isinstance(body, dict):  # a proxy's HTML page, an empty body…
        what = response.text[:200].strip() or response.reason_phrase
        raise HitlApiError(response.status_code, "unexpected_response", what)
    fields = body.get("fields")
    raise HitlApiError(
        response.status_code,
        str(body.get("error", "unknown")),
        str(body.get("message", "")),
        {str(k): str(v) for k, v in fields.items()} if isinstance(fields, dict) else None,
    )
