"""Every Slack Web API attempt told to the metrics (adapters/ops/metrics.py), as a retry handler
first in the client's list: slack_sdk asks its retry handlers after every attempt, a success,
a 429 or a dropped connection alike, so a 429 the SDK then retries is counted too. It never
asks for a retry itself (the handlers after it decide)."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState

CallRecorder = Callable[[str, str], None]
"""(the Web API method, e.g. `chat.postMessage`; the outcome): counts one attempt."""


def method_of(url: str) -> str:
    """The Web API method a URL calls (`https://slack.com/api/chat.update` -> `chat.update`)."""
    return urlsplit(url).path.rstrip("/").rpartition("/")[2] or "unknown"


def outcome_of(response: HttpResponse | None, error: Exception | None) -> str:
    """`ok`; `error` (Slack's `ok: false`); `rate_limited` (429); `server_error` (5xx), or
    `http_<status>`; `connection_error` (no response)."""
    if response is None:
        return "connection_error"
    status = response.status_code
    if status == 429:
        return "rate_limited"
    if status >= 500:
        return "server_error"
    if status != 200:
        return f"http_{status}"
    body = response.body
    return "ok" if isinstance(body, dict) and body.get("ok") else "error"


class CountedSlackCalls(AsyncRetryHandler):
    """Tells `record` of each attempt; never retries."""

    def __init__(self, record: CallRecorder) -> None:
        super().__init__(max_retry_count=0)
        self.record = record

    async def can_retry_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        self.record(method_of(request.url), outcome_of(response, error))
        return False
