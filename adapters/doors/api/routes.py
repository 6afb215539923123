"""The HTTP API under /api/v1: create a request, read it (long poll), list, cancel.

Every route authenticates first (a bearer token of bot/doors/tokens.py, 401 and one throttled
WARNING line otherwise), then reads and validates its input (400 with the invalid fields),
then calls the doors (bot/doors/service.py), which make ordinary requests. A token sees its own
requests only. Errors are `ApiError` bodies; no input makes a 500.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from aiohttp import web
from pydantic import ValidationError

from adapters.doors.api.models import ApiError, CreateRequest, RequestOut
from adapters.doors.api.openapi import openapi_document
from adapters.serve.http_limits import LOG_EVERY, BodyTooLarge, Throttled, read_body, too_deep
from bot.doors.long_polls import TooManyPolls
from bot.doors.service import MAX_WAIT, Ask, DoorError, Doors, RequestBody
from bot.doors.tokens import Tokens, bearer
from bot.records import StoreUnavailableError

log = logging.getLogger(__name__)

BASE = "/api/v1"
MAX_BODY = 256 * 1024  # bytes: a request's arguments are a form's worth of text
MAX_DEPTH = 20  # nesting of the JSON body
CheckUrl = Callable[[str], Awaitable[str | None]]  # None if acceptable, else why not


class ApiDoor:
    """The routes of the HTTP API (see the module's docstring)."""

    def __init__(self, doors: Doors, tokens: Tokens, *, check_callback: CheckUrl) -> None:
        self.doors = doors
        self.tokens = tokens
        self.check_callback = check_callback
        self._refusals = Throttled(log, LOG_EVERY)

    def mount(self, app: web.Application) -> None:
        app.router.add_post(f"{BASE}/requests", self.create)
        app.router.add_get(f"{BASE}/requests", self.list)
        app.router.add_get(f"{BASE}/requests/{{id}}", self.get)
        app.router.add_delete(f"{BASE}/requests/{{id}}", self.cancel)
        app.router.add_get(f"{BASE}/openapi.json", self.openapi)

    async def openapi(self, request: web.Request) -> web.Response:
        return web.json_response(openapi_document())

    async def create(self, request: web.Request) -> web.Response:
        async def run(requester: str) -> web.Response:
            asked = await self._body(request)
            if asked.callback_url is not None:
                refused = await self.check_callback(asked.callback_url)
                if refused is not None:
                    raise DoorError(f"callback_url refused: {refused}",
                                    errors={"callback_url": refused})  # fmt: skip
            ask = Ask(**asked.model_dump(exclude={"arguments"}), arguments=asked.arguments,
                      door="api")  # fmt: skip
            body, created = await self.doors.ask(requester, ask)
            return _request(body, 201 if created else 200)

        return await self._authorized(request, run)

    async def get(self, request: web.Request) -> web.Response:
        async def run(requester: str) -> web.Response:
            wait = _number(request.query.get("wait", "0"), "wait", 0, MAX_WAIT)
            found = await self.doors.get(requester, request.match_info["id"], wait,
                                         gone=lambda: _gone(request))  # fmt: skip
            return _request(found)

        return await self._authorized(request, run)

    async def list(self, request: web.Request) -> web.Response:
        async def run(requester: str) -> web.Response:
            query = request.query
            limit = int(_number(query.get("limit", "50"), "limit", 1, 200))
            found = await self.doors.list(
                requester, status=query.get("status") or None, to=query.get("to") or None,
                since=_moment(query.get("since")), before=query.get("before") or None,
                limit=limit + 1,
            )  # fmt: skip
            page = found[:limit]
            following = page[-1]["id"] if len(found) > limit else None
            return _json({"requests": [_out(b) for b in page], "next": following})

        return await self._authorized(request, run)

    async def cancel(self, request: web.Request) -> web.Response:
        async def run(requester: str) -> web.Response:
            return _request(await self.doors.cancel(requester, request.match_info["id"]))

        return await self._authorized(request, run)

    # -- the steps every route takes -----------------------------------------------------------

    async def _authorized(
        self, request: web.Request, run: Callable[[str], Awaitable[web.Response]]
    ) -> web.Response:
        """Authenticate, then `run(requester)`; its errors as ApiError bodies."""
        presented = bearer(request.headers.get("Authorization"))
        try:
            token = await self.tokens.check(presented) if presented is not None else None
            if token is None:
                self._refusals.log("API: refused a request without a valid token (%s %s)",
                                       request.method, request.path)  # fmt: skip
                return _error("unauthorized", "a valid bearer token is needed", 401)
            return await run(token.name)
        except DoorError as err:
            code = {404: "not_found", 409: "conflict"}.get(err.status, "invalid")
            return _error(code, str(err), err.status, err.errors)
        except TooManyPolls as err:
            refused = _error("too_many_polls", str(err), 429, {"wait": str(err)})
            refused.headers["Retry-After"] = str(err.retry_after)
            return refused
        except BodyTooLarge:
            return _error("too_large", f"the body is over {MAX_BODY} bytes", 413)
        except StoreUnavailableError as err:
            log.warning("API: the store is unavailable: %s", err)
            return _error("unavailable", "the bridge cannot reach its database now", 503)

    async def _body(self, request: web.Request) -> CreateRequest:
        raw = await read_body(request, MAX_BODY)
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):
            raise DoorError("the body is not JSON") from None
        if too_deep(value, MAX_DEPTH):
            raise DoorError(f"the body nests deeper than {MAX_DEPTH}")
        try:
            return CreateRequest.model_validate(value)
        except ValidationError as err:
            errors = {_field(e["loc"]): e["msg"] for e in err.errors()}
            listed = "; ".join(f"{k}: {v}" for k, v in errors.items())
            raise DoorError(f"invalid request: {listed}", errors=errors) from None


def _gone(request: web.Request) -> bool:
    """Whether the client closed its connection (aiohttp cancels no handler when it does)."""
    transport = request.transport
    return transport is None or transport.is_closing()


def _field(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc) or "body"


def _number(text: str, name: str, low: float, high: float) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not low <= value <= high:  # NaN fails both
        why = f"must be a number from {low:g} to {high:g}"
        raise DoorError(f"{name} {why}", errors={name: why})
    return value


def _moment(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        when = None
    if when is None or when.tzinfo is None:
        why = "must be an ISO 8601 time with its offset (2026-12-01T09:00:00Z)"
        raise DoorError(f"since {why}", errors={"since": why})
    return when


def _out(body: RequestBody) -> dict[str, Any]:
    """A request as written: validated against its model (the OpenAPI document's), unset
    fields left out."""
    dumped: dict[str, Any] = RequestOut.model_validate(body).model_dump(
        mode="json", exclude_none=True
    )
    return dumped


def _request(body: RequestBody, status: int = 200) -> web.Response:
    return _json(_out(body), status)


def _error(
    code: str, message: str, status: int, fields: dict[str, str] | None = None
) -> web.Response:
    body = ApiError.model_validate({"error": code, "message": message, "fields": fields or {}})
    return _json(body.model_dump(mode="json"), status)


def _json(body: Any, status: int = 200) -> web.Response:
    return web.json_response(body, status=status)
