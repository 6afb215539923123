"""The A2A door of `serve`: JSON-RPC at /a2a and HTTP+JSON under /a2a/rest, as the `a2a-sdk`
serves them (its Starlette routes, bridged onto our aiohttp by adapters/doors/asgi.py), and the
AgentCard at /.well-known/agent-card.json (public, as discovery needs).

Each call is authenticated first, from its headers alone (a bearer token of
bot/doors/tokens.py: 401 and one throttled WARNING line otherwise, its body never read), its
body then read up to `MAX_BODY` (413 beyond), refused if it nests deeper than `MAX_DEPTH`, and
handed to the SDK with the token's name, which every method acts as (adapters/doors/a2a/handler.py).
A body not sent as JSON is ContentTypeNotSupportedError; an `A2A-Version` other than 1.x is
refused here, the header cut and its warning said once a value (adapters/doors/a2a/versions.py). The
SDK parses the body and answers a malformed one with one A2A error; what it logs of a client's
error stays one line (`_OneLine`), no traceback. The card has an ETag and a max-age, its URLs
HITL_PUBLIC_URL's or the local socket's (never the Host header).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from collections.abc import Mapping
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.response_helpers import (
    agent_card_to_dict,
    build_error_response,
)
from a2a.server.routes import (
    DefaultServerCallContextBuilder,
    create_jsonrpc_routes,
    create_rest_routes,
)
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from a2a.utils.error_handlers import build_rest_error_payload
from a2a.utils.errors import A2AError, ContentTypeNotSupportedError, VersionNotSupportedError
from aiohttp import web
from starlette.applications import Starlette
from starlette.requests import Request

from adapters.doors.a2a.card import JSONRPC_PATH, REST_PATH, agent_card
from adapters.doors.a2a.errors import align
from adapters.doors.a2a.handler import GONE, REQUESTER, PersonHandler
from adapters.doors.a2a.loading import PushPorts
from adapters.doors.a2a.push import Pushes
from adapters.doors.a2a.versions import HEADER, RefusedVersions, compatible, shown
from adapters.doors.asgi import AsgiApp, AsgiScope, Message, Receive, Send, serve_asgi
from adapters.serve.http_limits import (
    LOG_EVERY,
    BodyTooLarge,
    Throttled,
    one_line,
    read_body,
    too_deep,
)
from bot.doors.service import Doors
from bot.doors.tokens import Tokens, bearer
from bot.records import StoreUnavailableError

log = logging.getLogger(__name__)

MAX_BODY = 256 * 1024  # bytes, as the HTTP API's: a request's arguments are a form's worth
MAX_DEPTH = 32  # nesting of the JSON body: a message's form fields sit about ten deep
CARD_PATH = AGENT_CARD_WELL_KNOWN_PATH
A2A_JSON = b"application/a2a+json"
CARD_CACHE = "public, max-age=300"  # the card changes with a release: 5 minutes stale at most


class _OneLine(logging.Filter):
    """The SDK logs a body it cannot parse with its traceback: the line is kept, not that."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info, record.exc_text = None, None
        return True


class _NoBodies(logging.Filter):
    """The SDK logs each JSON-RPC body at DEBUG: a push config's token is in it (a secret)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Request body")


for _name in ("jsonrpc_dispatcher", "rest_dispatcher"):
    logging.getLogger(f"a2a.server.routes.{_name}").addFilter(_OneLine())
logging.getLogger("a2a.server.routes.jsonrpc_dispatcher").addFilter(_NoBodies())
logging.getLogger("a2a.utils.error_handlers").addFilter(_OneLine())
align()  # the HTTP statuses of A2A 1.0's table (adapters/doors/a2a/errors.py)


class _Context(DefaultServerCallContextBuilder):
    """The SDK's call context, with who asks and whether they are still there (put in the
    scope by `A2aDoor.handle`)."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        context.state[REQUESTER] = request.scope.get(REQUESTER)
        context.state[GONE] = request.scope.get(GONE)
        return context


class A2aDoor:
    """The A2A routes (see the module's docstring)."""

    def __init__(
        self, doors: Doors, tokens: Tokens, push: PushPorts, *, public_url: str | None = None,
        default_to: str | None = None,
    ) -> None:  # fmt: skip
        self.tokens = tokens
        self.public_url = public_url.rstrip("/") if public_url else None
        self.pushes = Pushes(push)
        handler, context = PersonHandler(doors, self.pushes, default_to), _Context()
        routes = [
            *create_jsonrpc_routes(handler, JSONRPC_PATH, context_builder=context),
            *create_rest_routes(handler, context_builder=context, path_prefix=REST_PATH),
        ]
        self.app: AsgiApp = _no_500(Starlette(routes=routes))
        self._refusals = Throttled(log, LOG_EVERY)
        self._versions = RefusedVersions(log)

    async def card(self, request: web.Request) -> web.Response:
        """The card, with an ETag and a max-age (304 when the caller has it). Its URLs are
        HITL_PUBLIC_URL's, else the address the request reached (this socket's, never the
        Host header a caller may set)."""
        body, etag = _card(self.public_url or _local_base(request))
        headers = {"ETag": etag, "Cache-Control": CARD_CACHE}
        if _etags(request.headers.get("If-None-Match", "")) & {etag, "*"}:
            return web.Response(status=304, headers=headers)
        return web.Response(body=body, content_type="application/json", headers=headers)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        presented = bearer(request.headers.get("Authorization"))
        try:
            token = await self.tokens.check(presented) if presented is not None else None
        except StoreUnavailableError as err:
            log.warning("A2A: the store is unavailable: %s", err)
            return _error(503, "UNAVAILABLE", "the bridge cannot reach its database now")
        if token is None:
            self._refusals.log(
                "A2A: refused a request without a valid token (%s %s from %s)",
                request.method, one_line(request.path, 100), request.remote,
            )  # fmt: skip
            refused = _error(401, "UNAUTHENTICATED", "a valid bearer token is needed")
            refused.headers["WWW-Authenticate"] = 'Bearer realm="hitl-bridge"'
            return refused
        if request.method == "POST" and not _json_typed(request):
            return _refused(request, ContentTypeNotSupportedError(
                message="the body must be JSON (Content-Type: application/json)"))  # fmt: skip
        try:
            body = await read_body(request, MAX_BODY)
        except BodyTooLarge:
            return _error(413, "INVALID_ARGUMENT", f"the body is over {MAX_BODY} bytes")
        if _too_deep(body):  # the SDK's JSON reading would overflow, with a traceback
            why = f"the body nests deeper than {MAX_DEPTH}"
            if request.path == JSONRPC_PATH:
                rpc = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": why}}
                return web.json_response(rpc)
            return _error(400, "INVALID_ARGUMENT", why)
        version = request.headers.get(HEADER, "")
        if not compatible(version):  # the SDK would repeat the header whole, and log it
            self._versions.refused(version, request.remote)
            told = f"A2A version '{shown(version)}' is not supported: send {HEADER}: 1.0"
            return _refused(request, VersionNotSupportedError(message=told), _rpc_id(body))
        extra = {REQUESTER: token.name, GONE: lambda: _gone(request)}
        return await serve_asgi(self.app, request, extra, body)


@functools.lru_cache(maxsize=16)  # a few bases at most: the public URL, or this host's addresses
def _card(base: str) -> tuple[bytes, str]:
    """The card's JSON under `base`, and its ETag (its digest: a new version is a new tag)."""
    body = json.dumps(agent_card_to_dict(agent_card(base)), separators=(",", ":")).encode()
    return body, '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def _etags(header: str) -> set[str]:
    """The entity tags of an If-None-Match header, weak ones as strong (a weak comparison)."""
    tags = {tag.strip().removeprefix("W/") for tag in header.split(",")}
    return tags - {""}


def _local_base(request: web.Request) -> str:
    """http(s)://the local address the request reached."""
    scheme = (
        "https" if request.transport and request.transport.get_extra_info("sslcontext") else "http"
    )
    where = request.transport.get_extra_info("sockname") if request.transport else None
    if not where:
        return f"{scheme}://127.0.0.1"
    host, port = str(where[0]), int(where[1])
    return f"{scheme}://[{host}]:{port}" if ":" in host else f"{scheme}://{host}:{port}"


def _no_500(app: AsgiApp) -> AsgiApp:
    """`app`, its 500s sent as 503 (the SDK answers what its handler raised unexpectedly, here
    only a store outage, as an InternalError, with 500, and nothing of ours answers 500: the
    client may try again), its JSON typed `application/json` (`_plain_json`)."""

    async def served(scope: AsgiScope, receive: Receive, send: Send) -> None:
        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                status = 503 if message["status"] == 500 else message["status"]
                message = {**message, "status": status, "headers": _plain_json(message)}
            await send(message)

        await app(scope, receive, sending)

    return served


def _plain_json(start: Message) -> list[tuple[bytes, bytes]]:
    """The response's headers, `application/a2a+json` (the SDK's HTTP+JSON type) sent as
    `application/json`, as A2A 1.0 §11.1 has it for that binding's requests and responses."""
    return [
        (name, b"application/json" if name == b"content-type" and value == A2A_JSON else value)
        for name, value in start.get("headers", [])
    ]


def _too_deep(body: bytes) -> bool:
    try:
        value = json.loads(body)
    except RecursionError:
        return True
    except ValueError:  # not JSON: the SDK says so in its binding's words
        return False
    return too_deep(value, MAX_DEPTH)


def _json_typed(request: web.Request) -> bool:
    """Whether the body is sent as JSON (or not typed at all: read as JSON, as the SDK does)."""
    if "Content-Type" not in request.headers:
        return True
    kind = request.content_type.lower()
    return kind == "application/json" or (
        kind.startswith("application/") and kind.endswith("+json")
    )


def _refused(
    request: web.Request, error: A2AError, rpc_id: str | int | None = None
) -> web.Response:
    """`error` in the words of the request's binding, as the SDK would answer it."""
    if request.path == JSONRPC_PATH:
        return web.json_response(build_error_response(rpc_id, error))
    payload = build_rest_error_payload(error)
    return web.json_response(payload, status=payload["error"]["code"])


def _rpc_id(body: bytes) -> str | int | None:
    """The JSON-RPC request's id, if it has one a response may repeat."""
    try:
        value = json.loads(body)
    except ValueError:
        return None
    found = value.get("id") if isinstance(value, dict) else None
    return found if isinstance(found, str | int) and not isinstance(found, bool) else None


def _gone(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


def _error(status: int, code: str, message: str) -> web.Response:
    """An error in the HTTP+JSON binding's shape (google.rpc.Status), which JSON-RPC clients
    read by its HTTP status."""
    body: Mapping[str, Any] = {"error": {"code": status, "status": code, "message": message}}
    return web.json_response(body, status=status)
