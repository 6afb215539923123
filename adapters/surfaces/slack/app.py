"""The Slack app: slack-bolt's AsyncApp wired to the core (conversations, interactions, edits).

POST /slack/events is ours before it is Bolt's (`SlackAdapter.handle`): the body is read (at
most `MAX_BODY` bytes, 413 beyond), the signature verified on those raw bytes (401 otherwise,
before anything looks at the body), then the body is parsed as Bolt will parse it and checked
to have the shape Slack sends (400 otherwise, parse.check_envelope); only then does Bolt see
it. Refusals are one WARNING line at most every few seconds, never a traceback; what Bolt or a
listener did not expect is one line with a short id (adapters/serve/http_limits.py).
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Coroutine, Sequence
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from multidict import CIMultiDictProxy
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.app.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.error import BoltUnhandledRequestError
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.request.internals import parse_body
from slack_bolt.response import BoltResponse
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient

from adapters.serve.http_limits import (
    LOG_EVERY,
    BodyTooLarge,
    Throttled,
    one_line,
    read_body,
    report_unexpected,
)
from adapters.surfaces.slack.assistant import CONTEXT_CHANGED, STARTED, AssistantThreads
from adapters.surfaces.slack.conversations import SlackConversations
from adapters.surfaces.slack.home import HOME, HomeTab
from adapters.surfaces.slack.interactions import INBOX_KEY, Interactions, signed_key
from adapters.surfaces.slack.live_run import StreamSupport
from adapters.surfaces.slack.metered import CallRecorder, CountedSlackCalls
from adapters.surfaces.slack.parse import PayloadError, check_envelope
from adapters.surfaces.slack.people import SlackPeople
from adapters.surfaces.slack.rooms import PREFIX as ROOM_PREFIX
from adapters.surfaces.slack.scheme import ACTION_PREFIX, MODAL_CALLBACK_PREFIX, STOP_RUN_ACTION
from adapters.surfaces.slack.status_line import StatusLines
from adapters.surfaces.slack.stops import RunStops
from adapters.surfaces.slack.surface import SlackSurface
from adapters.surfaces.slack.text import SECTION_TEXT, SLACK, truncate
from bot import AIChannel, Bridge
from bot.bridge.people import PeopleNames
from bot.bridge.ports import RequestStore
from bot.commands import Commands, Place
from bot.config.agent_file import DEFAULT_SUGGESTED_PROMPTS, SuggestedPrompt
from bot.gates.grants import Grants
from bot.human_input import RequestUpdate
from bot.records import StoreUnavailableError
from bot.requests.copies import CopyRefs
from bot.requests.router import Router

log = logging.getLogger(__name__)

SLASH_COMMAND = "/hitl"  # bot/commands/ answers it
RECORDS_UNAVAILABLE = "The bridge cannot use its records right now; try again in a moment."

SLACK_API_URL = "https://slack.com/api/"

MAX_BODY = 1024 * 1024  # bytes: Slack's payloads are a few KB; a full modal's state ~100 KB
MAX_AGE = 5 * 60  # seconds a signed request is good for (Slack's rule)
FORM = "application/x-www-form-urlencoded"  # interactions, slash commands
JSON_TYPE = "application/json"  # the Events API
_TIMESTAMP = re.compile(r"[0-9]{1,12}")  # ASCII digits only: int() takes " 1_0" too
_SIGNATURE = re.compile(r"v0=[0-9a-f]{64}")
_BOLT_HEADERS = "x-slack-bolt-"  # Bolt's own switches (lazy listeners): never from a client


def slack_client(
    token: str, api_url: str | None = None, counted: CallRecorder | None = None
) -> AsyncWebClient:
    """A Web API client that retries 429 (honouring Retry-After), 5xx and dropped connections;
    with `counted`, each attempt is told to it (the metrics, adapters/surfaces/slack/metered.py)."""
    counting = [CountedSlackCalls(counted)] if counted is not None else []
    return AsyncWebClient(
        token=token,
        base_url=api_url or SLACK_API_URL,
        retry_handlers=[
            *counting,
            AsyncRateLimitErrorRetryHandler(max_retry_count=3),
            AsyncServerErrorRetryHandler(max_retry_count=2),
            AsyncConnectionErrorRetryHandler(max_retry_count=2),
        ],
    )


class SlackAdapter:
    """Everything Slack: Bolt listeners, the surface that posts and edits, the HTTP endpoint."""

    def __init__(
        self,
        *,
        bridge: Bridge,
        channel: AIChannel,
        client: AsyncWebClient,
        signing_secret: str,
        store: RequestStore,
        router: Router,
        grants: Grants | None = None,
        copies: CopyRefs | None = None,
        trace_configs: Sequence[aiohttp.TraceConfig] = (),
        suggested_prompts: Sequence[SuggestedPrompt] = DEFAULT_SUGGESTED_PROMPTS,
    ) -> None:
        """`router` answers every click, submission and thread reply (one for all surfaces);
        `grants` are listed and revoked with /hitl; `copies` keeps where a request's copies
        (a policy's `deliver`) were posted; `trace_configs` trace the Web API calls
        (adapters/ops/tracing.py); `suggested_prompts` are offered in the assistant view's new
        threads (the agent file's)."""
        self.client = client
        self.store = store
        self.router = router
        self.grants = grants
        self.commands = Commands(
            store, router.policy, grants, command=SLASH_COMMAND, router=router, surface="slack"
        )
        self.bot_user_id = ""
        self._own_session = False
        self._trace_configs = list(trace_configs)
        self._work: set[asyncio.Task[None]] = set()
        # process_before_response: Bolt answers Slack when the listener returns (instead of
        # polling for the ack), so our listeners ack and hand everything slow to `_later`.
        # raise_error_for_unhandled_request: a request no listener takes is one line from
        # `_on_error`, not Bolt's multi-line suggestion of a listener with the body in it.
        # name: the one Bolt would give it (its caller's file name), without Bolt reading every
        # frame's source for it (inspect.stack(): a quarter second in a deep stack).
        self.app = AsyncApp(
            name="app.py",
            client=client,
            signing_secret=signing_secret,
            process_before_response=True,
            raise_error_for_unhandled_request=True,
        )
        self._verifier = SignatureVerifier(signing_secret)
        self._refusals = Throttled(log, LOG_EVERY)  # 401
        self._bad_bodies = Throttled(log, LOG_EVERY)  # 400, 413
        self._unhandled = Throttled(log, LOG_EVERY)  # 404: no listener
        self._failures = Throttled(log, LOG_EVERY, burst=10, level=logging.ERROR)
        self.surface = SlackSurface(client, store, router.tools, copies)
        bridge.attach(self.surface)
        # People's names for what is plain text (status lines): users.info, cached
        self.people = SlackPeople(client)
        self.status_lines = StatusLines(client, PeopleNames([self.people]))
        self.assistant = AssistantThreads(client, suggested_prompts)
        self.streams = StreamSupport()  # replies streamed, until the workspace refuses it
        self.conversations = SlackConversations(
            channel=channel,
            surface=self.surface,
            store=store,
            router=router,
            bot_user_id=lambda: self.bot_user_id,
            status_lines=self.status_lines,
            streams=self.streams,
        )
        bridge.add_observer(self._request_changed)
        self.stops = RunStops(self.conversations, self._later)
        self.interactions = Interactions(
            client=client, surface=self.surface, router=router, later=self._later, store=store
        )
        self.home = HomeTab(
            client=client, store=store, router=router, tools=router.tools, later=self._later
        )
        bridge.add_observer(self.home.observe)
        self._register()

    def _register(self) -> None:
        app = self.app
        app.event("app_mention")(self._on_mention)
        app.event("message")(self._on_message)
        app.event(HOME)(self._on_home_opened)
        app.event(STARTED)(self._on_assistant_thread_started)
        app.event(CONTEXT_CHANGED)(self._on_assistant_context_changed)
        app.action(STOP_RUN_ACTION)(self.stops.on_click)  # before the requests' `hitl_*`
        app.action(re.compile(f"^{ACTION_PREFIX}"))(self.interactions.on_action)
        app.view(re.compile(f"^{re.escape(MODAL_CALLBACK_PREFIX)}"))(self.interactions.on_view)
        app.command(SLASH_COMMAND)(self._on_command)
        app.error(self._on_error)

    async def _on_error(self, error: Exception, body: dict[str, Any]) -> BoltResponse | None:
        """What Bolt or a listener raised: one line, never Bolt's traceback, and no 500."""
        if isinstance(error, BoltUnhandledRequestError):
            kind = body.get("type") or ("command" if "command" in body else "untyped")
            self._unhandled.log("Slack: no listener for a %s request (404)", one_line(kind, 60))
            return None  # Bolt's 404 stands
        ident = report_unexpected(log, error, "Slack: a request", self._failures)
        if isinstance(error, ValueError | RecursionError):  # a payload we could not read
            return BoltResponse(status=400, body={"error": "bad request", "id": ident})
        return BoltResponse(status=503, body={"error": "internal error", "id": ident})

    async def _on_command(self, ack: AsyncAck, command: dict[str, Any]) -> None:
        """/hitl [pending | mine | grants | revoke <id> | audit … | cancel <id> …]
        (bot/commands/), and `stop` (a running turn, adapters/surfaces/slack/stops.py), answered
        privately (ephemeral) to who typed it."""
        place = Place(f"{ROOM_PREFIX}{command.get('channel_id', '')}", ":")
        user = str(command.get("user_id", ""))
        typed = command_words(str(command.get("text") or ""))
        if typed.strip().lower() == "stop":  # acked first: a stop edits messages, audits
            await ack()
            self._later(self.stops.command(str(command.get("channel_id", "")), user))
            return
        try:
            lines = await self.commands.answer(typed, place=place, user=user, private=True)
        except StoreUnavailableError as err:  # one clear line to them, one in the log
            log.warning("Slack: a /hitl command could not be answered: %s", err)
            await ack(text=RECORDS_UNAVAILABLE, response_type="ephemeral")
            return
        text = truncate("\n".join(line.render(SLACK) for line in lines), SECTION_TEXT)
        await ack(text=text, response_type="ephemeral")

    async def _on_home_opened(self, ack: AsyncAck, event: dict[str, Any]) -> None:
        await ack()
        self._later(self.home.on_opened(event))

    async def _on_mention(self, ack: AsyncAck, event: dict[str, Any]) -> None:
        await ack()
        self._later(self.conversations.on_message(event, mentioned=True))

    async def _on_message(self, ack: AsyncAck, event: dict[str, Any]) -> None:
        await ack()
        self._later(self.conversations.on_message(event, mentioned=False))

    async def _on_assistant_thread_started(self, ack: AsyncAck, event: dict[str, Any]) -> None:
        await ack()
        self._later(self.assistant.on_started(event))

    async def _on_assistant_context_changed(self, ack: AsyncAck, event: dict[str, Any]) -> None:
        await ack()
        await self.assistant.on_context_changed(event)

    async def _request_changed(self, update: RequestUpdate) -> None:
        """Every request's change, for the turn running in its room (the one place request
        updates reach the Slack turns' watches)."""
        self.conversations.request_changed(update)

    def _later(self, work: Coroutine[Any, Any, None]) -> None:
        """Run `work` after the response to Slack: awaited in a listener, it would delay the
        ack (Slack allows 3 s) by every store write and Web API call it makes."""
        task = asyncio.create_task(_logged(work))
        self._work.add(task)
        task.add_done_callback(self._work.discard)

    async def start(self) -> None:
        """Open one HTTP session for every Web API call (without it slack_sdk opens a session
        and a connection per call), then learn who the bot is (auth.test): its own messages
        are ignored, its mention stripped. Then apply the clicks that were acked and left
        unhandled (a worker died in between), and keep watching for such (bot/durable/inbox.py)."""
        if self.client.session is None:
            self.client.session = aiohttp.ClientSession(trace_configs=self._trace_configs)
            self._own_session = True
        auth = await self.client.auth_test()
        self.bot_user_id = str(auth["user_id"])
        self.streams.team_id = str(auth.get("team_id") or "")  # whom a stream is for
        self.surface.workspace_url = str(auth.get("url") or "")  # for the messages' links
        await self.interactions.inbox.start()

    async def handle(self, request: web.Request) -> web.Response:
        """POST /slack/events: read (413), authenticate (401), parse (400), then Bolt."""
        refusal: str | None
        try:
            raw = await read_body(request, MAX_BODY)
        except BodyTooLarge:
            self._bad_bodies.warning("Slack: refused a request from %s (413): the body is over "
                                     "%d bytes", request.remote, MAX_BODY)  # fmt: skip
            return web.json_response({"error": "the body is too large"}, status=413)
        except (web.RequestPayloadError, HttpProcessingError):
            # Not decodable as sent (a Content-Encoding it does not have): Slack sends plain
            # bodies, and without the body there is no signature to check.
            raw, refusal = b"", "the body could not be read as sent"
        else:
            refusal = self.refusal(raw, request.headers)
        if refusal is not None:
            self._refusals.warning("Slack: refused a request from %s (401): %s",
                                   request.remote, refusal)  # fmt: skip
            return web.json_response({"error": "Unauthorized"}, status=401)
        content_type = request.headers.get("Content-Type", "")
        try:
            text, media_type = read_slack_body(raw, content_type)
        except PayloadError as bad:
            self._bad_bodies.warning("Slack: refused a signed request from %s (400): %s",
                                     request.remote, bad)  # fmt: skip
            return web.json_response({"error": str(bad)}, status=400)
        # Verified above: the signature names this request (a replay has the same).
        key = signed_key(request.headers["X-Slack-Signature"])
        bolt_request = AsyncBoltRequest(
            body=text,
            query=request.query_string,
            headers=_bolt_headers(request, media_type),
            context={INBOX_KEY: key},
        )
        return await to_aiohttp_response(await self.app.async_dispatch(bolt_request))

    def refusal(self, body: bytes, headers: CIMultiDictProxy[str]) -> str | None:
        """Why a request is not Slack's (None when it is): its signature over the raw body,
        with a timestamp that is a number within MAX_AGE of now."""
        timestamp = headers.get("X-Slack-Request-Timestamp")
        signature = headers.get("X-Slack-Signature")
        if timestamp is None or signature is None:
            return "no signature"
        if not _TIMESTAMP.fullmatch(timestamp):
            return "the timestamp is not a number"
        if abs(time.time() - int(timestamp)) > MAX_AGE:
            return "the timestamp is more than 5 minutes off"
        if not _SIGNATURE.fullmatch(signature):
            return "the signature is malformed"
        try:  # slack_sdk signs the text (Slack's bodies are UTF-8): decoded first, or it raises
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            return "the body is not UTF-8"
        if not self._verifier.is_valid(text, timestamp, signature):
            return "the signature does not match"
        return None

    async def close_clients(self) -> None:
        """After the bridge's last edits: close the HTTP session opened by start()."""
        if self._own_session and self.client.session is not None:
            await self.client.session.close()
            self.client.session = None

    async def close(self) -> None:
        """Finish the work of requests already acked (and mark their clicks applied), then
        cancel the turns still running."""
        while self._work:
            await asyncio.gather(*self._work, return_exceptions=True)
        await self.interactions.inbox.close()
        await self.conversations.close()


def read_slack_body(raw: bytes, content_type: str) -> tuple[str, str]:
    """(text, media type) of a signed body that Bolt can read: a form or JSON as Slack sends
    them, parsed as Bolt parses them (`parse_body`), of the shape Slack sends; PayloadError
    saying what is wrong otherwise."""
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type not in (FORM, JSON_TYPE):
        raise PayloadError(f"the body is not a form or JSON ({one_line(media_type, 60)!r})")
    if not raw.strip():
        raise PayloadError("the body is empty")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise PayloadError("the body is not UTF-8") from None
    try:
        body = parse_body(text, media_type)
    except (ValueError, RecursionError):  # json's errors are ValueErrors
        raise PayloadError("the body (or its payload field) is not JSON") from None
    check_envelope(body)
    return text, media_type


_ESCAPED_USER = re.compile(r"<@([UW][A-Z0-9]{2,})(?:\|[^>]*)?>")


def command_words(text: str) -> str:
    """A slash command's text as the core reads it: a user mention (Slack escapes it as
    `<@U123|name>`, the manifest's `should_escape`) as `@U123`, and `&amp;`, `&lt;`, `&gt;`
    as the characters they stand for."""
    text = _ESCAPED_USER.sub(lambda m: f"@{m.group(1)}", text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _bolt_headers(request: web.Request, media_type: str) -> dict[str, str | Sequence[str]]:
    """The headers Bolt is given: each name's first value (those verified), the media type as
    it was checked, and none of Bolt's own `X-Slack-Bolt-*` switches."""
    headers: dict[str, str | Sequence[str]] = {}
    for name, value in request.headers.items():
        if not name.lower().startswith(_BOLT_HEADERS):
            headers.setdefault(name.lower(), value)
    headers["content-type"] = media_type
    return headers


async def _logged(work: Coroutine[Any, Any, None]) -> None:
    try:
        await work
    except Exception as error:
        report_unexpected(log, error, "handling a Slack request after its ack")
