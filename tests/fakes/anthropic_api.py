"""A scripted fake of the Anthropic Messages API, served on loopback for the real SDK.

Point ``anthropic.AsyncAnthropic(base_url=fake.base_url)`` at it; nothing reaches the network.
It speaks the wire format of ``POST /v1/messages`` (JSON and ``text/event-stream``), answers
with the turns a test scripts, records every request, and rejects what the real API rejects
most often in agent loops: missing auth/fields and ``tool_result`` blocks that don't pair
with the ``tool_use`` blocks of the previous assistant message.

    async with FakeAnthropic() as fake:
        fake.script(reply_tool_use("lookup", {"q": "x"}), reply_text("done"))
        ...
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, Self

from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy

__all__ = [
    "ErrorReply",
    "FakeAnthropic",
    "RecordedRequest",
    "ScriptItem",
    "Turn",
    "reply",
    "reply_pieces",
    "reply_text",
    "reply_tool_use",
    "stream_events",
    "text_block",
    "tool_use_block",
]

Block = dict[str, Any]
StopReason = Literal["end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal"]


@dataclass
class Turn:
    """One assistant response: wire-format content blocks plus how to deliver them.

    ``delay`` sleeps before every SSE event (before the whole body when not streaming);
    ``hold`` is awaited before the stream's ``message_delta`` (before a JSON reply).
    ``cut_after`` ends a stream after that many SSE events, as a slice does (``-1``: all but
    ``message_stop``); the body then ends cleanly, or with ``reset`` the connection is dropped
    mid-body. Only streams are cut.
    """

    content: list[Block]
    stop_reason: StopReason = "end_turn"
    delay: float = 0.0
    hold: asyncio.Event | None = None
    cut_after: int | None = None
    reset: bool = False
    pieces: dict[int, list[str]] | None = None  # a text block's deltas (by index), exactly


@dataclass
class ErrorReply:
    """An HTTP error answer. ``retry_after`` (seconds) is sent as ``retry-after-ms`` so the
    SDK's retry backoff stays fast; ``None`` omits it (the SDK then backs off ~0.5s+)."""

    status: int
    type: str
    message: str
    retry_after: float | None = 0.01


ScriptItem = Turn | ErrorReply | Callable[[dict[str, Any]], Turn | ErrorReply]


@dataclass(frozen=True)
class RecordedRequest:
    body: dict[str, Any]
    headers: CIMultiDictProxy[str]

    @property
    def tool_names(self) -> list[str]:
        return [str(t.get("name")) for t in self.body.get("tools", [])]

    @property
    def tool_results(self) -> list[Block]:
        """The ``tool_result`` blocks of the last message (what the client sent back)."""
        messages = self.body.get("messages") or [{}]
        return [b for b in _blocks(messages[-1]) if b.get("type") == "tool_result"]


def text_block(text: str) -> Block:
    return {"type": "text", "text": text}


def tool_use_block(name: str, input: dict[str, Any], id: str | None = None) -> Block:
    return {
        "type": "tool_use",
        "id": id or f"toolu_{uuid.uuid4().hex[:24]}",
        "name": name,
        "input": input,
    }


def reply(
    *blocks: Block,
    stop_reason: StopReason | None = None,
    delay: float = 0.0,
    hold: asyncio.Event | None = None,
    cut_after: int | None = None,
    reset: bool = False,
) -> Turn:
    """A turn of several blocks; stop_reason defaults to "tool_use" if any block is one."""
    if stop_reason is None:
        has_tool = any(b["type"] == "tool_use" for b in blocks)
        stop_reason = "tool_use" if has_tool else "end_turn"
    return Turn(list(blocks), stop_reason, delay, hold, cut_after, reset)


def reply_text(
    text: str,
    *,
    delay: float = 0.0,
    hold: asyncio.Event | None = None,
    cut_after: int | None = None,
    reset: bool = False,
) -> Turn:
    return reply(text_block(text), delay=delay, hold=hold, cut_after=cut_after, reset=reset)


def reply_pieces(*pieces: str, delay: float = 0.0) -> Turn:
    """A text reply streamed in exactly these deltas (a word split across two, say)."""
    return Turn([text_block("".join(pieces))], "end_turn", delay, pieces={0: list(pieces)})


def reply_tool_use(
    name: str,
    input: dict[str, Any],
    id: str | None = None,
    *,
    delay: float = 0.0,
    hold: asyncio.Event | None = None,
    cut_after: int | None = None,
    reset: bool = False,
) -> Turn:
    block = tool_use_block(name, input, id)
    return reply(block, delay=delay, hold=hold, cut_after=cut_after, reset=reset)


def stream_events(turn: Turn, model: str = "claude-test") -> list[dict[str, Any]]:
    """The SSE events a turn streams, uncut: to pick a ``cut_after`` by what it lands on."""
    return list(_events(_message({"model": model, "messages": []}, turn), turn.pieces))


class _Reject(Exception):
    def __init__(self, reply: ErrorReply, *, retry: bool | None = None) -> None:
        super().__init__(reply.message)
        self.reply, self.retry = reply, retry


@dataclass
class FakeAnthropic:
    """``async with FakeAnthropic() as fake`` serves on ``fake.base_url`` until exit.

    ``api_key``: if set, requests must carry exactly this key (else 401). ``models``: the
    models ``GET /v1/models/{id}`` knows (None: any), others are 404 as the API answers.
    """

    api_key: str | None = None
    models: frozenset[str] | None = None
    requests: list[RecordedRequest] = field(default_factory=list, init=False)
    aborted: int = field(default=0, init=False)  # streams the client left before message_stop
    cut: int = field(default=0, init=False)  # streams cut short as scripted (``cut_after``)
    _queue: deque[ScriptItem] = field(default_factory=deque, init=False)
    _active: set[asyncio.Task[Any]] = field(default_factory=set, init=False)
    _runner: web.AppRunner | None = field(default=None, init=False)
    _port: int = field(default=0, init=False)

    # -- scripting -------------------------------------------------------------------------

    def script(self, *items: ScriptItem) -> None:
        """Queue responses, served one per request in arrival order. A callable item is
        called with the request body and returns the turn (or error) to serve."""
        self._queue.extend(items)

    def error(
        self, status: int, type: str, message: str, *, retry_after: float | None = 0.01
    ) -> None:
        """Queue an error answer, e.g. ``fake.error(529, "overloaded_error", "Overloaded")``."""
        self._queue.append(ErrorReply(status, type, message, retry_after))

    @property
    def pending(self) -> int:
        """How many scripted responses are still queued."""
        return len(self._queue)

    @property
    def base_url(self) -> str:
        if self._runner is None:
            raise RuntimeError("FakeAnthropic is not running; use `async with`")
        return f"http://127.0.0.1:{self._port}"

    # -- lifecycle -------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_get("/v1/models/{model_id}", self._model)
        app.router.add_route("*", "/{tail:.*}", self._not_found)
        runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=1.0)
        await runner.setup()
        try:
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            self._port = int(runner.addresses[0][1])
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for task in list(self._active):  # e.g. streams parked on a `hold` nobody set
            task.cancel()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # -- HTTP ------------------------------------------------------------------------------

    async def _not_found(self, request: web.Request) -> web.Response:
        return _error(ErrorReply(404, "not_found_error", f"Not found: {request.path}"))

    async def _model(self, request: web.Request) -> web.Response:
        """One model's description, as `client.models.retrieve` reads it."""
        self.requests.append(RecordedRequest({}, CIMultiDictProxy(CIMultiDict(request.headers))))
        model_id = request.match_info["model_id"]
        try:
            self._check_auth(request)
        except _Reject as rej:
            return _error(rej.reply, retry=rej.retry)
        if self.models is not None and model_id not in self.models:
            return _error(ErrorReply(404, "not_found_error", f"model: {model_id}"), retry=False)
        body = {"type": "model", "id": model_id, "display_name": f"Fake {model_id}",
                "created_at": "2026-01-01T00:00:00Z"}  # fmt: skip
        return web.json_response(body, headers=_headers())

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        task = asyncio.current_task()
        assert task is not None
        self._active.add(task)
        try:
            body: dict[str, Any] = {}
            try:
                raw = await request.json()
                body = raw if isinstance(raw, dict) else {}
            except ValueError:
                pass
            self.requests.append(
                RecordedRequest(body, CIMultiDictProxy(CIMultiDict(request.headers)))
            )
            try:
                self._check_auth(request)
                _validate(request, body)
                turn = self._next(body)
            except _Reject as rej:
                return _error(rej.reply, retry=rej.retry)
            if isinstance(turn, ErrorReply):
                return _error(turn)
            message = _message(body, turn)
            if body.get("stream"):
                return await self._stream(request, message, turn)
            await asyncio.sleep(turn.delay)
            if turn.hold is not None:
                await turn.hold.wait()
            return web.json_response(message, headers=_headers())
        finally:
            self._active.discard(task)

    def _check_auth(self, request: web.Request) -> None:
        # Real clients send `x-api-key`; anthropic>=2 sends the key as `Authorization: Bearer`.
        key = request.headers.get("x-api-key") or ""
        auth = request.headers.get("authorization", "")
        if not key and auth.lower().startswith("bearer "):
            key = auth[len("bearer ") :].strip()
        if not key:
            raise _Reject(ErrorReply(401, "authentication_error", "x-api-key header is required"))
        if self.api_key is not None and key != self.api_key:
            raise _Reject(ErrorReply(401, "authentication_error", "invalid x-api-key"))

    def _next(self, body: dict[str, Any]) -> Turn | ErrorReply:
        if not self._queue:
            n = len(self.requests)
            msg = f"FakeAnthropic: script ran out (request #{n} has no scripted response)"
            raise _Reject(ErrorReply(500, "api_error", msg), retry=False)
        item = self._queue.popleft()
        if callable(item):
            try:
                item = item(body)
            except Exception as exc:
                msg = f"FakeAnthropic: script callable raised {exc!r}"
                raise _Reject(ErrorReply(500, "api_error", msg), retry=False) from exc
        if isinstance(item, Turn):
            offered = {t.get("name") for t in body.get("tools", [])}
            for b in item.content:
                if b["type"] == "tool_use" and b["name"] not in offered:
                    msg = f"FakeAnthropic: scripted tool_use {b['name']!r} not in tools {offered}"
                    raise _Reject(ErrorReply(500, "api_error", msg), retry=False)
        return item

    async def _stream(
        self, request: web.Request, message: dict[str, Any], turn: Turn
    ) -> web.StreamResponse:
        resp = web.StreamResponse(
            headers=_headers({"Content-Type": "text/event-stream; charset=utf-8"})
        )
        resp.headers["Cache-Control"] = "no-cache"
        await resp.prepare(request)
        events = list(_events(message, getattr(turn, "pieces", None)))  # duck-typed turns too
        if turn.cut_after is not None:
            events = events[: turn.cut_after]
        try:
            for event in events:
                if event["type"] == "message_delta" and turn.hold is not None:
                    await turn.hold.wait()
                await asyncio.sleep(turn.delay)
                payload = json.dumps(event, separators=(",", ":"))
                await resp.write(f"event: {event['type']}\ndata: {payload}\n\n".encode())
            if turn.cut_after is not None:
                self.cut += 1
                if turn.reset and request.transport is not None:
                    # Dropped mid-body: the client never reads the chunked body's last chunk.
                    request.transport.close()
                    return resp
            await resp.write_eof()
        except (asyncio.CancelledError, ConnectionError):
            self.aborted += 1
            raise
        return resp


# -- wire format ---------------------------------------------------------------------------


def _headers(extra: dict[str, str] | None = None) -> dict[str, str]:
    return {"request-id": f"req_{uuid.uuid4().hex[:24]}", **(extra or {})}


def _error(err: ErrorReply, *, retry: bool | None = None) -> web.Response:
    headers = _headers()
    if err.retry_after is not None:
        headers["retry-after-ms"] = str(max(1, round(err.retry_after * 1000)))
    if retry is not None:
        headers["x-should-retry"] = "true" if retry else "false"
    body = {
        "type": "error",
        "error": {"type": err.type, "message": err.message},
        "request_id": headers["request-id"],
    }
    return web.json_response(body, status=err.status, headers=headers)


def _blocks(message: Any) -> list[Block]:
    content = message.get("content") if isinstance(message, dict) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _validate(request: web.Request, body: dict[str, Any]) -> None:
    def bad(msg: str) -> _Reject:
        return _Reject(ErrorReply(400, "invalid_request_error", msg, retry_after=None))

    if not request.headers.get("anthropic-version"):
        raise bad("anthropic-version: header is required")
    if not body:
        raise bad("Request body must be a JSON object")
    for name in ("model", "max_tokens", "messages"):
        if name not in body:
            raise bad(f"{name}: Field required")
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        raise bad("messages: at least one message is required")
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or msg.get("role") not in ("user", "assistant"):
            raise bad(f"messages.{i}: expected an object with role 'user' or 'assistant'")

    def ids(msg: dict[str, Any], kind: str, key: str) -> list[Any]:
        return [b.get(key) for b in _blocks(msg) if b.get("type") == kind]

    uses = [ids(m, "tool_use", "id") if m["role"] == "assistant" else [] for m in messages]
    results = [ids(m, "tool_result", "tool_use_id") for m in messages]
    for i, msg in enumerate(messages):
        for j, b in enumerate(_blocks(msg)):
            if b.get("type") == "tool_result" and b.get("tool_use_id") not in (
                uses[i - 1] if i else []
            ):
                raise bad(
                    f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result`"
                    f" blocks: {b.get('tool_use_id')}. Each `tool_result` block must have a"
                    " corresponding `tool_use` block in the previous message."
                )
    for i, used in enumerate(uses[:-1]):
        if missing := [u for u in used if u not in results[i + 1]]:
            raise bad(
                f"messages.{i}: `tool_use` ids were found without `tool_result` blocks"
                f" immediately after: {', '.join(map(str, missing))}. Each `tool_use` block"
                " must have a corresponding `tool_result` block in the next message."
            )


def _message(body: dict[str, Any], turn: Turn) -> dict[str, Any]:
    out_tokens = max(1, len(json.dumps(turn.content)) // 4)
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": body["model"],
        "content": turn.content,
        "stop_reason": turn.stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": max(1, len(json.dumps(body["messages"])) // 4),
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": out_tokens,
            "service_tier": "standard",
        },
    }


def _events(
    message: dict[str, Any], text_deltas: dict[int, list[str]] | None = None
) -> Iterator[dict[str, Any]]:
    start = {**message, "content": [], "stop_reason": None}
    start["usage"] = {**message["usage"], "output_tokens": 1}
    yield {"type": "message_start", "message": start}
    yield {"type": "ping"}
    for index, block in enumerate(message["content"]):
        head, deltas = block, []  # other block types arrive whole in content_block_start
        if block["type"] == "text":
            head = {"type": "text", "text": ""}
            texts = (text_deltas or {}).get(index) or _split_text(block["text"])
            deltas = [{"type": "text_delta", "text": t} for t in texts]
        elif block["type"] == "tool_use":
            head = {**block, "input": {}}
            pieces = ["", *_split_json(json.dumps(block["input"]))]
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces]
        yield {"type": "content_block_start", "index": index, "content_block": head}
        for delta in deltas:
            yield {"type": "content_block_delta", "index": index, "delta": delta}
        yield {"type": "content_block_stop", "index": index}
    yield {
        "type": "message_delta",
        "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
        "usage": {"output_tokens": message["usage"]["output_tokens"]},
    }
    yield {"type": "message_stop"}


def _split_text(text: str) -> list[str]:
    """Word-sized chunks ("Hello ", "world") that join back to ``text``."""
    return [p for p in re.split(r"(?<=\s)(?=\S)", text) if p]


def _split_json(s: str) -> list[str]:
    """Three-ish pieces, so a client sees the arguments arrive piecewise."""
    size = max(1, -(-len(s) // 3))
    return [s[i : i + size] for i in range(0, len(s), size)]
