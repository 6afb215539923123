"""What every route of the one aiohttp server shares: body limits, a body deadline, and how a
request that cannot be served is answered and logged.

The policy (issue 9), for Slack's, Teams' and every later route:

- **401** a request that fails authentication, before its body is interpreted (each route
  authenticates in its own handler: Slack's signature, Teams' token);
- **413** a body over the route's limit, refused as soon as that is known (from
  Content-Length, or once that much has arrived: the rest is never read);
- **400** an authenticated request whose body cannot be read (not a form or JSON, not the
  shape the platform sends), or a body that cannot be received as sent (a Content-Encoding
  it does not have);
- a body not received in full within `BODY_TIMEOUT` seconds of its headers: the connection is
  cut, without a response (a client trickling its body holds nothing of ours for longer);
- aiohttp's own refusals of malformed HTTP (before any route, or while it drains the unread
  body of a refused request, for up to 10 s) are logged the same way
  (`quiet_protocol_errors`), not as aiohttp's tracebacks at ERROR; neither the line nor the
  response (`AppRunner`) quotes the request: no header value is ever echoed;
- each of these is one WARNING line at most every `LOG_EVERY` seconds per kind (the next one
  says how many were left out), never a traceback: a flood of garbage writes a few lines;
- **no 500 from any input.** What a handler did not expect is answered by `guard` (the last
  resort): a ValueError or RecursionError (what reading a client's bytes raises) is a 400, any
  other exception a 503 (a bug of ours: the client may retry, Slack does). Either is one line
  naming a short id (also in the response body), the exception and where it was raised; the
  traceback is logged at DEBUG only, under the same id.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
import traceback
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import (
    BadHttpMethod,
    BadStatusLine,
    ContentEncodingError,
    ContentLengthError,
    DecompressSizeError,
    HttpProcessingError,
    InvalidHeader,
    InvalidURLError,
    LineTooLong,
    TransferEncodingError,
)
from aiohttp.typedefs import Middleware
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest

__all__ = [
    "BODY_TIMEOUT",
    "LOG_EVERY",
    "AppRunner",
    "BodyTooLarge",
    "Throttled",
    "guard",
    "one_line",
    "quiet_protocol_errors",
    "read_body",
    "report_unexpected",
    "too_deep",
]

log = logging.getLogger(__name__)

BODY_TIMEOUT = 10.0  # seconds from a request's headers to the last byte of its body
LOG_EVERY = 10.0  # seconds: at most one WARNING line per kind of refusal per interval
UNEXPECTED_BURST = 10  # ERROR lines of unexpected failures per LOG_EVERY, at most
_MESSAGE = 200  # characters of an exception's message in a log line

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Throttled:
    """A logger's lines of one kind, at most `burst` per `every` seconds; the next line after
    a pause says how many were left out."""

    def __init__(
        self,
        logger: logging.Logger,
        every: float = LOG_EVERY,
        *,
        burst: int = 1,
        level: int = logging.WARNING,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._logger, self._every, self._burst, self._level = logger, every, burst, level
        self._clock = clock
        self._window = float("-inf")
        self._logged = 0
        self._left_out = 0

    def log(self, message: str, *args: Any) -> bool:
        """Log one line unless this kind was logged often enough lately; whether it was."""
        now = self._clock()
        if now >= self._window + self._every:
            self._window, self._logged = now, 0
        if self._logged >= self._burst:
            self._left_out += 1
            return False
        if self._left_out:
            message += f" ({self._left_out} more since the last such line, not logged)"
            self._left_out = 0
        self._logged += 1
        self._logger.log(self._level, message, *args)
        return True

    def warning(self, message: str, *args: Any) -> bool:
        """`log`, for call sites that read as the logger's own (the level is the one given)."""
        return self.log(message, *args)


def one_line(text: object, limit: int = _MESSAGE) -> str:
    """`text` on one line (newlines and other control characters escaped), at most `limit`
    characters: what a client sent may end up in an exception's message."""
    flat = str(text).encode("unicode_escape", "backslashreplace").decode("ascii")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def report_unexpected(
    logger: logging.Logger, error: BaseException, what: str, lines: Throttled | None = None
) -> str:
    """Log `error` as one line (ERROR, through `lines` if given) with a new short id, which is
    returned: the exception's type, message and the line that raised it. The traceback goes to
    DEBUG under the same id."""
    ident = secrets.token_hex(4)
    frames = traceback.extract_tb(error.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    args = (what, ident, type(error).__name__, one_line(error), where)
    if lines is not None:
        lines.log("%s failed [%s]: %s: %s%s", *args)
    else:
        logger.error("%s failed [%s]: %s: %s%s", *args)
    logger.debug("[%s] traceback", ident, exc_info=error)
    return ident


class _ProtocolErrors(logging.Filter):
    """aiohttp's own refusals of malformed HTTP, before or after any route (a bad request line
    or header, a body in an encoding it cannot decode, met also while it drains a refused
    request's unread body): aiohttp logs each with a traceback at ERROR on `aiohttp.server`;
    here they become one WARNING line per LOG_EVERY."""

    def __init__(self) -> None:
        super().__init__()
        self.lines = Throttled(log)

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, web.RequestPayloadError):  # raised from the decoder's error
            error = error.__cause__
        if not isinstance(error, HttpProcessingError):
            return True  # anything else of aiohttp's is logged as it is
        self.lines.warning("aiohttp refused a malformed request (%d): %s [%s]",
                           error.code or 400, what_was_malformed(error),
                           one_line(record.getMessage(), 100))  # fmt: skip
        return False


# What aiohttp's refusals are, in words of ours: their messages quote what was sent (the first
# 100 bytes of an oversized header, an Authorization header's token with them).
_MALFORMED = (
    (LineTooLong, "a request line or header over the size limit"),
    (InvalidHeader, "an invalid header"),
    (BadHttpMethod, "not an HTTP method"),
    (BadStatusLine, "an invalid request line"),
    (InvalidURLError, "an invalid URL"),
    (ContentEncodingError, "a body in a Content-Encoding it cannot decode"),
    (TransferEncodingError, "a body in a Transfer-Encoding it cannot read"),
    (ContentLengthError, "a body shorter than its Content-Length"),
    (DecompressSizeError, "a body that decompresses to more than allowed"),
)


def what_was_malformed(error: HttpProcessingError) -> str:
    """What aiohttp refused, never quoting the request (see `_MALFORMED`)."""
    return next((said for kind, said in _MALFORMED if isinstance(error, kind)),
                type(error).__name__)  # fmt: skip


class _NoEchoHandler(RequestHandler):
    """aiohttp's protocol of one connection, whose refusal of malformed HTTP (a 400, 413 or
    431 written before any route) says its status only: aiohttp's own message quotes what was
    sent, up to 100 bytes of a header's value."""

    def handle_error(
        self,
        request: BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        if status != 500 and message is not None:
            message = f"{status} {HTTPStatus(status).phrase}"
        return super().handle_error(request, status, exc, message)


class _NoEchoServer(web.Server):
    def __call__(self) -> RequestHandler:
        return _NoEchoHandler(self, loop=self._loop, **self._kwargs)


class AppRunner(web.AppRunner):
    """aiohttp's AppRunner, its connections `_NoEchoHandler`s: what aiohttp refuses before
    any route is answered without quoting the request. (aiohttp offers no hook for the
    handler's class: the server it makes is given this class, which only makes handlers.)"""

    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        server.__class__ = _NoEchoServer
        return server


_installed: list[_ProtocolErrors] = []


def quiet_protocol_errors() -> None:
    """Log aiohttp's refusals of malformed HTTP as one line (see `_ProtocolErrors`), counted
    afresh for each server built (one per process, but many in the tests)."""
    server_log = logging.getLogger("aiohttp.server")
    while _installed:
        server_log.removeFilter(_installed.pop())
    _installed.append(_ProtocolErrors())
    server_log.addFilter(_installed[0])


class BodyTooLarge(Exception):
    """A body over the limit."""


async def read_body(request: web.Request, limit: int) -> bytes:
    """The body, or BodyTooLarge as soon as it is known to be over `limit` bytes (from its
    Content-Length, or once that much has arrived): the rest is never read."""
    if request.content_length is not None and request.content_length > limit:
        raise BodyTooLarge
    body = bytearray()
    async for chunk in request.content.iter_any():
        body += chunk
        if len(body) > limit:
            raise BodyTooLarge
    return bytes(body)


def too_deep(value: object, limit: int) -> bool:
    """Whether `value` nests objects and arrays more than `limit` deep (without recursion)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, dict | list):
            continue
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def guard() -> Middleware:
    """The middleware that gives every route the body deadline and the last resort (see the
    module docstring). `BODY_TIMEOUT` is read per request."""
    cuts = Throttled(log)
    bad_input = Throttled(log)
    bugs = Throttled(log, burst=UNEXPECTED_BURST, level=logging.ERROR)

    def cut_if_unread(request: web.Request) -> None:
        transport = request.transport
        if request.content.is_eof() or transport is None or transport.is_closing():
            return
        cuts.warning(
            "cut the connection from %s: the body of %s %s did not arrive within %gs",
            request.remote, request.method, one_line(request.path, 100), BODY_TIMEOUT,
        )  # fmt: skip
        transport.close()

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        deadline = asyncio.get_running_loop().call_later(BODY_TIMEOUT, cut_if_unread, request)
        what = f"{request.method} {one_line(request.path, 100)}"
        try:
            response = await handler(request)
            if not request.content.is_eof() or request.content.exception() is not None:
                # Its body was left unread (refused first) or could not be read: aiohttp
                # drains it after the response, and closes the connection if that fails.
                # `Connection: close` tells the client not to send another request on it.
                response.force_close()
            return response
        except web.HTTPException:
            raise  # aiohttp's own answers: 404, 405, 413 of client_max_size
        except ConnectionError:
            # The client went away, or was cut above while its handler read the body: nobody
            # reads this response.
            log.debug("%s: the connection was lost before the request was read", what)
            return web.Response(status=400)
        except (web.RequestPayloadError, HttpProcessingError) as error:
            # The body as sent cannot be decoded (a Content-Encoding it does not have, a
            # chunk of the wrong length): aiohttp raises this to whoever reads it.
            bad_input.warning("%s from %s: the body could not be read (400): %s",
                              what, request.remote, one_line(error))  # fmt: skip
            return web.json_response({"error": "the body could not be read"}, status=400)
        except (ValueError, RecursionError) as error:  # reading what the client sent
            ident = report_unexpected(log, error, what, bad_input)
            return web.json_response({"error": "bad request", "id": ident}, status=400)
        except Exception as error:
            ident = report_unexpected(log, error, what, bugs)
            return web.json_response({"error": "internal error", "id": ident}, status=503)
        finally:
            deadline.cancel()

    return middleware
