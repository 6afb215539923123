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
card that fails is answered 400, so a test sees it. Given the Bot Connector's Swagger document
(`swagger`), every activity sent is checked against its `Activity` (known fields, activity
types and text formats).

Typing indicators and streamed messages are Teams' (its streaming messages: personal chats
only; a conversation id starting `a:` is a personal chat, as Teams' are):

- a `typing` activity without a `streaminfo` entity is a typing indicator (`typing`);
- a `typing` activity with one is a piece of a stream: the first has streamType
  `informative` or `streaming`, streamSequence 1 and no streamId, and its answer's id is the
  stream's id; each next one carries that streamId and a higher streamSequence, `informative`
  only while no `streaming` piece was sent, `streaming` with text; a `message` with streamType
  `final` and the streamId ends it, and becomes the conversation's message with that id;
- `cancel_stream` plays the user pressing Teams' stop button: the stream's next piece is
  answered 403 `ContentStreamNotAllowed`, "Content stream was cancelled by user.";
- outside a personal chat, 403 `ContentStreamNotAllowed`; a piece of a stream already ended,
  403 too; pieces closer together than `stream_interval` seconds, 429; a stream older than
  `stream_seconds`, 403 (Teams cuts streams at two minutes).

`streams(conversation_id)` gives each stream's pieces in order; `refused` every call the
fake answered with an error of its own (not `fail_next`'s): a test that expects none asserts
it stays empty, so a call the real service would refuse fails the test.

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
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

from aiohttp import web

__all__ = [
    "CARD_CONTENT_TYPE", "Call", "FakeBotConnector", "Stream", "activity_errors", "card_errors",
    "cards_of",
]  # fmt: skip

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
class Stream:
    """One streamed message: its pieces as sent (the final message last), when each arrived
    (`time.monotonic()`), and when it began."""

    id: str
    conversation_id: str
    pieces: list[JSON]
    started: float
    last: float
    final: JSON | None = None
    cancelled: bool = False
    arrived: list[float] = field(default_factory=list)

    def of_type(self, stream_type: str) -> list[JSON]:
        return [p for p in self.pieces if _stream_info(p).get("streamType") == stream_type]

    def texts(self, stream_type: str = "streaming") -> list[str]:
        return [str(p.get("text") or "") for p in self.of_type(stream_type)]


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


@functools.cache
def _swagger(path: str) -> JSON:
    document: JSON = json.loads(Path(path).read_text())
    return document


def activity_errors(activity: Mapping[str, Any], swagger: Path) -> list[str]:
    """What the Bot Connector's Swagger document says is wrong with an activity sent."""
    definitions = _swagger(str(swagger))["definitions"]
    known = set(definitions["Activity"]["properties"])
    errors = [f"unknown activity field {name!r}" for name in activity if name not in known]
    if activity.get("type") not in definitions["ActivityTypes"]["enum"]:
        errors.append(f"unknown activity type {activity.get('type')!r}")
    text_format = activity.get("textFormat")
    if text_format is not None and text_format not in definitions["TextFormatTypes"]["enum"]:
        errors.append(f"unknown textFormat {text_format!r}")
    for entity in activity.get("entities") or []:
        if not isinstance(entity, dict) or not isinstance(entity.get("type"), str):
            errors.append(f"an entity without a type: {entity!r}")
    return errors


def _stream_info(activity: Mapping[str, Any]) -> JSON:
    """The activity's `streaminfo` entity, {} when it has none."""
    for entity in activity.get("entities") or []:
        if isinstance(entity, dict) and entity.get("type") == "streaminfo":
            return entity
    return {}


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

    def __init__(
        self,
        *,
        token: str | None = None,
        swagger: Path | None = None,
        stream_interval: float = 0.0,
        stream_seconds: float = 120.0,
    ) -> None:
        self.token = token
        self.swagger = swagger
        self.stream_interval = stream_interval
        self.stream_seconds = stream_seconds
        self.calls: list[Call] = []
        self.refused: list[str] = []  # "<status> <code>: <message>" of each refusal of ours
        self.typing: list[str] = []  # the conversations typing indicators were sent to
        self._streams: dict[str, Stream] = {}
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

    def cancel_stream(self, stream_id: str) -> None:
        """The user stops a stream with Teams' stop button (see the module's docstring)."""
        self._streams[stream_id].cancelled = True

    def streams(self, conversation_id: str) -> list[Stream]:
        """The streamed messages of a conversation, oldest first."""
        found = [s for s in self._streams.values() if s.conversation_id == conversation_id]
        return copy.deepcopy(found)

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
            return self._refuse(400, "BadArgument", "the body must be an activity with a type")
        problems = [p for card in cards_of(body) for p in card_errors(card)]
        if self.swagger is not None:
            problems += activity_errors(body, self.swagger)
        if problems:
            return self._refuse(400, "BadArgument", "; ".join(problems))
        if create and (body["type"] == "typing" or _stream_info(body)):
            return self._streamed(conversation_id, body)
        if create:
            stored = {**body, "id": self.new_id()}
            if activity_id is not None:
                stored["replyToId"] = activity_id
            self._store(conversation_id, stored)
            return web.json_response({"id": stored["id"]}, status=201)
        assert activity_id is not None
        if activity_id not in self._activities[conversation_id]:
            return self._refuse(404, "ActivityNotFoundInConversation", "no such activity")
        self._store(conversation_id, {**body, "id": activity_id})
        return web.json_response({"id": activity_id})

    # -- typing and streaming (see the module's docstring)

    def _refuse(self, status: int, code: str, message: str) -> web.Response:
        self.refused.append(f"{status} {code}: {message}")
        return _error(status, code, message)

    def _streamed(self, conversation_id: str, body: JSON) -> web.Response:
        info = _stream_info(body)
        if not info:
            self.typing.append(conversation_id)
            return web.json_response({})
        if not conversation_id.startswith("a:"):
            return self._refuse(403, "ContentStreamNotAllowed", "Content stream is not allowed")
        problem = _piece_problem(body, info)
        if problem:
            return self._refuse(400, "BadArgument", problem)
        stream_id = info.get("streamId")
        if stream_id is None:
            return self._first_piece(conversation_id, body, info)
        stream = self._streams.get(str(stream_id))
        if stream is None or stream.conversation_id != conversation_id:
            return self._refuse(400, "BadArgument", f"no stream {stream_id!r} here")
        return self._next_piece(stream, body, info)

    def _first_piece(self, conversation_id: str, body: JSON, info: JSON) -> web.Response:
        if info.get("streamSequence") != 1 or info.get("streamType") == "final":
            return self._refuse(400, "BadArgument", "a stream begins with streamSequence 1")
        now = time.monotonic()
        stream = Stream(
            self.new_id(), conversation_id, [copy.deepcopy(body)], now, now, arrived=[now]
        )
        self._streams[stream.id] = stream
        return web.json_response({"id": stream.id}, status=201)

    def _next_piece(self, stream: Stream, body: JSON, info: JSON) -> web.Response:
        now = time.monotonic()
        if stream.cancelled:
            return _error(403, "ContentStreamNotAllowed", "Content stream was cancelled by user.")
        if stream.final is not None:
            return self._refuse(403, "ContentStreamNotAllowed", "the stream has ended")
        if now - stream.started > self.stream_seconds:
            return self._refuse(403, "ContentStreamNotAllowed", "exceeded streaming time")
        if now - stream.last < self.stream_interval:
            return self._refuse(429, "Throttled", "stream updates too close together")
        problem = _order_problem(stream, info)
        if problem:
            return self._refuse(400, "BadArgument", problem)
        stream.pieces.append(copy.deepcopy(body))
        stream.arrived.append(now)
        stream.last = now
        if info.get("streamType") == "final":
            stream.final = {**copy.deepcopy(body), "id": stream.id}
            self._store(stream.conversation_id, stream.final)
        return web.json_response({"id": stream.id}, status=201)

    def _store(self, conversation_id: str, activity: JSON) -> None:
        self._activities[conversation_id][activity["id"]] = activity
        self._versions[conversation_id, activity["id"]].append(copy.deepcopy(activity))


def _piece_problem(body: JSON, info: JSON) -> str:
    """What is wrong with one piece of a stream on its own ("" if nothing)."""
    kind, stream_type = body.get("type"), info.get("streamType")
    if kind == "typing" and stream_type not in ("informative", "streaming"):
        return f"a typing piece's streamType must be informative or streaming: {stream_type!r}"
    if kind == "message" and stream_type != "final":
        return f"a message in a stream must be its final one: {stream_type!r}"
    if kind not in ("typing", "message"):
        return f"a {kind} activity cannot be part of a stream"
    if stream_type == "final" and not (body.get("text") or body.get("attachments")):
        return "the final message has no text"
    if stream_type == "streaming" and not body.get("text"):
        return "a streaming piece has no text"
    if kind == "typing" and body.get("attachments"):
        return "a streaming piece cannot carry attachments"
    channel = body.get("channelData") or {}
    if channel.get("streamType", stream_type) != stream_type:
        return "channelData and the streaminfo entity disagree"
    return ""


def _order_problem(stream: Stream, info: JSON) -> str:
    """What is wrong with a piece after the ones already sent ("" if nothing)."""
    if info.get("streamType") == "final":
        return ""
    sequence = info.get("streamSequence")
    previous = _stream_info(stream.pieces[-1]).get("streamSequence")
    if not isinstance(sequence, int) or not isinstance(previous, int) or sequence <= previous:
        return f"streamSequence {sequence!r} does not follow {previous!r}"
    if info.get("streamType") == "informative" and stream.of_type("streaming"):
        return "an informative update after the streaming began"
    return ""


def _error(
    status: int, code: str, message: str, headers: Mapping[str, str] | None = None
) -> web.Response:
    body = {"error": {"code": code, "message": message}}
    return web.json_response(body, status=status, headers=dict(headers or {}))
