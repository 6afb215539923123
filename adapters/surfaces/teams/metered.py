"""Every Bot Connector attempt told to the metrics (adapters/ops/metrics.py): a middleware of the
Teams SDK's HTTP client (`Client.use`), around each request it sends, so a 429 the connector
then retries (adapters/surfaces/teams/connector.py) is counted too."""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import urlsplit

import httpx
from microsoft_teams.common.http.client import MiddlewareContext, MiddlewareNext

CallRecorder = Callable[[str, str], None]
"""(the method, e.g. `POST /v3/conversations/{id}/activities`; the outcome): one attempt."""

_WORD = re.compile(r"[a-z]+")  # a path segment that names, rather than identifies


def method_of(verb: str, url: str) -> str:
    """The call with its ids folded (`PUT /v3/conversations/{id}/activities/{id}`), so each
    conversation is not a label value of its own."""
    parts = urlsplit(url).path.strip("/").split("/")
    shown = [p if p == "v3" or _WORD.fullmatch(p) else "{id}" for p in parts if p]
    return f"{verb.upper()} /{'/'.join(shown)}"


class CountedConnectorCalls:
    """The middleware: tells `record` of each attempt's outcome (`ok`, `rate_limited`,
    `server_error`, `http_<status>`, `connection_error`)."""

    def __init__(self, record: CallRecorder) -> None:
        self.record = record

    async def send(self, context: MiddlewareContext, next: MiddlewareNext) -> httpx.Response:
        method = method_of(context.method, context.url)
        try:
            response = await next()
        except httpx.HTTPStatusError as err:
            status = err.response.status_code
            outcome = "rate_limited" if status == 429 else f"http_{status}"
            self.record(method, "server_error" if status >= 500 else outcome)
            raise
        except httpx.TransportError:
            self.record(method, "connection_error")
            raise
        self.record(method, "ok")
        return response
