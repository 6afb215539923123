"""The HTTP edges of `hitl-bridge serve` (issue 9): what reaches the server before it knows who
is asking, and what a signed request may still hold.

The real service (`Server.start`) runs on loopback with Slack and Teams (with credentials, its
signing keys on FakeBotFrameworkKeys) behind one port; requests are sent as raw bytes over
HTTP, or as the raw socket of a client that trickles its body. Each finding of the issue is
reproduced: unsigned garbage is a 401 with a bounded log and no traceback; signed payloads of
odd shapes are 400s; a slow body is cut; an oversized one is 413; a modal value or a thread
reply over Slack's input limit is refused and reaches neither the model nor the audit log.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest
from microsoft_teams.api.auth import cloud_environment

from adapters.serve import http_limits
from adapters.serve.service import Server
from adapters.serve.settings import Settings
from bot.records import RequestStatus
from bot.store import upgrade
from tests.adapters.surfaces.slack.conftest import (
    ADMIN,
    ALICE,
    CHANNEL,
    MODEL,
    SECRET,
    STRANGER,
    WAIT,
    Env,
    has_actions,
)
from tests.fakes.anthropic_api import FakeAnthropic, reply_text, reply_tool_use
from tests.fakes.bot_framework_keys import FakeBotFrameworkKeys
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_signing import (
    FORM,
    JSON_TYPE,
    block_actions_payload,
    event_callback,
    message_event,
    sign,
)

TEAMS_CLIENT_ID = "33333333-4444-5555-6666-777777777777"
CLOUD = "hitl-http-edges-test"
# Read by the Teams SDK (or from a `.env` it finds) besides our Settings: cleared.
SDK_VARIABLES = ("CLIENT_ID", "CLIENT_SECRET", "TENANT_ID", "MANAGED_IDENTITY_CLIENT_ID",
                 "CLOUD", "SERVICE_URL", "DANGEROUSLY_ALLOW_UNAUTHENTICATED_REQUESTS")  # fmt: skip
FINAL = "All done, thanks."
LOGGERS = ("adapters", "bot", "slack_bolt", "slack_sdk", "aiohttp", "microsoft_teams")


# -- the service ---------------------------------------------------------------------------------


@dataclass
class Served:
    """The running service with Slack and Teams, and what it talks to."""

    slack: Env  # Slack's side, as tests/adapters/surfaces/slack drive it
    keys: FakeBotFrameworkKeys  # Teams' signing keys

    @property
    def url(self) -> str:
        return self.slack.server.url

    @property
    def http(self) -> aiohttp.ClientSession:
        return self.slack.http

    async def send(
        self,
        path: str,
        body: bytes = b"",
        headers: Mapping[str, str] | None = None,
        method: str = "POST",
    ) -> tuple[int, str]:
        """A raw request: (status, body)."""
        data = io.BytesIO(body)  # as bytes, aiohttp warns about bodies over 1 MB
        async with self.http.request(
            method, self.url + path, data=data, headers=dict(headers or {})
        ) as response:
            return response.status, await response.text()

    async def slack_raw(
        self, body: bytes, content_type: str = JSON_TYPE, *, signed: bool = True
    ) -> tuple[int, str]:
        """`body` posted to /slack/events as it is, signed with the app's secret or not."""
        headers = {"Content-Type": content_type, **(sign(body, SECRET) if signed else {})}
        return await self.send("/slack/events", body, headers)

    async def healthy(self) -> bool:
        return (await self.send("/healthz", method="GET"))[0] == 200


@asynccontextmanager
async def running_service(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **overrides: Any
) -> AsyncIterator[Served]:
    """`Server.start` with Slack (FakeSlack, FakeAnthropic) and Teams (credentials, signing
    keys on FakeBotFrameworkKeys registered as a Teams cloud) on one loopback port."""
    for name in list(os.environ):
        if name.startswith(("HITL_", "SLACK_", "ANTHROPIC_", "TEAMS_")) or name in SDK_VARIABLES:
            monkeypatch.delenv(name)
    async with AsyncExitStack() as stack:
        slack = await stack.enter_async_context(
            FakeSlack(users={ALICE: "alice", STRANGER: "mallory", ADMIN: "admin"})
        )
        model = await stack.enter_async_context(FakeAnthropic())
        keys = await stack.enter_async_context(FakeBotFrameworkKeys(TEAMS_CLIENT_ID))
        http = await stack.enter_async_context(aiohttp.ClientSession())
        monkeypatch.setitem(cloud_environment._CLOUD_ENVIRONMENTS, CLOUD, keys.cloud)
        monkeypatch.setenv("CLOUD", CLOUD)
        url = f"sqlite+aiosqlite:///{tmp_path / 'hitl.db'}"
        await upgrade(url)
        values: dict[str, Any] = {
            "HITL_DATABASE_URL": url,
            "HITL_HOST": "127.0.0.1",
            "HITL_PORT": 0,
            "SLACK_BOT_TOKEN": slack.token,
            "SLACK_SIGNING_SECRET": SECRET,
            "SLACK_API_URL": slack.base_url,
            "TEAMS_CLIENT_ID": TEAMS_CLIENT_ID,
            "TEAMS_CLIENT_SECRET": "secret",
            "TEAMS_TENANT_ID": "tenant",
            "ANTHROPIC_API_KEY": "test",
            "ANTHROPIC_BASE_URL": model.base_url,
            "HITL_MODEL": MODEL,
            "HITL_TIMEOUT_SECONDS": 30,
            **overrides,
        }
        server = await Server.start(Settings(_env_file=None, **values))
        stack.push_async_callback(server.stop)
        yield Served(Env(server=server, slack=slack, model=model, http=http), keys)


@pytest.fixture
async def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Served]:
    async with running_service(tmp_path, monkeypatch) as service:
        yield service


def check_log(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """No traceback anywhere, nothing at ERROR; the WARNING lines."""
    for record in caplog.records:
        assert record.exc_info is None, record.getMessage()
        assert record.levelno < logging.ERROR, record.getMessage()
    assert "Traceback" not in caplog.text
    return [r for r in caplog.records if r.levelno == logging.WARNING]


def capture(caplog: pytest.LogCaptureFixture) -> None:
    """Everything our code and the SDKs log at INFO and above (not the access log)."""
    for name in LOGGERS:
        caplog.set_level(logging.INFO, logger=name)
    caplog.set_level(logging.WARNING, logger="aiohttp.access")


# -- unsigned garbage: 401 before the body is interpreted ---------------------------------------

GARBAGE = [
    b"x", b"[1,2]", b'"s"', b"payload=%7Bnot", b"payload=%5B1%5D", b"{}", b"{", b"\xff\xfe{}",
    b'{"type": "url_verification", "challenge": "c"}', b"[" * 5000 + b"]" * 5000, b"",
]  # fmt: skip
BAD_HEADERS: list[dict[str, str]] = [
    {},
    {"X-Slack-Request-Timestamp": "not-a-number", "X-Slack-Signature": "v0=" + "0" * 64},
    {"X-Slack-Request-Timestamp": "1_700_000_000", "X-Slack-Signature": "v0=" + "0" * 64},
    {"X-Slack-Request-Timestamp": " 17", "X-Slack-Signature": "v0=" + "0" * 64},
    {"X-Slack-Request-Timestamp": "9" * 40, "X-Slack-Signature": "v0=" + "0" * 64},
    {"X-Slack-Request-Timestamp": str(int(time.time())), "X-Slack-Signature": "v0=é"},
    {"X-Slack-Request-Timestamp": str(int(time.time())), "X-Slack-Signature": "v1=abc"},
    {"X-Slack-Request-Timestamp": str(int(time.time())), "X-Slack-Signature": "v0=" + "0" * 64},
    {"X-Slack-Signature": "v0=" + "0" * 64},
]


async def test_unsigned_garbage_is_refused_before_it_is_read(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 9: each of these was a 500 and ~30 lines of traceback; 200 of them wrote 375 KB."""
    capture(caplog)
    sent = 0
    for headers in BAD_HEADERS:
        for body in GARBAGE:
            for content_type in (JSON_TYPE, FORM, "text/plain"):
                status, _ = await served.send(
                    "/slack/events", body, {"Content-Type": content_type, **headers}
                )
                assert status == 401, (headers, body[:40], content_type)
                sent += 1
    assert sent >= 200
    assert await served.healthy()

    warnings = check_log(caplog)
    assert len(caplog.text) < 2_000  # was ~375 KB
    assert len(warnings) == 1  # one line per LOG_EVERY seconds
    assert warnings[0].getMessage().startswith("Slack: refused a request from 127.0.0.1 (401)")
    assert served.slack.requests == []
    assert served.slack.slack.calls_to("chat.postMessage") == []


async def test_a_stale_or_forged_signature_says_why_in_one_line(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    capture(caplog)
    body = json.dumps(event_callback(message_event("hi", user=ALICE, channel=CHANNEL))).encode()
    stale = sign(body, SECRET, timestamp=int(time.time()) - 6 * 60)
    status, _ = await served.send("/slack/events", body, {"Content-Type": JSON_TYPE, **stale})
    assert status == 401
    (line,) = check_log(caplog)
    assert line.getMessage().endswith("(401): the timestamp is more than 5 minutes off")


# -- signed, but not what Slack sends: 400 -------------------------------------------------------


def form(payload: object) -> bytes:
    """An interaction's form body, `payload` as JSON (a str as it is)."""
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return urlencode({"payload": text}).encode()


def click() -> dict[str, Any]:
    message = {"ts": "1700000000.000100", "text": "t", "blocks": []}
    return block_actions_payload(
        message=message, channel_id=CHANNEL, action_id="hitl_approve", user_id=ALICE,
        value="0123456789abcdef01234567", block_id="hitl_actions:0123456789abcdef01234567",
    )  # fmt: skip


def event(**changes: Any) -> dict[str, Any]:
    return event_callback({**message_event("hi", user=ALICE, channel=CHANNEL), **changes})


SIGNED_ODD: list[tuple[bytes, str]] = [
    (b"x", JSON_TYPE),
    (b"[1,2]", JSON_TYPE),
    (b'"s"', JSON_TYPE),
    (b"null", JSON_TYPE),
    (b"{", JSON_TYPE),
    (b"", JSON_TYPE),
    (b'{"n": 1' + b"0" * 5000 + b"}", JSON_TYPE),  # past int()'s digit limit: a ValueError
    (b'{"x": ' + b"[" * 5000 + b"]" * 5000 + b"}", JSON_TYPE),  # a RecursionError
    (b'{"x": ' + b"[" * 100 + b"]" * 100 + b"}", JSON_TYPE),  # parses, but deeper than Slack
    (b"payload=%7Bnot", FORM),
    (form([1]), FORM),
    (form('"s"'), FORM),
    (form("1"), FORM),
    (form({**click(), "actions": []}), FORM),
    (form({**click(), "actions": "x"}), FORM),
    (form({**click(), "actions": [1]}), FORM),
    (form({**click(), "actions": [{}]}), FORM),
    (form({**click(), "actions": [{"action_id": 7}]}), FORM),
    (form({k: v for k, v in click().items() if k != "actions"}), FORM),
    # Found by test_fuzz.py: Bolt reads an attachment action's actions[0], there or not.
    (
        json.dumps({"callback_id": "event_callback", "type": "interactive_message"}).encode(),
        JSON_TYPE,
    ),
    (form({**click(), "user": [1]}), FORM),
    (form({**click(), "team": {"id": 5}}), FORM),
    (form({**click(), "authorizations": "x"}), FORM),
    (form({**click(), "container": "x"}), FORM),
    (form({"type": "view_submission", "view": "x"}), FORM),
    (form({"type": "view_submission", "view": {"callback_id": 1}}), FORM),
    (form({"type": "view_submission", "view": {"callback_id": "hitl_modal:x", "state": 1}}), FORM),
    (json.dumps({**event(), "event": "x"}).encode(), JSON_TYPE),
    (json.dumps({**event(), "event": None}).encode(), JSON_TYPE),
    (json.dumps(event(text=None)).encode(), JSON_TYPE),
    (json.dumps(event(user={"id": ALICE})).encode(), JSON_TYPE),
    (json.dumps(event(channel=None)).encode(), JSON_TYPE),
    (json.dumps(event(message="x")).encode(), JSON_TYPE),
    (json.dumps(event(files={"a": 1})).encode(), JSON_TYPE),
    (json.dumps(event(text="x" * 100_000)).encode(), JSON_TYPE),  # over Slack's 40,000
    (json.dumps({**event(), "response_urls": "x"}).encode(), JSON_TYPE),
    (json.dumps(event()).encode(), "text/plain"),
    (json.dumps(event()).encode(), "multipart/form-data"),
]


async def test_signed_payloads_of_odd_shapes_are_400(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 9: a signed `payload` that is not an object, or `actions` empty or not a list,
    was a 500; so was much of what Bolt reads without looking (it indexes what it is given)."""
    capture(caplog)
    for body, content_type in SIGNED_ODD:
        status, text = await served.slack_raw(body, content_type)
        assert status == 400, (body[:80], content_type, text)
        assert json.loads(text)["error"]
    assert await served.healthy()

    (line,) = check_log(caplog)  # the first; the rest within LOG_EVERY are counted, not logged
    assert line.getMessage() == (
        "Slack: refused a signed request from 127.0.0.1 (400): the body (or its payload field) "
        "is not JSON"
    )
    # A body that is not UTF-8 is not Slack's: slack_sdk verifies the signature of the text.
    assert (await served.slack_raw(b"\xff\xfe{}"))[0] == 401
    assert served.slack.requests == []
    assert served.slack.slack.calls_to("chat.postMessage") == []
    assert served.slack.slack.ephemerals == []


async def test_the_same_payloads_well_formed_are_served(served: Served) -> None:
    """The shape checks refuse nothing Slack sends: a click on an unknown request is told
    privately, an event of a kind nobody listens to is Bolt's 404, a slash command is 200."""
    status, _ = await served.slack_raw(form(click()), FORM)
    assert status == 200
    notice = await served.slack.slack.wait_for(lambda: served.slack.slack.ephemerals, WAIT)
    assert "no longer" in json.dumps(notice)

    reaction = {"type": "reaction_added", "user": ALICE, "reaction": "+1", "event_ts": "1.2"}
    status, _ = await served.slack_raw(json.dumps(event_callback(reaction)).encode())
    assert status == 404

    command = {"command": "/hitl", "text": "pending", "channel_id": CHANNEL, "user_id": ALICE}
    status, text = await served.slack_raw(urlencode(command).encode(), FORM)
    assert status == 200
    assert "Nothing is waiting for an answer in this conversation." in text


async def test_an_unhandled_request_is_one_line(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    """Not Bolt's multi-line suggestion of a listener, with the body in it."""
    capture(caplog)
    shortcut = {"type": "shortcut", "callback_id": "x", "user": {"id": ALICE}, "team": {"id": "T"}}
    status, _ = await served.slack_raw(form(shortcut), FORM)
    assert status == 404
    (line,) = check_log(caplog)
    assert line.getMessage() == "Slack: no listener for a shortcut request (404)"


# -- what aiohttp itself refuses ----------------------------------------------------------------


async def logged(caplog: pytest.LogCaptureFixture, text: str) -> logging.LogRecord:
    """The first record whose message holds `text`, once it is logged (after a response)."""
    async with asyncio.timeout(WAIT):
        while True:
            found = [r for r in caplog.records if text in r.getMessage()]
            if found:
                return found[0]
            await asyncio.sleep(0.01)


async def test_a_body_in_an_encoding_it_does_not_have_is_one_line(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    """aiohttp decodes a Content-Encoding itself: a garbage gzip body failed whoever read it,
    and aiohttp's own draining of a refused request's body, with a traceback at ERROR; an
    encoding it cannot decode (br, without Brotli) is its own 400, with one too."""
    capture(caplog)
    gzip = {"Content-Type": JSON_TYPE, "Content-Encoding": "gzip"}
    body = b"not gzip"
    assert (await served.send("/slack/events", body, {**gzip, **sign(body, SECRET)}))[0] == 401
    assert (await served.send("/api/messages", body, gzip))[0] == 401  # the body is not read
    assert (await served.send("/healthz", b"", {"Content-Encoding": "br"}, "GET"))[0] == 400
    assert await served.healthy()

    line = await logged(caplog, "aiohttp refused a malformed request")
    assert line.levelno == logging.WARNING
    assert line.getMessage().startswith(
        "aiohttp refused a malformed request (400): a body in a Content-Encoding it cannot decode"
    )
    assert "Slack: refused a request from 127.0.0.1 (401): the body could not be read as sent" in [
        r.getMessage() for r in caplog.records
    ]
    check_log(caplog)


async def test_an_oversized_header_is_refused_without_echoing_it(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    """aiohttp's 400 for a header over 8190 bytes quoted its first 100 bytes, in the response
    and in the log line: an Authorization header's token with them."""
    capture(caplog)
    secret = "hitl_SECRETTOKENVALUE"
    for path in ("/api/v1/requests", "/mcp", "/healthz"):
        status, body = await served.send(path, b"{}", {"Authorization": f"Bearer {secret}" * 500})
        assert status == 400 and body == "400 Bad Request"
    line = await logged(caplog, "aiohttp refused a malformed request")
    said = line.getMessage()
    assert said.startswith("aiohttp refused a malformed request (400): a request line or header")
    assert "SECRET" not in caplog.text and "Bearer" not in caplog.text
    check_log(caplog)


# -- size and time -------------------------------------------------------------------------------


async def test_an_oversized_body_is_413_without_reading_it(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    capture(caplog)
    big = b'{"type": "event_callback", "x": "' + b"x" * (1024 * 1024) + b'"}'
    assert (await served.slack_raw(big))[0] == 413  # signed
    assert (await served.slack_raw(big, signed=False))[0] == 413  # Slack signs the body

    async def chunked() -> AsyncIterator[bytes]:  # no Content-Length: stopped as it arrives
        for _ in range(40):
            yield b"x" * 65_536

    async with served.http.post(
        served.url + "/slack/events", data=chunked(), headers={"Content-Type": JSON_TYPE}
    ) as response:
        assert response.status == 413
    assert (await served.slack_raw(big[: 1024 * 1024]))[0] == 400  # under the limit: read
    assert await served.healthy()
    (line,) = check_log(caplog)
    assert line.getMessage().endswith("(413): the body is over 1048576 bytes")


async def trickle(served: Served, path: str, headers: Mapping[str, str]) -> tuple[bytes, int]:
    """POST to `path` announcing a 10,000-byte body and sending one byte every 20 ms: (what
    the server answered before it closed the connection, how many bytes were sent)."""
    host, port = served.url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    writer.write(
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 10000\r\n{head}\r\n".encode()
    )
    answer = asyncio.create_task(reader.read())  # b"" once the server closes
    sent = 0
    try:
        async with asyncio.timeout(WAIT):
            while not answer.done() and sent < 10_000:
                writer.write(b"x")
                await writer.drain()
                sent += 1
                await asyncio.sleep(0.02)
            return await answer, sent
    except ConnectionError:
        return await answer, sent
    finally:
        writer.close()


async def test_a_body_that_arrives_too_slowly_is_cut(
    served: Served, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 9: connections sending their body slowly were never cut. On Slack's route (which
    must read the body to verify it) and on Teams' once the token is verified."""
    capture(caplog)
    monkeypatch.setattr(http_limits, "BODY_TIMEOUT", 0.3)
    token = served.keys.token(served.slack.slack.url)
    teams = {"Content-Type": JSON_TYPE, "Authorization": f"Bearer {token}"}
    for path, headers in (("/slack/events", {"Content-Type": JSON_TYPE}), ("/api/messages", teams)):
        answer, sent = await trickle(served, path, headers)
        assert answer == b"", answer  # cut, without a response
        assert sent < 10_000
        assert await served.healthy()  # nothing else held up meanwhile
    command = {"command": "/hitl", "text": "", "channel_id": CHANNEL, "user_id": ALICE}
    assert (await served.slack_raw(urlencode(command).encode(), FORM))[0] == 200  # in time

    (line,) = check_log(caplog)
    assert line.getMessage() == (
        "cut the connection from 127.0.0.1: the body of POST /slack/events did not arrive "
        "within 0.3s"
    )


# -- inputs over Slack's limits reach neither the model nor the audit log ----------------------

LONG = "x" * 100_000


async def test_a_100kb_modal_value_is_refused_on_its_field(served: Served) -> None:
    env = served.slack
    env.model.script(reply_tool_use("AskUserQuestion", {"question": "Notes?"}), reply_text(FINAL))
    thread = await env.mention("ask me for notes")
    message = await thread.request()
    await env.click(message, "hitl_answer")
    view = await env.modal()

    body = await env.submit(view, {"answer": {"answer": LONG}})

    assert body == {"response_action": "errors", "errors": {"answer": "At most 3000 characters"}}
    record = await env.request_record(message)
    assert record.status is RequestStatus.PENDING
    assert len(env.requests) == 1  # the model was sent nothing more
    assert LONG[:3001] not in repr(await env.store.list_audit(request_id=record.id))

    assert await env.submit(view, {"answer": {"answer": "Short notes."}}) == {}
    await thread.settled(message, "Answered by")
    assert (await thread.reply())["text"] == FINAL
    result = env.tool_result(2)
    assert json.loads(result["content"]) == {"answer": "Short notes."}
    assert LONG[:3001] not in repr(await env.store.list_audit(request_id=record.id))


async def test_a_thread_reply_over_the_input_limit_answers_nothing(served: Served) -> None:
    """A reply answers a question through the same form as the modal: at most 3,000
    characters. A message as long as Slack allows (40,000) is told so, privately."""
    env = served.slack
    env.model.script(reply_tool_use("AskUserQuestion", {"question": "Notes?"}), reply_text(FINAL))
    thread = await env.mention("ask me for notes")
    message = await thread.request()

    await env.reply_in_thread(thread, "y" * 39_000)
    (notice,) = await env.slack.wait_for(lambda: env.slack.ephemerals, WAIT)
    assert "At most 3000 characters" in notice["text"]
    assert notice["user"] == ALICE

    record = await env.request_record(message)
    assert record.status is RequestStatus.PENDING
    assert has_actions(env.slack.message(CHANNEL, message["ts"]))
    assert len(env.requests) == 1  # no answer, and no turn either
    assert "y" * 3001 not in repr(await env.store.list_audit(request_id=record.id))

    await env.reply_in_thread(thread, "Short notes.")
    await thread.settled(message, "Answered by")
    assert (await thread.reply())["text"] == FINAL
    assert json.loads(env.tool_result(2)["content"]) == {"answer": "Short notes."}
