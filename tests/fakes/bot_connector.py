"""A stateful fake of the Bot Framework Connector (the Teams side of a bot), on loopback.

The bot's Teams SDK client is pointed at it through the activities' `serviceUrl`; it serves
what the bot sends (the Bot Connector REST API, as botbuilder-python's Swagger document has it):

    POST /v3/conversations/{conversationId}/activities                 -> {"id": new id}
    POST /v3/conversations/{conversationId}/activities/{activityId}    -> a reply, {"id": new id}
    PUT  /v3/conversations/{conversationId}/activities/{activityId}    -> {"id": activityId}
    GET  /v3/conversations/{conversationId}/members/{memberId}         -> a roster entry

A conversation's roster (`add_member`) answers look-ups of one member by Teams user id or AAD
object id (Teams' "get single member"), 404 MemberNotFoundInConversation for anyone else; the
look-ups are kept in `member_lookups`, apart from `calls`.

Every call is recorded (method, path, body, headers); every version of every activity is kept.
`fail_next` makes the next calls answer an error (429 with Retry-After by default); a
`token` makes it require `Authorization: Bearer <token>` (401 otherwise). Adaptive Cards
attached to activities are checked by `card_errors` (structure that code must keep, and, when
`HITL_TEAMS_SCHEMA_DIR` names a folder with `adaptive-card-1.5.schema.json`, the schema): a
card that fails is answered 400, so a test sees it.

    async with FakeBotConnector() as connector:
        activity = {"serviceUrl": connector.service_url, ...}
"""

from __future__ import annotations

import asyncio
import copy
import functools
import itertools
import json
import os
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

from aiohttp import web

__all__ = ["CARD_CONTENT_TYPE", "Call", "FakeBotConnector", "card_errors", "cards_of"]

JSON = dict[str, Any]
_T = TypeVar("_T")

CARD_CONTENT_TYPE = "application/vnd.microsoft.card.adaptive"
MAX_REFRESH_USER_IDS = 60
INPUT_TYPES = {"Input.Text", "Input.Number", "Input.Date", "Input.Time", "Input.Toggle",
               "Input.ChoiceSet"}  # fmt: skip
ACTIONS_REQUIRING_VERB = {"Action.Execute"}


@dataclass(frozen=True)
class Call:
    """One request the bot made."""

    method: str
    path: str
    conversation_id: str
    activity_id: str | None
    body: JSON
    headers: Mapping[str, str]

    @property
    def authorization(self) -> str | None:
        return self.headers.get("Authorization")


@dataclass
class _Fault:
    status: int
    retry_after: str | None


# ---------------------------------------------------------------- Adaptive Card checks


def _nodes(node: Any) -> Iterator[JSON]:
    """Every object inside `node` (itself included), depth first."""
    if isinstance(node, dict):
        yield node
        for child in node.values():
            yield from _nodes(child)
    elif isinstance(node, list):
        for child in node:
            yield from _nodes(child)


@functools.cache
def _card_validator(path: str) -> Any:
    import jsonschema

    schema = json.loads(Path(path).read_text())
    return jsonschema.validators.validator_for(schema)(schema)


def _schema_errors(card: JSON) -> list[str]:
    folder = os.environ.get("HITL_TEAMS_SCHEMA_DIR")
    if not folder or not (Path(folder) / "adaptive-card-1.5.schema.json").is_file():
        return []
    validator = _card_validator(str(Path(folder) / "adaptive-card-1.5.schema.json"))
    return [f"schema: {error.message[:300]}" for error in validator.iter_errors(card)]


def card_errors(card: Any) -> list[str]:
    """What is wrong with an Adaptive Card as Teams would take it; [] when nothing is."""
    if not isinstance(card, dict) or card.get("type") != "AdaptiveCard":
        return ["not an AdaptiveCard object"]
    errors: list[str] = []
    if card.get("version") != "1.5":
        errors.append(f"version must be 1.5 (Action.Execute), not {card.get('version')!r}")
    input_ids = [n.get("id") for n in _nodes(card.get("body")) if n.get("type") in INPUT_TYPES]
    if len(input_ids) != len(set(input_ids)) or None in input_ids:
        errors.append(f"input ids must be present and unique: {input_ids}")
    for node in _nodes(card):
        if node.get("type") in ACTIONS_REQUIRING_VERB and not node.get("verb"):
            errors.append(f"Action.Execute without a verb: {node}")
        if node.get("type") == "Action.Submit":
            errors.append("Action.Submit: Universal Actions need Action.Execute")
    refresh = card.get("refresh")
    if refresh is not None:
        action = refresh.get("action") or {}
        if action.get("type") != "Action.Execute":
            errors.append("refresh.action must be an Action.Execute")
        user_ids = refresh.get("userIds")
        if user_ids is not None and len(user_ids) > MAX_REFRESH_USER_IDS:
            errors.append(f"refresh.userIds lists {len(user_ids)} users (at most 60)")
    return errors + _schema_errors(card)


def cards_of(activity: Mapping[str, Any]) -> list[JSON]:
    """The Adaptive Cards attached to an activity."""
    return [
        attachment.get("content")
        for attachment in activity.get("attachments") or []
        if attachment.get("contentType") == CARD_CONTENT_TYPE
    ]


# ---------------------------------------------------------------- the fake


class FakeBotConnector:
    """Fake Bot Connector on 127.0.0.1; an async context manager. See the module docstring."""

    def __init__(self, *, token: str | None = None) -> None:
        self.token = token
        self.calls: list[Call] = []
        self._activities: defaultdict[str, dict[str, JSON]] = defaultdict(dict)
        self._versions: defaultdict[tuple[str, str], list[JSON]] = defaultdict(list)
        self._faults: defaultdict[str, deque[_Fault]] = defaultdict(deque)
        self._rosters: defaultdict[str, list[JSON]] = defaultdict(list)
        self.member_lookups: list[tuple[str, str]] = []  # (conversation id, member id)
        # Activity ids look like Teams' message ids: numeric (a channel's ;messageid=).
        self._ids = itertools.count(int(time.time() * 1000))
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self.url = ""

    # -- lifecycle

    async def __aenter__(self) -> Self:
        app = web.Application()
        base = "/v3/conversations/{conversation_id}/activities"
        app.router.add_post(base, self._create)
        app.router.add_post(base + "/{activity_id}", self._create)
        app.router.add_put(base + "/{activity_id}", self._update)
        app.router.add_get("/v3/conversations/{conversation_id}/members/{member_id}", self._member)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        host, port = self._runner.addresses[0][:2]
        self.url = f"http://{host}:{port}"
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @property
    def service_url(self) -> str:
        """The `serviceUrl` of activities "from Teams" (with the trailing slash Teams sends)."""
        return f"{self.url}/"

    # -- set-up

    def new_id(self) -> str:
        return str(next(self._ids))

    def add_activity(self, conversation_id: str, activity: JSON) -> JSON:
        """Store an activity someone else sent (a person's message), with a new id."""
        stored = {**copy.deepcopy(activity), "id": self.new_id()}
        self._store(conversation_id, stored)
        return copy.deepcopy(stored)

    def add_member(self, conversation_id: str, account: JSON) -> None:
        """Put `account` (`{"id": "29:…", "name": …, "aadObjectId": …}`) in a conversation's
        roster."""
        self._rosters[conversation_id].append(copy.deepcopy(account))

    def fail_next(
        self, method: str, status: int = 429, *, times: int = 1, retry_after: str | None = "0"
    ) -> None:
        """The next `times` calls with `method` (POST or PUT) answer `status`
        (with `Retry-After: retry_after` unless None)."""
        self._faults[method.upper()].extend(_Fault(status, retry_after) for _ in range(times))

    # -- inspection

    def activities(self, conversation_id: str) -> list[JSON]:
        """Current versions of a conversation's activities, oldest first."""
        return copy.deepcopy(list(self._activities[conversation_id].values()))

    def activity(self, conversation_id: str, activity_id: str) -> JSON:
        """The current version of an activity; KeyError if absent."""
        return copy.deepcopy(self._activities[conversation_id][activity_id])

    def versions(self, conversation_id: str, activity_id: str) -> list[JSON]:
        """Every version of an activity: as posted, then after each update."""
        return copy.deepcopy(self._versions[conversation_id, activity_id])

    def calls_to(self, method: str) -> list[Call]:
        return [call for call in self.calls if call.method == method.upper()]

    async def wait_for(self, predicate: Callable[[], _T], timeout: float = 5) -> _T:
        """Wait until `predicate()` is truthy (a LookupError counts as not yet); return it."""
        result: list[_T] = []

        def check() -> bool:
            try:
                result[:] = [predicate()]
            except LookupError:
                return False
            return bool(result[0])

        async with self._changed:
            try:
                async with asyncio.timeout(timeout):
                    await self._changed.wait_for(check)
            except TimeoutError:
                seen = [f"{c.method} {c.path}" for c in self.calls]
                raise TimeoutError(f"not met within {timeout}s; calls: {seen}") from None
        return result[0]

    # -- HTTP

    async def _member(self, request: web.Request) -> web.Response:
        conversation_id = request.match_info["conversation_id"]
        member_id = request.match_info["member_id"]
        self.member_lookups.append((conversation_id, member_id))
        if (
            self.token is not None
            and request.headers.get("Authorization") != f"Bearer {self.token}"
        ):
            return _error(401, "Unauthorized", "missing or wrong bearer token")
        for account in self._rosters[conversation_id]:
            if member_id in (account.get("id"), account.get("aadObjectId")):
                return web.json_response(account)
        return _error(404, "MemberNotFoundInConversation", "no such member in the conversation")

    async def _create(self, request: web.Request) -> web.Response:
        return await self._handle(request, create=True)

    async def _update(self, request: web.Request) -> web.Response:
        return await self._handle(request, create=False)

    async def _handle(self, request: web.Request, *, create: bool) -> web.Response:
        conversation_id = request.match_info["conversation_id"]
        activity_id = request.match_info.get("activity_id")
        try:
            body = await request.json()
        except ValueError:
            body = None
        self.calls.append(
            Call(request.method, request.path, conversation_id, activity_id,
                 body if isinstance(body, dict) else {}, dict(request.headers))
        )  # fmt: skip
        try:
            return self._answer(request, conversation_id, activity_id, body, create=create)
        finally:
            async with self._changed:
                self._changed.notify_all()

    def _answer(
        self,
        request: web.Request,
        conversation_id: str,
        activity_id: str | None,
        body: Any,
        *,
        create: bool,
    ) -> web.Response:
        faults = self._faults[request.method]
        if faults:
            fault = faults.popleft()
            headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
            return _error(fault.status, "Throttled" if fault.status == 429 else "ServiceError",
                          "injected fault", headers)  # fmt: skip
        if (
            self.token is not None
            and request.headers.get("Authorization") != f"Bearer {self.token}"
        ):
            return _error(401, "Unauthorized", "missing or wrong bearer token")
        if not isinstance(body, dict) or not body.get("type"):
            return _error(400, "BadArgument", "the body must be an activity with a type")
        problems = [p for card in cards_of(body) for p in card_errors(card)]
        if problems:
            return _error(400, "BadArgument", "; ".join(problems))
        if create:
            stored = {**body, "id": self.new_id()}
            if activity_id is not None:
                stored["replyToId"] = activity_id
            self._store(conversation_id, stored)
            return web.json_response({"id": stored["id"]}, status=201)
        assert activity_id is not None
        if activity_id not in self._activities[conversation_id]:
            return _error(404, "ActivityNotFoundInConversation", "no such activity")
        self._store(conversation_id, {**body, "id": activity_id})
        return web.json_response({"id": activity_id})

    def _store(self, conversation_id: str, activity: JSON) -> None:
        self._activities[conversation_id][activity["id"]] = activity
        self._versions[conversation_id, activity["id"]].append(copy.deepcopy(activity))


def _error(
    status: int, code: str, message: str, headers: Mapping[str, str] | None = None
) -> web.Response:
    body = {"error": {"code": code, "message": message}}
    return web.json_response(body, status=status, headers=dict(headers or {}))
