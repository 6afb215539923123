"""A stateful fake of the Slack Web API, served on loopback for the real slack_sdk and Bolt.

slack_sdk builds ``urljoin(base_url, method)``, so ``fake.base_url`` ends in ``/api/``:

    async with FakeSlack(users={"U0ALICE": "alice"}) as fake:
        client = AsyncWebClient(token=fake.token, base_url=fake.base_url)
        posted = await client.chat_postMessage(channel="C1", text="hi")
        assert fake.message("C1", posted["ts"])["text"] == "hi"

Bodies may be JSON, form-encoded (``blocks``/``view`` as JSON strings) or query strings; the
token comes from ``Authorization: Bearer`` or a ``token`` argument. What is sent is checked
against Slack's Block Kit limits (``block_errors``/``view_errors``, usable on their own) and,
when ``HITL_SLACK_SCHEMA_DIR`` names a folder with ``blockkit-{message,modal}.schema.json``
and ``jsonschema`` is installed, against those schemas too. ``url_private`` of added files and
``new_response_url()`` are served by the fake as well, so nothing reaches the network.

Streamed messages (``chat.startStream``/``appendStream``/``stopStream``, Slack's AI-app
methods) are stored as messages whose ``text`` grows with each ``markdown_text``, whose
``blocks`` are those of ``blocks`` chunks and whose ``tasks`` (the fake's own field) are the
task cards by id, as their ``task_update`` chunks left them; ``streaming(channel, ts)`` says
whether one is still open. Every call the fake refuses (not those a test injected with
``fail`` or ``rate_limit``) is listed in ``refused`` as ``(method, error)``.

Every answer to the bot token lists its ``scopes`` in the ``x-oauth-scopes`` header, as Slack
does (manifest.yml's by default); an unknown token is answered ``invalid_auth``.

Socket Mode: ``apps.connections.open`` (only with ``fake.app_token``, an ``xapp-`` token, which
no other method takes) hands out a WebSocket URL served by the fake; ``sockets`` are those
connected, ``drop_sockets()`` closes them from Slack's side (as Slack does to refresh them).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import functools
import importlib
import itertools
import json
import os
import secrets
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

from aiohttp import web

__all__ = [
    "APP_ID",
    "APP_TOKEN",
    "BOT_ID",
    "BOT_TOKEN",
    "BOT_USER_ID",
    "TEAM_DOMAIN",
    "TEAM_ID",
    "FakeSlack",
    "SlackError",
    "block_errors",
    "home_errors",
    "view_errors",
]

JSON = dict[str, Any]
_T = TypeVar("_T")

BOT_TOKEN = "xoxb-fake-bot-token"
APP_TOKEN = "xapp-1-A0APP00001-fake-app-token"  # an app-level token: Socket Mode only
TEAM_ID = "T0FAKE0001"
TEAM_DOMAIN = "fake"
BOT_USER_ID = "U0BOT00001"
BOT_ID = "B0BOT00001"
APP_ID = "A0APP00001"

MAX_BLOCKS = {"message": 50, "modal": 100, "home": 100}
MAX_TEXT = 40_000
BLOCK_TYPES = {
    "actions", "context", "divider", "file", "header", "image", "input", "markdown",
    "rich_text", "section", "table", "video",
}  # fmt: skip
# Per block/element type: (path, max characters); "*" walks a list.
FIELD_LIMITS: dict[str, tuple[tuple[str, int], ...]] = {
    "section": (("text/text", 3000), ("fields/*/text", 2000)),
    "header": (("text/text", 150),),
    "button": (("text/text", 75), ("value", 2000), ("url", 3000), ("accessibility_label", 75)),
    "input": (("label/text", 2000), ("hint/text", 2000)),
    "image": (("image_url", 3000), ("alt_text", 2000), ("title/text", 2000)),
    "markdown": (("text", 12000),),
}
COUNT_LIMITS: dict[str, tuple[tuple[str, int], ...]] = {
    "section": (("fields", 10),),
    "actions": (("elements", 25),),
    "context": (("elements", 10),),
}
# Per block/element type: the text objects that must be plain_text.
PLAIN_TEXT_ONLY = {
    "header": ("text",),
    "button": ("text",),
    "input": ("label", "hint"),
    "plain_text_input": ("placeholder",),
    "static_select": ("placeholder",),
}
OPTION_LIMITS = (("text/text", 75), ("value", 150), ("description/text", 75))
OPTIONS_MAX = 100
EMPTY = "must be more than 0 characters"
# The bot token's scopes, told in every answer's `x-oauth-scopes` header: manifest.yml's.
BOT_SCOPES = (
    "app_mentions:read", "channels:history", "groups:history", "im:history", "chat:write",
    "commands", "files:read", "im:write", "users:read", "users:read.email", "channels:read",
    "groups:read", "usergroups:read", "assistant:write",
)  # fmt: skip
# assistant.threads.*: Slack's limits (a call beyond them is refused `invalid_arguments`).
MAX_PROMPTS = 4
MAX_LOADING_MESSAGES = 10
# The scopes each assistant method takes (any one of them): setStatus works with chat:write
# too since 2026-03, in channels' threads as in the assistant view.
ASSISTANT_SCOPES = {
    "assistant.threads.setStatus": ("assistant:write", "chat:write"),
    "assistant.threads.setTitle": ("assistant:write",),
    "assistant.threads.setSuggestedPrompts": ("assistant:write",),
}


class SlackError(Exception):
    """Answered as ``{"ok": false, "error": error, **extra}`` with HTTP ``status``."""

    def __init__(self, error: str, status: int = 200, **extra: Any) -> None:
        super().__init__(error)
        self.error, self.status, self.extra = error, status, extra


# ---------------------------------------------------------------- Block Kit checks


def _at(node: Any, path: str, ptr: str) -> Iterator[tuple[Any, str]]:
    """Values at ``a/b`` or ``a/*/b`` inside ``node`` with their JSON pointers."""
    key, _, rest = path.partition("/")
    items: list[tuple[Any, str]] = []
    if key == "*" and isinstance(node, list):
        items = [(v, f"{ptr}/{i}") for i, v in enumerate(node)]
    elif isinstance(node, dict) and key in node:
        items = [(node[key], f"{ptr}/{key}")]
    for value, p in items:
        yield from _at(value, rest, p) if rest else [(value, p)]


def _nodes(node: Any, ptr: str) -> Iterator[tuple[JSON, str]]:
    """Every object inside ``node`` (itself included), depth first."""
    if isinstance(node, dict):
        yield node, ptr
        children: Iterator[tuple[str, Any]] = iter(node.items())
    elif isinstance(node, list):
        children = ((str(i), v) for i, v in enumerate(node))
    else:
        return
    for key, child in children:
        yield from _nodes(child, f"{ptr}/{key}")


def _err(message: str, ptr: str) -> str:
    return f"{message} [json-pointer:{ptr}]"


def _too_long(value: Any, limit: int, ptr: str) -> list[str]:
    if isinstance(value, str) and len(value) > limit:
        return [_err(f"must be less than {limit + 1} characters", ptr)]
    return []


def block_errors(blocks: Any, *, surface: str = "message", ptr: str = "/blocks") -> list[str]:
    """Slack-style errors for a ``blocks`` array (``surface`` is "message" or "modal")."""
    if not isinstance(blocks, list):
        return [_err("must be an array", ptr)]
    errors: list[str] = []
    if len(blocks) > MAX_BLOCKS[surface]:
        errors.append(
            _err(f"must provide an array with no more than {MAX_BLOCKS[surface]} items", ptr)
        )
    block_ids: set[str] = set()
    for i, block in enumerate(blocks):
        bptr = f"{ptr}/{i}"
        action_ids: set[str] = set()  # unique within their block (Slack's rule), not beyond
        if not isinstance(block, dict) or block.get("type") not in BLOCK_TYPES:
            errors.append(_err("failed to match all allowed schemas", bptr))
            continue
        if (block_id := block.get("block_id")) is not None:
            errors += _too_long(block_id, 255, f"{bptr}/block_id")
            if block_id in block_ids:
                errors.append(_err(f"duplicate block_id '{block_id}'", f"{bptr}/block_id"))
            block_ids.add(block_id)
        kind = block["type"]
        if kind == "section" and not block.get("text") and not block.get("fields"):
            errors.append(_err("must provide either text or fields", bptr))
        if kind == "input" and not (block.get("label") and block.get("element")):
            errors.append(_err("must provide a label and an element", bptr))
        for node, nptr in _nodes(block, bptr):
            errors += _node_errors(node, nptr, action_ids)
    return errors


def _node_errors(node: JSON, ptr: str, action_ids: set[str]) -> list[str]:
    errors: list[str] = []
    kind = node.get("type")
    if kind in ("plain_text", "mrkdwn") and node.get("text") == "":
        errors.append(_err(EMPTY, f"{ptr}/text"))
    if (action_id := node.get("action_id")) is not None:
        errors += _too_long(action_id, 255, f"{ptr}/action_id")
        if action_id in action_ids:
            errors.append(_err(f"duplicate action_id '{action_id}'", f"{ptr}/action_id"))
        action_ids.add(action_id)
    for key in PLAIN_TEXT_ONLY.get(str(kind), ()):
        errors += _plain_text(node.get(key), f"{ptr}/{key}")
    for path, limit in FIELD_LIMITS.get(str(kind), ()):
        for value, vptr in _at(node, path, ptr):
            errors += _too_long(value, limit, vptr)
    for path, limit in COUNT_LIMITS.get(str(kind), ()):
        value = node.get(path)
        if isinstance(value, list) and len(value) > limit:
            errors.append(_err(f"must provide an array with no more than {limit} items", ptr))
    if isinstance(options := node.get("options"), list):
        if len(options) > OPTIONS_MAX:
            errors.append(_err(f"must provide an array with no more than {OPTIONS_MAX} items", ptr))
        for path, limit in OPTION_LIMITS:
            for value, vptr in _at(options, f"*/{path}", f"{ptr}/options"):
                errors += _too_long(value, limit, vptr)
    return errors


def view_errors(view: Any, *, ptr: str = "/view") -> list[str]:
    """Slack-style errors for a modal view (``views.open``/``update``/``push``)."""
    if not isinstance(view, dict):
        return [_err("must be an object", ptr)]
    errors: list[str] = []
    if view.get("type") != "modal":
        errors.append(_err("must be 'modal'", f"{ptr}/type"))
    if not isinstance(view.get("title"), dict):
        errors.append(_err("must provide a title", ptr))
    for key in ("title", "submit", "close"):
        errors += _plain_text(view.get(key), f"{ptr}/{key}")
        for value, vptr in _at(view, f"{key}/text", ptr):
            errors += _too_long(value, 24, vptr) if value else [_err(EMPTY, vptr)]
    errors += _too_long(view.get("callback_id"), 255, f"{ptr}/callback_id")
    errors += _too_long(view.get("external_id"), 255, f"{ptr}/external_id")
    errors += _too_long(view.get("private_metadata"), 3000, f"{ptr}/private_metadata")
    blocks = view.get("blocks")
    errors += block_errors(blocks, surface="modal", ptr=f"{ptr}/blocks")
    has_input = isinstance(blocks, list) and any(
        isinstance(b, dict) and b.get("type") == "input" for b in blocks
    )
    if has_input and not view.get("submit"):
        errors.append(_err("must provide a submit property when using input blocks", ptr))
    return errors


def home_errors(view: Any, *, ptr: str = "/view") -> list[str]:
    """Slack-style errors for an App Home view (``views.publish``): type "home", at most 100
    blocks; its blocks are those a modal may hold, so the modal schema checks them too."""
    if not isinstance(view, dict):
        return [_err("must be an object", ptr)]
    errors = [] if view.get("type") == "home" else [_err("must be 'home'", f"{ptr}/type")]
    for key in ("callback_id", "external_id"):
        errors += _too_long(view.get(key), 255, f"{ptr}/{key}")
    errors += _too_long(view.get("private_metadata"), 3000, f"{ptr}/private_metadata")
    errors += block_errors(view.get("blocks"), surface="home", ptr=f"{ptr}/blocks")
    if not errors:
        as_modal = {"type": "modal", "title": {"type": "plain_text", "text": "Home"},
                    "blocks": view["blocks"]}  # fmt: skip
        errors = _schema_errors("modal", as_modal, ptr)
    return errors


def _plain_text(text: Any, ptr: str) -> list[str]:
    if text is None:
        return []
    if not isinstance(text, dict) or text.get("type") != "plain_text":
        return [_err("'plain_text' was expected", f"{ptr}/type")]
    return []


@functools.cache
def _validator(path: str) -> Any:
    try:
        jsonschema = importlib.import_module("jsonschema")
    except ImportError:  # pragma: no cover - jsonschema is a dev dependency
        return None
    return jsonschema.Draft7Validator(json.loads(Path(path).read_text()))


def _schema_errors(surface: str, instance: JSON, ptr: str = "") -> list[str]:
    """Errors from the conformance schema, if ``HITL_SLACK_SCHEMA_DIR`` points at one."""
    folder = os.environ.get("HITL_SLACK_SCHEMA_DIR")
    path = Path(folder, f"blockkit-{surface}.schema.json") if folder else None
    if path is None or not path.is_file() or (validator := _validator(str(path))) is None:
        return []
    best_match = importlib.import_module("jsonschema.exceptions").best_match
    return [
        _err(best.message[:300], ptr + "".join(f"/{p}" for p in best.absolute_path))
        for error in validator.iter_errors(instance)
        if (best := best_match([error])) is not None
    ]


def _message_errors(args: JSON, channel: str, *, need_content: bool = True) -> None:
    """Raise what Slack answers for a message's ``text``/``blocks``."""
    if need_content and not args.get("text") and not args.get("blocks"):
        raise SlackError("no_text")
    if isinstance(args.get("text"), str) and len(args["text"]) > MAX_TEXT:
        raise SlackError("msg_too_long")
    if "blocks" not in args:
        return
    errors = block_errors(args["blocks"])
    if not errors:
        payload = {"channel": channel, "blocks": args["blocks"]}
        payload |= {k: args[k] for k in ("text", "thread_ts") if isinstance(args.get(k), str)}
        errors = _schema_errors("message", payload)
    if errors:
        raise SlackError("invalid_blocks", errors=errors, response_metadata=_metadata(errors))


def _check_view(view: Any) -> JSON:
    errors = view_errors(view) or _schema_errors("modal", view, "/view")
    if errors:
        raise SlackError("invalid_arguments", errors=errors, response_metadata=_metadata(errors))
    return dict(view)


def _metadata(errors: list[str]) -> JSON:
    return {"messages": [f"[ERROR] {e}" for e in errors]}


# ---------------------------------------------------------------- the fake server


@dataclass
class _Fault:
    status: int
    error: str
    retry_after: int | None = None
    body: str | None = None  # sent as it is (say, a proxy's HTML page) instead of Slack's JSON
    content_type: str = "text/html"


@dataclass
class _Trigger:
    issued: float
    view_id: str | None
    used: bool = False


class FakeSlack:
    """Fake Slack Web API on 127.0.0.1; an async context manager. See the module docstring."""

    def __init__(
        self,
        *,
        token: str = BOT_TOKEN,
        app_token: str = APP_TOKEN,
        team_id: str = TEAM_ID,
        team_name: str = "Fake Workspace",
        bot_user_id: str = BOT_USER_ID,
        bot_id: str = BOT_ID,
        bot_name: str = "hitl-bridge",
        app_id: str = APP_ID,
        users: Mapping[str, str] | None = None,
        trigger_ttl: float = 3.0,
        scopes: tuple[str, ...] = BOT_SCOPES,
    ) -> None:
        self.token, self.app_token, self.tokens = token, app_token, {token, app_token}
        self.scopes = scopes  # the bot token's, as Slack lists them (`x-oauth-scopes`)
        self.sockets: list[web.WebSocketResponse] = []  # Socket Mode connections, open ones
        self.team_id, self.team_name, self.app_id = team_id, team_name, app_id
        self.bot_user_id, self.bot_id, self.bot_name = bot_user_id, bot_id, bot_name
        self.trigger_ttl = trigger_ttl
        self.users: dict[str, JSON] = {}
        self.channels: set[str] = set()  # known to conversations.info (with those posted in)
        self.usergroups: dict[str, list[str]] = {}  # user group id -> its members' user ids
        self.files: dict[str, JSON] = {}
        self.calls: list[tuple[str, JSON]] = []
        self.traceparents: list[tuple[str, str | None]] = []  # each call's W3C trace context
        self.ephemerals: list[JSON] = []
        self.views: dict[str, JSON] = {}
        self.homes: dict[str, JSON] = {}  # user id -> their App Home view (views.publish)
        self.responses: list[JSON] = []  # bodies posted to response_urls
        # assistant.threads.*, per (channel, thread_ts): each setStatus (status and loading
        # messages), the titles and the suggested prompts set, in order
        self.statuses: defaultdict[tuple[str, str], list[JSON]] = defaultdict(list)
        self.titles: defaultdict[tuple[str, str], list[str]] = defaultdict(list)
        self.prompts: defaultdict[tuple[str, str], list[JSON]] = defaultdict(list)
        # Calls Slack would refuse for what they sent (method, error): a test expects none
        self.refused: list[tuple[str, str]] = []
        self._streams: dict[tuple[str, str], bool] = {}  # a streamed message: still open?
        self._messages: defaultdict[str, dict[str, JSON]] = defaultdict(dict)
        self._history: defaultdict[tuple[str, str], list[JSON]] = defaultdict(list)
        self._faults: defaultdict[str, deque[_Fault]] = defaultdict(deque)
        self._holds: list[tuple[str, Callable[[JSON], bool], asyncio.Event]] = []
        self.held: list[JSON] = []  # the arguments of each held call, as it began to wait
        self._triggers: dict[str, _Trigger] = {}
        self._response_urls: dict[str, tuple[str, str, int]] = {}  # key -> channel, ts, uses
        self._file_bodies: dict[str, bytes] = {}
        self._seq = itertools.count(1)
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self.url = ""
        self.add_user(bot_user_id, bot_name, is_bot=True)
        for user_id, name in (users or {}).items():
            self.add_user(user_id, name)
        self._methods: dict[str, Callable[[JSON], JSON]] = {
            "auth.test": self._auth_test,
            "users.info": self._users_info,
            "chat.postMessage": self._post_message,
            "chat.update": self._update,
            "chat.postEphemeral": self._post_ephemeral,
            "chat.delete": self._delete,
            "views.open": self._views_open,
            "views.update": self._views_update,
            "views.push": self._views_push,
            "views.publish": self._views_publish,
            "conversations.replies": self._replies,
            "files.info": self._files_info,
            "users.lookupByEmail": self._lookup_by_email,
            "conversations.open": self._open,
            "conversations.info": self._conversation_info,
            "usergroups.users.list": self._usergroup_users,
            "apps.connections.open": self._connections_open,
            "assistant.threads.setStatus": self._set_status,
            "assistant.threads.setTitle": self._set_title,
            "assistant.threads.setSuggestedPrompts": self._set_suggested_prompts,
            "chat.startStream": self._start_stream,
            "chat.appendStream": self._append_stream,
            "chat.stopStream": self._stop_stream,
        }

    # -- lifecycle

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_post("/actions/{key:.+}", self._response_url)
        app.router.add_get("/files-pri/{key}/{name:.+}", self._file)
        app.router.add_get("/link/", self._socket)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        host, port = self._runner.addresses[0][:2]
        self.url = f"http://{host}:{port}"
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.drop_sockets()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @property
    def base_url(self) -> str:
        """For ``AsyncWebClient(base_url=...)`` / ``SLACK_API_URL``."""
        return f"{self.url}/api/"

    # -- set-up

    def add_user(self, user_id: str, name: str, *, is_bot: bool = False, **extra: Any) -> JSON:
        real_name = extra.pop("real_name", name.title())
        profile = {"real_name": real_name, "display_name": name, "team": self.team_id}
        if (email := extra.pop("email", None)) is not None:
            profile["email"] = email
        self.users[user_id] = {
            "id": user_id, "team_id": self.team_id, "name": name, "real_name": real_name,
            "deleted": False, "is_bot": is_bot, "is_admin": False, "is_app_user": False,
            "tz": "UTC", "tz_offset": 0, "profile": profile, **extra,
        }  # fmt: skip
        return self.users[user_id]

    def add_usergroup(self, usergroup_id: str, users: list[str]) -> list[str]:
        """A user group (``S…``) for ``usergroups.users.list``, with its members' ids."""
        self.usergroups[usergroup_id] = list(users)
        return self.usergroups[usergroup_id]

    def add_file(
        self, file_id: str, name: str, content: bytes = b"", *, mimetype: str = "text/plain",
        **extra: Any,
    ) -> JSON:  # fmt: skip
        """A file for ``files.info``; its ``url_private`` (Bearer auth) serves ``content``."""
        self._file_bodies[file_id] = content
        self.files[file_id] = {
            "id": file_id, "name": name, "title": name, "mimetype": mimetype,
            "filetype": name.rpartition(".")[2] if "." in name else "text",
            "size": len(content), "user": self.bot_user_id, "created": 1700000000, **extra,
        }  # fmt: skip
        return self.files[file_id]

    def add_message(
        self, channel: str, text: str, *, user: str, thread_ts: str | None = None, **extra: Any
    ) -> JSON:
        """Store a message posted by someone else (e.g. a human reply in a thread)."""
        msg = {"type": "message", "user": user, "team": self.team_id, "text": text, **extra}
        return copy.deepcopy(self._store(channel, msg, thread_ts))

    def new_trigger_id(self, *, view_id: str | None = None, age: float = 0.0) -> str:
        """A trigger_id for one ``views.open``/``push`` within ``trigger_ttl`` seconds.

        ``view_id`` ties it to a modal (as for a click inside that modal, for ``views.push``);
        ``age`` pretends it was issued that many seconds ago.
        """
        trigger_id = f"{next(self._seq)}.{self.team_id[1:]}.{secrets.token_hex(16)}"
        self._triggers[trigger_id] = _Trigger(time.monotonic() - age, view_id)
        return trigger_id

    def new_response_url(self, channel: str, ts: str) -> str:
        """A response_url for the message at ``channel``/``ts``, served by the fake."""
        key = f"{self.team_id}/{next(self._seq)}/{secrets.token_hex(12)}"
        self._response_urls[key] = (channel, ts, 0)
        return f"{self.url}/actions/{key}"

    def rate_limit(self, method: str, times: int = 1, retry_after: int = 1) -> None:
        """The next ``times`` calls of ``method`` answer HTTP 429 with ``Retry-After``."""
        self._faults[method].extend(_Fault(429, "ratelimited", retry_after) for _ in range(times))

    def hold(self, method: str, when: Callable[[JSON], bool]) -> asyncio.Event:
        """The next call of `method` whose arguments `when` accepts waits, listed in `held`,
        until the returned event is set; then it is answered as usual (a slow call, in an
        order the test decides)."""
        released = asyncio.Event()
        self._holds.append((method, when, released))
        return released

    def fail(
        self,
        method: str,
        error: str = "internal_error",
        times: int = 1,
        status: int = 200,
        *,
        body: str | None = None,
        content_type: str = "text/html",
    ) -> None:
        """The next ``times`` calls of ``method`` answer ``{"ok": false, "error": error}``, or
        ``body`` as it is (with ``content_type``) when given: what a proxy in front of Slack
        answers when Slack is down."""
        fault = _Fault(status, error, body=body, content_type=content_type)
        self._faults[method].extend(dataclasses.replace(fault) for _ in range(times))

    async def drop_sockets(self) -> None:
        """Close every Socket Mode connection from Slack's side: the client reconnects."""
        for socket in list(self.sockets):
            await socket.close()

    # -- inspection

    def messages(self, channel: str) -> list[JSON]:
        """Current messages of ``channel`` (threads included), oldest first."""
        found = sorted(self._messages[channel].values(), key=lambda m: float(m["ts"]))
        return copy.deepcopy(found)

    def message(self, channel: str, ts: str) -> JSON:
        """The current version of a message; KeyError if absent or deleted."""
        return copy.deepcopy(self._messages[channel][ts])

    def edits(self, channel: str, ts: str) -> list[JSON]:
        """Every version of a message: as posted, then after each update."""
        return copy.deepcopy(self._history[channel, ts])

    def thread(self, channel: str, ts: str) -> list[JSON]:
        """The thread containing ``ts``: the parent, then the replies oldest first."""
        root = self._messages[channel][ts].get("thread_ts", ts)
        return [m for m in self.messages(channel) if m["ts"] == root or m.get("thread_ts") == root]

    def status_history(self, channel: str, thread_ts: str) -> list[str]:
        """Every status set on a thread (`""`: cleared), oldest first."""
        return [str(call["status"]) for call in self.statuses[channel, thread_ts]]

    def streaming(self, channel: str, ts: str) -> bool | None:
        """Whether the streamed message at ``channel``/``ts`` is still open (None: not one)."""
        return self._streams.get((channel, ts))

    def calls_to(self, method: str) -> list[JSON]:
        return [args for name, args in self.calls if name == method]

    async def wait_for(self, predicate: Callable[[], _T], timeout: float = 5) -> _T:
        """Wait until ``predicate()`` is truthy (a LookupError counts as not yet); return it."""
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
                # Each call with the start of its text: which message an edit or post was.
                seen = [f"{name} {str(args.get('text') or '')[:24]!r}" for name, args in self.calls]
                raise TimeoutError(f"not met within {timeout}s; calls: {seen}") from None
        return result[0]

    async def wait_for_call(self, method: str, n: int = 1, timeout: float = 5) -> list[JSON]:
        """Wait until ``method`` was called ``n`` times; return the args of all its calls."""
        await self.wait_for(lambda: len(self.calls_to(method)) >= n, timeout)
        return self.calls_to(method)

    # -- HTTP

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        args: JSON = dict(request.query)
        try:
            args |= await _body(request)
        except SlackError as e:
            return web.json_response({"ok": False, "error": e.error}, status=e.status)
        for key in ("blocks", "view", "attachments", "metadata"):
            if isinstance(args.get(key), str):
                with contextlib.suppress(ValueError):  # else left a string for the checks
                    args[key] = json.loads(args[key])
        auth = request.headers.get("Authorization", "")
        token = args.pop("token", None) or auth.removeprefix("Bearer ").strip() or None
        self.calls.append((method, args))
        self.traceparents.append((method, request.headers.get("traceparent")))
        await self._held(method, args)
        headers: dict[str, str] = {}
        try:
            if token is None:
                raise SlackError("not_authed")
            if token not in self.tokens:
                raise SlackError("invalid_auth")
            if (token == self.app_token) != (method == "apps.connections.open"):
                raise SlackError("not_allowed_token_type")
            if token == self.token:
                headers["x-oauth-scopes"] = ",".join(self.scopes)
            if self._faults[method]:
                fault = self._faults[method].popleft()
                if fault.retry_after is not None:
                    headers["Retry-After"] = str(fault.retry_after)
                if fault.body is not None:
                    return await self._raw(fault)
                raise SlackError(fault.error, fault.status)
            if method not in self._methods:
                raise SlackError("unknown_method", req_method=method)
            try:
                status, body = 200, {"ok": True, **self._methods[method](copy.deepcopy(args))}
            except SlackError as refusal:
                self.refused.append((method, refusal.error))
                raise
        except SlackError as e:
            status, body = e.status, {"ok": False, "error": e.error, **e.extra}
        async with self._changed:
            self._changed.notify_all()
        return web.json_response(body, status=status, headers=headers)

    async def _held(self, method: str, args: JSON) -> None:
        for hold in self._holds:
            name, when, released = hold
            if name == method and when(args):
                self._holds.remove(hold)
                self.held.append(copy.deepcopy(args))
                async with self._changed:
                    self._changed.notify_all()
                await released.wait()
                return

    async def _raw(self, fault: _Fault) -> web.Response:
        async with self._changed:
            self._changed.notify_all()
        return web.Response(
            status=fault.status, body=(fault.body or "").encode(), content_type=fault.content_type
        )

    async def _response_url(self, request: web.Request) -> web.Response:
        key = request.match_info["key"]
        if key not in self._response_urls or self._response_urls[key][2] >= 5:
            return web.json_response({"ok": False, "error": "expired_url"}, status=404)
        channel, ts, uses = self._response_urls[key]
        self._response_urls[key] = (channel, ts, uses + 1)
        body = await request.json()
        self.responses.append({"url": str(request.url), **body})
        try:
            if body.get("delete_original"):
                self._delete({"channel": channel, "ts": ts})
            elif body.get("replace_original"):
                self._update({"channel": channel, "ts": ts, **body})
            elif body.get("response_type") == "in_channel":
                self._post_message({"channel": channel, **body})
            else:
                _message_errors(body, channel)
                self.ephemerals.append({"channel": channel, **body})
        except SlackError as e:
            return web.json_response({"ok": False, "error": e.error, **e.extra}, status=400)
        finally:
            async with self._changed:
                self._changed.notify_all()
        return web.json_response({"ok": True})

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        """A Socket Mode connection: Slack's `hello`, then open until either side closes it."""
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        self.sockets.append(socket)
        await socket.send_json({"type": "hello", "num_connections": len(self.sockets),
                                "connection_info": {"app_id": self.app_id}})  # fmt: skip
        async with self._changed:
            self._changed.notify_all()
        try:
            async for _ in socket:  # envelopes' acks: not looked at
                pass
        finally:
            self.sockets.remove(socket)
            async with self._changed:
                self._changed.notify_all()
        return socket

    async def _file(self, request: web.Request) -> web.Response:
        file_id = request.match_info["key"].rpartition("-")[2]
        auth = request.headers.get("Authorization", "").removeprefix("Bearer ")
        if auth not in self.tokens or file_id not in self.files:
            return web.Response(status=404 if auth in self.tokens else 403)
        mimetype = self.files[file_id]["mimetype"]
        return web.Response(body=self._file_bodies[file_id], content_type=mimetype)

    # -- state

    def _next_ts(self) -> str:
        n = next(self._seq)
        return f"{1700000000 + n // 10000}.{n % 10000 * 100:06d}"

    def _store(self, channel: str, msg: JSON, thread_ts: str | None) -> JSON:
        msg["ts"] = self._next_ts()
        if thread_ts:
            msg["thread_ts"] = thread_ts
            if parent := self._messages[channel].get(thread_ts):
                parent["thread_ts"] = thread_ts
                parent["reply_count"] = parent.get("reply_count", 0) + 1
                parent["latest_reply"] = msg["ts"]
        self._messages[channel][msg["ts"]] = msg
        self._history[channel, msg["ts"]].append(copy.deepcopy(msg))
        return msg

    def _own_message(self, args: JSON, refusal: str) -> JSON:
        msg = self._messages.get(str(args.get("channel")), {}).get(str(args.get("ts")))
        if msg is None:
            raise SlackError("message_not_found")
        if msg.get("user") != self.bot_user_id:
            raise SlackError(refusal)
        return msg

    def _use_trigger(self, trigger_id: Any) -> _Trigger:
        trigger = self._triggers.get(str(trigger_id))
        if trigger is None:
            raise SlackError("invalid_trigger_id")
        if trigger.used or time.monotonic() - trigger.issued > self.trigger_ttl:
            raise SlackError("expired_trigger_id")
        trigger.used = True
        return trigger

    def _new_view(self, view: JSON, root: str | None = None, previous: str | None = None) -> JSON:
        view_id = f"V{next(self._seq):09d}"
        self.views[view_id] = self._view(view, view_id, root or view_id, previous)
        return {"view": copy.deepcopy(self.views[view_id])}

    def _view(
        self, view: JSON, view_id: str, root: str, previous: str | None, state: Any = None
    ) -> JSON:
        return {
            "type": "modal", "blocks": [], "private_metadata": "", "callback_id": "",
            "external_id": "", "clear_on_close": False, "notify_on_close": False,
            "close": None, "submit": None, **view, "id": view_id, "team_id": self.team_id,
            "state": state or {"values": {}}, "hash": self._hash(), "previous_view_id": previous,
            "root_view_id": root, "app_id": self.app_id, "app_installed_team_id": self.team_id,
            "bot_id": self.bot_id,
        }  # fmt: skip

    def _hash(self) -> str:
        return f"{1700000000 + next(self._seq)}.{secrets.token_hex(4)}"

    # -- methods: each takes the parsed args, returns the answer without "ok"

    def _auth_test(self, args: JSON) -> JSON:
        return {
            "url": f"https://{TEAM_DOMAIN}.slack.com/", "team": self.team_name,
            "user": self.bot_name, "team_id": self.team_id, "user_id": self.bot_user_id,
            "bot_id": self.bot_id, "is_enterprise_install": False,
        }  # fmt: skip

    def _connections_open(self, args: JSON) -> JSON:
        return {
            "url": f"{self.url.replace('http://', 'ws://')}/link/?ticket={secrets.token_hex(8)}"
        }

    def _users_info(self, args: JSON) -> JSON:
        if (user := self.users.get(str(args.get("user")))) is None:
            raise SlackError("user_not_found")
        return {"user": copy.deepcopy(user)}

    def _lookup_by_email(self, args: JSON) -> JSON:
        email = str(args.get("email", "")).lower()
        for user in self.users.values():
            if str(user["profile"].get("email", "")).lower() == email and email:
                return {"user": copy.deepcopy(user)}
        raise SlackError("users_not_found")

    def _open(self, args: JSON) -> JSON:
        """A DM with one user (`users`): its id is the user's with a D."""
        users = str(args.get("users", "")).split(",")
        if len(users) != 1 or users[0] not in self.users:
            raise SlackError("user_not_found")
        channel = "D" + users[0][1:]
        self.channels.add(channel)
        return {"channel": {"id": channel, "is_im": True, "user": users[0]}}

    def _conversation_info(self, args: JSON) -> JSON:
        channel = str(args.get("channel", ""))
        if channel not in self.channels and channel not in self._messages:
            raise SlackError("channel_not_found")
        return {"channel": {"id": channel, "is_member": True}}

    def _usergroup_users(self, args: JSON) -> JSON:
        if (users := self.usergroups.get(str(args.get("usergroup")))) is None:
            raise SlackError("no_such_subteam")
        return {"users": list(users)}

    def _post_message(self, args: JSON) -> JSON:
        if not (channel := args.get("channel")):
            raise SlackError("channel_not_found")
        _message_errors(args, channel)
        msg = {"type": "message", "user": self.bot_user_id, "bot_id": self.bot_id}
        msg |= {"app_id": self.app_id, "team": self.team_id, "text": args.get("text", "")}
        msg |= {k: args[k] for k in ("blocks", "attachments", "metadata") if k in args}
        msg = self._store(channel, msg, args.get("thread_ts"))
        return {"channel": channel, "ts": msg["ts"], "message": copy.deepcopy(msg)}

    def _update(self, args: JSON) -> JSON:
        msg = self._own_message(args, "cant_update_message")
        _message_errors(args, args["channel"], need_content="text" not in args)
        msg.update({k: args[k] for k in ("text", "blocks", "attachments", "metadata") if k in args})
        msg["edited"] = {"user": self.bot_user_id, "ts": self._next_ts()}
        self._history[args["channel"], msg["ts"]].append(copy.deepcopy(msg))
        shown = {k: v for k, v in msg.items() if k not in ("ts", "thread_ts", "edited")}
        return {"channel": args["channel"], "ts": msg["ts"], "text": msg["text"], "message": shown}

    def _post_ephemeral(self, args: JSON) -> JSON:
        if not (channel := args.get("channel")):
            raise SlackError("channel_not_found")
        if not args.get("user"):
            raise SlackError("user_not_found")
        _message_errors(args, channel)
        self.ephemerals.append({**args, "message_ts": self._next_ts()})
        return {"message_ts": self.ephemerals[-1]["message_ts"]}

    def _delete(self, args: JSON) -> JSON:
        msg = self._own_message(args, "cant_delete_message")
        del self._messages[args["channel"]][msg["ts"]]
        return {"channel": args["channel"], "ts": msg["ts"]}

    def _views_open(self, args: JSON) -> JSON:
        view = _check_view(args.get("view"))
        self._use_trigger(args.get("trigger_id"))
        return self._new_view(view)

    def _views_push(self, args: JSON) -> JSON:
        view = _check_view(args.get("view"))
        trigger = self._use_trigger(args.get("trigger_id"))
        top = self.views.get(trigger.view_id or "")
        if top is None:
            return self._new_view(view)
        root = top["root_view_id"]
        if sum(v["root_view_id"] == root for v in self.views.values()) >= 3:
            raise SlackError("push_limit_reached")
        return self._new_view(view, root, top["id"])

    def _views_update(self, args: JSON) -> JSON:
        view_id = args.get("view_id")
        if not view_id and args.get("external_id"):
            ids = [v["id"] for v in self.views.values() if v["external_id"] == args["external_id"]]
            view_id = ids[0] if ids else None
        if (current := self.views.get(str(view_id))) is None:
            raise SlackError("not_found")
        view = _check_view(args.get("view"))
        if args.get("hash") and args["hash"] != current["hash"]:
            raise SlackError("hash_conflict")
        self.views[current["id"]] = self._view(
            view, current["id"], current["root_view_id"], current["previous_view_id"],
            current["state"],
        )  # fmt: skip
        return {"view": copy.deepcopy(self.views[current["id"]])}

    def _views_publish(self, args: JSON) -> JSON:
        user = str(args.get("user_id") or "")
        if user not in self.users:
            raise SlackError("user_not_found" if user else "invalid_arguments")
        view = args.get("view")
        if errors := home_errors(view):
            metadata = _metadata(errors)
            raise SlackError("invalid_arguments", errors=errors, response_metadata=metadata)
        current = self.homes.get(user)
        if args.get("hash") and (current is None or args["hash"] != current["hash"]):
            raise SlackError("hash_conflict")
        view_id = current["id"] if current else f"V{next(self._seq):09d}"
        self.homes[user] = self._view(dict(view or {}), view_id, view_id, None)
        return {"view": copy.deepcopy(self.homes[user])}

    def _replies(self, args: JSON) -> JSON:
        channel, ts = str(args.get("channel")), str(args.get("ts"))
        if ts not in self._messages.get(channel, {}):
            raise SlackError("thread_not_found")
        messages = self.thread(channel, ts)
        return {"messages": messages, "has_more": False, "response_metadata": {"next_cursor": ""}}

    def _assistant_thread(self, method: str, args: JSON, *required: str) -> tuple[str, str]:
        """(channel_id, thread_ts) of an assistant.threads call with its scope and the
        arguments it requires (`missing_scope`, `invalid_arguments` otherwise)."""
        if not any(scope in self.scopes for scope in ASSISTANT_SCOPES[method]):
            raise SlackError("missing_scope", needed=ASSISTANT_SCOPES[method][0])
        for name in required:
            if not isinstance(args.get(name), str) or (name != "status" and not args[name]):
                raise SlackError("invalid_arguments", errors=[f"{name} is required"])
        return str(args["channel_id"]), str(args.get("thread_ts") or "")

    def _set_status(self, args: JSON) -> JSON:
        method = "assistant.threads.setStatus"
        thread = self._assistant_thread(method, args, "channel_id", "thread_ts", "status")
        loading = _json_list(args.get("loading_messages", []))
        if len(loading) > MAX_LOADING_MESSAGES or not all(isinstance(m, str) for m in loading):
            raise SlackError("invalid_arguments", errors=["loading_messages: at most 10 strings"])
        self.statuses[thread].append({"status": args["status"], "loading_messages": loading})
        return {}

    def _set_title(self, args: JSON) -> JSON:
        method = "assistant.threads.setTitle"
        thread = self._assistant_thread(method, args, "channel_id", "thread_ts", "title")
        self.titles[thread].append(str(args["title"]))
        return {}

    def _set_suggested_prompts(self, args: JSON) -> JSON:
        method = "assistant.threads.setSuggestedPrompts"
        thread = self._assistant_thread(method, args, "channel_id")
        prompts = _json_list(args.get("prompts"))
        fine = all(
            isinstance(p, dict) and set(p) == {"title", "message"}
            and all(isinstance(p[k], str) and p[k] for k in p) for p in prompts
        )  # fmt: skip
        if not prompts or len(prompts) > MAX_PROMPTS or not fine:
            raise SlackError("invalid_arguments", errors=["prompts: 1 to 4 {title, message}"])
        self.prompts[thread].append({"prompts": prompts, "title": args.get("title")})
        return {}

    def _files_info(self, args: JSON) -> JSON:
        if (file := self.files.get(str(args.get("file")))) is None:
            raise SlackError("file_not_found")
        url = f"{self.url}/files-pri/{self.team_id}-{file['id']}/{file['name']}"
        shown = {"url_private": url, "url_private_download": url, **file}
        return {"file": shown, "comments": [], "response_metadata": {"next_cursor": ""}}

    # -- streamed messages (Slack's AI-app methods)

    def _start_stream(self, args: JSON) -> JSON:
        channel = args.get("channel")
        if not isinstance(channel, str) or not channel:
            raise SlackError("invalid_arguments")
        if not channel.startswith("D"):  # outside a DM, whose reader it streams to
            if not args.get("recipient_user_id"):
                raise SlackError("missing_recipient_user_id")
            if not args.get("recipient_team_id"):
                raise SlackError("missing_recipient_team_id")
        if args.get("task_display_mode") not in (None, "timeline", "plan"):
            raise SlackError("invalid_arguments")
        msg: JSON = {"type": "message", "user": self.bot_user_id, "bot_id": self.bot_id,
               "app_id": self.app_id, "team": self.team_id, "text": "", "tasks": {}}  # fmt: skip
        _stream_content(msg, args, need_content=False)
        msg = self._store(channel, msg, args.get("thread_ts"))
        self._streams[channel, msg["ts"]] = True
        return {"channel": channel, "ts": msg["ts"]}

    def _open_stream(self, args: JSON) -> JSON:
        channel, ts = args.get("channel"), args.get("ts")
        if not isinstance(channel, str) or not isinstance(ts, str) or not channel or not ts:
            raise SlackError("invalid_arguments")
        if not self._streams.get((channel, ts)):
            raise SlackError("message_not_in_streaming_state")
        return self._messages[channel][ts]

    def _append_stream(self, args: JSON) -> JSON:
        msg = self._open_stream(args)
        _stream_content(msg, args, need_content=True)
        self._history[args["channel"], msg["ts"]].append(copy.deepcopy(msg))
        return {"channel": args["channel"], "ts": msg["ts"]}

    def _stop_stream(self, args: JSON) -> JSON:
        msg = self._open_stream(args)
        if args.get("session_status") not in (None, "active", "processing", "suspended", "closed"):
            raise SlackError("invalid_arguments")
        _stream_content(msg, args, need_content=False)
        if "blocks" in args:
            if errors := block_errors(args["blocks"]):
                raise SlackError("invalid_blocks", errors=errors)
            msg["blocks"] = [*msg.get("blocks", []), *args["blocks"]]
        self._streams[args["channel"], msg["ts"]] = False
        self._history[args["channel"], msg["ts"]].append(copy.deepcopy(msg))
        return {"channel": args["channel"], "ts": msg["ts"], "message": copy.deepcopy(msg)}


TASK_STATUSES = ("pending", "in_progress", "complete", "error")


def _stream_content(msg: JSON, args: JSON, *, need_content: bool) -> None:
    """Apply a stream call's ``markdown_text`` and ``chunks`` to its message, checked first
    (all or nothing, as Slack refuses a call whole)."""
    text, chunks = args.get("markdown_text"), args.get("chunks")
    if need_content and not text and not chunks:
        raise SlackError("invalid_arguments")
    if text is not None and not isinstance(text, str):
        raise SlackError("invalid_arguments")
    if isinstance(chunks, str):
        try:
            chunks = json.loads(chunks)
        except ValueError:
            raise SlackError("invalid_chunks") from None
    chunks = chunks or []
    if not isinstance(chunks, list) or not all(_chunk_ok(c) for c in chunks):
        raise SlackError("invalid_chunks")
    pieces = [text or ""] + [c["text"] for c in chunks if c["type"] == "markdown_text"]
    if len(msg["text"]) + sum(len(p) for p in pieces) > MAX_TEXT:
        raise SlackError("msg_too_long")
    msg["text"] += "".join(pieces)
    for chunk in chunks:
        if chunk["type"] == "task_update":
            shown = {k: chunk[k] for k in ("title", "status", "details", "output") if k in chunk}
            msg["tasks"][chunk["id"]] = msg["tasks"].get(chunk["id"], {}) | shown
        elif chunk["type"] == "blocks":
            msg["blocks"] = [*msg.get("blocks", []), *chunk["blocks"]]


def _chunk_ok(chunk: Any) -> bool:
    """A chunk of the shape Slack documents (markdown_text, task_update, plan_update, blocks)."""
    if not isinstance(chunk, dict):
        return False
    kind = chunk.get("type")
    if kind == "markdown_text":
        return isinstance(chunk.get("text"), str)
    if kind == "task_update":
        return (
            all(isinstance(chunk.get(k), str) and chunk[k] for k in ("id", "title"))
            and chunk.get("status") in TASK_STATUSES
            and all(isinstance(chunk.get(k, ""), str) for k in ("details", "output"))
        )
    if kind == "plan_update":
        return isinstance(chunk.get("title"), str)
    if kind == "blocks":
        return not block_errors(chunk.get("blocks"))
    return False


def _json_list(value: Any) -> list[Any]:
    """A list argument, sent as JSON or as a form field holding JSON (`invalid_arguments` if
    it is neither)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise SlackError("invalid_arguments") from None
    if not isinstance(value, list):
        raise SlackError("invalid_arguments")
    return value


async def _body(request: web.Request) -> JSON:
    if not request.can_read_body:
        return {}
    if request.content_type == "application/json":
        try:
            body = await request.json()
        except ValueError:
            raise SlackError("invalid_json") from None
        if not isinstance(body, dict):
            raise SlackError("json_not_object")
        return body
    form = await request.post()
    return {k: v for k, v in form.items() if isinstance(v, str)}
