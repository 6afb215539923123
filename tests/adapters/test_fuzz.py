"""Every route of `hitl-bridge serve`, fuzzed over HTTP on loopback with hypothesis.

The real service runs (tests/adapters/test_http_edges.py: Slack and Teams with credentials on
one port, the scripted model behind them); hypothesis draws requests (a route, a method, a
body, a content type, headers) and sends them from a worker thread to the server on the test's
event loop. Whatever it draws: never a 500 (nor the last resort's 503: a bug), each route
answers with one of the statuses it is allowed, /healthz answers 200 throughout, and the log
holds no traceback and nothing at ERROR. Signed Slack bodies are drawn from the keys Bolt and
our listeners read, and from real payloads with one field replaced by anything.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Coroutine
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlencode

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.adapters.surfaces.slack.conftest import ALICE, CHANNEL, SECRET, WAIT
from tests.adapters.test_http_edges import Served, capture, running_service
from tests.fakes.slack_signing import (
    FORM,
    JSON_TYPE,
    app_home_opened,
    block_actions_payload,
    event_callback,
    home_action_payload,
    message_event,
    sign,
    url_verification,
    view_submission_payload,
)

pytestmark = pytest.mark.slow  # every route fuzzed by hypothesis

T = TypeVar("T")
EXAMPLES = 200
REQUEST_ID = "0123456789abcdef01234567"

# -- what is drawn -------------------------------------------------------------------------------

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
PAYLOAD_TYPES = ["event_callback", "block_actions", "view_submission", "view_closed",
                 "url_verification", "shortcut", "message_action", "block_suggestion",
                 "interactive_message", "dialog_submission", "workflow_step_edit",
                 "ssl_check"]  # fmt: skip
EVENT_TYPES = ["message", "app_mention", "app_home_opened", "assistant_thread_started",
               "function_executed", "workflow_step_execute", "reaction_added"]  # fmt: skip
# What Bolt (slack_bolt.request.internals, payload_utils, matchers) and our listeners read.
SLACK_KEYS = ["type", "event", "actions", "view", "user", "team", "channel", "enterprise",
              "container", "message", "previous_message", "authorizations", "response_urls",
              "command", "callback_id", "trigger_id", "is_enterprise_install",
              "is_ext_shared_channel", "state", "channel_id", "user_id", "team_id",
              "enterprise_id", "response_url", "function_data", "function_execution_id",
              "bot_access_token", "item", "assistant_thread", "challenge", "text", "action_id",
              "workflow_step"]  # fmt: skip
EVENT_KEYS = ["type", "subtype", "channel", "channel_type", "user", "text", "ts", "thread_ts",
              "bot_id", "files", "message", "previous_message", "team", "user_team", "tab",
              "function_execution_id", "workflow_step", "inputs", "item",
              "assistant_thread"]  # fmt: skip
ACTION_KEYS = ["action_id", "block_id", "type", "value", "selected_option", "action_ts"]
VIEW_KEYS = ["id", "type", "callback_id", "private_metadata", "state", "blocks", "hash",
             "app_installed_team_id", "team_id"]  # fmt: skip


def slack_value(keys: list[str]) -> st.SearchStrategy[Any]:
    """A value as Slack might hold it, or anything: ids, our own prefixes, nested objects."""
    return (
        JSON_VALUES
        | st.sampled_from([*PAYLOAD_TYPES, *EVENT_TYPES, "hitl_approve", "hitl_modal:answer",
                           REQUEST_ID, ALICE, CHANNEL, "1700000000.000100", "/hitl", "im"])
        | st.dictionaries(st.sampled_from(keys), JSON_VALUES, max_size=5)
        | st.lists(st.dictionaries(st.sampled_from(keys), JSON_VALUES, max_size=4), max_size=3)
    )  # fmt: skip


@st.composite
def envelopes(draw: st.DrawFn) -> dict[str, Any]:
    """An object of the keys Slack's payloads have, with values of any shape."""
    body = draw(st.dictionaries(st.sampled_from(SLACK_KEYS), slack_value(SLACK_KEYS), max_size=6))
    if draw(st.booleans()):
        body["type"] = draw(st.sampled_from(PAYLOAD_TYPES))
    if draw(st.booleans()):
        body["event"] = draw(
            st.dictionaries(st.sampled_from(EVENT_KEYS), slack_value(EVENT_KEYS), max_size=6)
            | st.fixed_dictionaries({"type": st.sampled_from(EVENT_TYPES)},
                                    optional={k: slack_value(EVENT_KEYS) for k in EVENT_KEYS[1:]})
        )  # fmt: skip
    if draw(st.booleans()):
        body["actions"] = draw(
            st.lists(st.dictionaries(st.sampled_from(ACTION_KEYS), slack_value(ACTION_KEYS)),
                     max_size=2)
            | slack_value(ACTION_KEYS)
        )  # fmt: skip
    if draw(st.booleans()):
        body["view"] = draw(
            st.dictionaries(st.sampled_from(VIEW_KEYS), slack_value(VIEW_KEYS), max_size=6)
        )
    return body


def real_payloads() -> list[dict[str, Any]]:
    """One of each kind Slack sends us, in its wire shape."""
    message = {"ts": "1700000000.000100", "text": "t", "blocks": []}
    answer = {"type": "input", "block_id": "answer",
              "element": {"type": "plain_text_input", "action_id": "answer"}}  # fmt: skip
    modal = {"callback_id": "hitl_modal:answer", "private_metadata": REQUEST_ID,
             "blocks": [answer]}  # fmt: skip
    approve = {"type": "button", "action_id": "hitl_approve", "value": REQUEST_ID,
               "text": {"type": "plain_text", "text": "Approve"}}  # fmt: skip
    home = {"id": "V0HOME0001", "type": "home",
            "blocks": [{"type": "actions", "block_id": f"hitl_actions:{REQUEST_ID}",
                        "elements": [approve]}]}  # fmt: skip
    return [
        block_actions_payload(
            message=message, channel_id=CHANNEL, action_id="hitl_approve", user_id=ALICE,
            value=REQUEST_ID, block_id=f"hitl_actions:{REQUEST_ID}",
        ),
        view_submission_payload(view=modal, user_id=ALICE, values={"answer": {"answer": "a"}}),
        event_callback(message_event("hello", user=ALICE, channel=CHANNEL)),
        event_callback(message_event("<@U0BOT00001> hi", user=ALICE, channel=CHANNEL,
                                     event_type="app_mention")),
        url_verification(),
        event_callback(app_home_opened(ALICE)),
        home_action_payload(view=home, action_id="hitl_approve", user_id=ALICE),
    ]  # fmt: skip


@st.composite
def mutated(draw: st.DrawFn) -> dict[str, Any]:
    """A real payload with one field (at the top, or in its event, view or first action)
    replaced by anything, or removed."""
    body: dict[str, Any] = json.loads(json.dumps(draw(st.sampled_from(real_payloads()))))
    holders = [body] + [
        holder
        for holder in (body.get("event"), body.get("view"), (body.get("actions") or [None])[0])
        if isinstance(holder, dict)
    ]
    holder = draw(st.sampled_from(holders))
    key = draw(st.sampled_from(sorted(holder)))
    if draw(st.integers(0, 4)) == 0:
        del holder[key]
    else:
        holder[key] = draw(slack_value(SLACK_KEYS))
    return body


def encoded(payload: st.SearchStrategy[Any]) -> st.SearchStrategy[tuple[bytes, str]]:
    """A payload as an Events API JSON body, or as an interaction's form."""
    return payload.flatmap(
        lambda value: st.sampled_from([
            (json.dumps(value).encode(), JSON_TYPE),
            (urlencode({"payload": json.dumps(value)}).encode(), FORM),
        ])
    )  # fmt: skip


RAW_BODIES = st.binary(max_size=300) | st.text(max_size=300).map(str.encode)
FORMS = st.dictionaries(st.text(max_size=10), st.text(max_size=30), max_size=4).map(
    lambda fields: urlencode(fields).encode()
)
CONTENT_TYPES = st.sampled_from(
    [JSON_TYPE, FORM, "text/plain", "", "application/json; charset=utf-8", "APPLICATION/JSON",
     "multipart/form-data; boundary=x", "application/x-www-form-urlencoded; charset=latin-1"]
) | st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=30)  # fmt: skip
BODIES: st.SearchStrategy[tuple[bytes, str]] = (
    encoded(envelopes())
    | encoded(mutated())
    | encoded(st.builds(real_payloads).flatmap(st.sampled_from))  # as Slack sends them
    | st.tuples(RAW_BODIES | FORMS, CONTENT_TYPES)
    | st.tuples(
        st.sampled_from([b"x", b"[1,2]", b'"s"', b"payload=%7Bnot", b"payload=%5B%5D", b"{}"]),
        CONTENT_TYPES,
    )
)
HEADER_VALUE = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=40)
HEADER_NAMES = ["X-Slack-Retry-Num", "X-Slack-Retry-Reason", "X-Slack-Bolt-Lazy-Only",
                "X-Slack-Bolt-Lazy-Function-Name", "Accept", "X-Forwarded-For", "User-Agent",
                "Cookie", "Origin", "X-Custom"]  # fmt: skip
AUTH_HEADERS = ["X-Slack-Request-Timestamp", "X-Slack-Signature", "Authorization",
                "Content-Encoding"]  # fmt: skip
HEADERS = st.dictionaries(st.sampled_from(HEADER_NAMES), HEADER_VALUE, max_size=3)
FORGED_HEADERS = st.dictionaries(
    st.sampled_from(HEADER_NAMES + AUTH_HEADERS),
    HEADER_VALUE
    | st.sampled_from(["gzip", "deflate", "br", "v0=" + "0" * 64, "1700000000", "Bearer x.y.z"]),
    max_size=4,
)


@dataclass(frozen=True)
class Attempt:
    """One request, and the statuses its route may answer."""

    route: str
    method: str
    path: str
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    signed: bool = False

    @property
    def allowed(self) -> frozenset[int]:
        statuses = {
            "slack signed": {200, 400, 404},  # served, malformed, or no listener for it
            "slack unsigned": {401},
            "teams unsigned": {401},
            "healthz": {200},
            # The console (no admin token: open to loopback): a page, a bad filter, no such
            # request, a form without its CSRF token, one too large or unreadable.
            "admin": {200, 400, 403, 404, 405, 413},
        }.get(self.route, {404, 405})  # another method or path
        if any(name.lower() == "content-encoding" for name in self.headers):
            statuses |= {400}  # aiohttp refuses an encoding it cannot decode (br), first
        if self.signed and not is_utf8(self.body):
            statuses |= {401}  # slack_sdk verifies the signature of the text: not Slack's
        return frozenset(statuses)


def is_utf8(body: bytes) -> bool:
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def with_type(headers: dict[str, str], content_type: str) -> dict[str, str]:
    return {**headers, "Content-Type": content_type} if content_type else headers


ADMIN_PATHS = st.sampled_from(
    [
        "/admin",
        "/admin/",
        "/admin/requests",
        "/admin/requests.csv",
        "/admin/requests/r1",
        "/admin/signin",
        "/admin/signout",
        "/admin/static/console.css",
        "/admin/static/../x",
    ]
)
ADMIN_QUERIES = st.dictionaries(
    st.sampled_from(["text", "status", "actor", "tool", "room", "since", "until", "page", "days"]),
    st.text(st.characters(exclude_categories=["Cs"]), max_size=30),
    max_size=4,
).map(lambda query: "?" + urlencode(query) if query else "")
ADMIN_ATTEMPTS = st.builds(
    lambda method, path, query, body, headers: Attempt(
        "admin", method, path + query, body[0], with_type(headers, body[1])
    ),
    st.sampled_from(["GET", "POST"]),
    ADMIN_PATHS,
    ADMIN_QUERIES,
    BODIES,
    FORGED_HEADERS,
)

ATTEMPTS = st.one_of(
    ADMIN_ATTEMPTS,
    st.builds(
        lambda body, headers: Attempt("slack signed", "POST", "/slack/events", body[0],
                                      with_type(headers, body[1]), signed=True),
        BODIES, HEADERS,
    ),
    st.builds(
        lambda body, headers: Attempt("slack unsigned", "POST", "/slack/events", body[0],
                                      with_type(headers, body[1])),
        BODIES, FORGED_HEADERS,
    ),
    st.builds(
        lambda body, headers: Attempt("teams unsigned", "POST", "/api/messages", body[0],
                                      with_type(headers, body[1])),
        BODIES, FORGED_HEADERS,
    ),
    st.builds(
        lambda body, headers: Attempt("healthz", "GET", "/healthz", body, headers),
        RAW_BODIES, FORGED_HEADERS,
    ),
    st.builds(
        lambda method, path, body: Attempt("elsewhere", method, path, body),
        st.sampled_from(["PUT", "DELETE", "PATCH"]),
        st.sampled_from(["/slack/events", "/api/messages", "/healthz", "/slack/events/x", "/"]),
        RAW_BODIES,
    ),
)  # fmt: skip


SERVED_EXAMPLE = Attempt("slack signed", "POST", "/slack/events",
                         json.dumps(url_verification()).encode(), {"Content-Type": JSON_TYPE},
                         signed=True)  # fmt: skip
REFUSED_EXAMPLE = Attempt("slack signed", "POST", "/slack/events", b"{not json",
                          {"Content-Type": JSON_TYPE}, signed=True)  # fmt: skip

# -- the test ------------------------------------------------------------------------------------


@pytest.fixture
async def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Served]:
    # The scripted model: a drawn message that starts a turn is answered without a script.
    async with running_service(tmp_path, monkeypatch, HITL_MODEL="scripted") as service:
        yield service


async def test_no_input_on_any_route_is_a_500_or_a_traceback(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    capture(caplog)
    loop = asyncio.get_running_loop()

    def on_loop(work: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(work, loop).result(WAIT)

    async def send(attempt: Attempt) -> int:
        headers = dict(attempt.headers)
        if attempt.signed:
            headers |= sign(attempt.body, SECRET)
        return (await served.send(attempt.path, attempt.body, headers, attempt.method))[0]

    seen: dict[str, set[int]] = {}
    sent: list[Attempt] = []

    @settings(
        max_examples=EXAMPLES,
        deadline=timedelta(seconds=2),
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(ATTEMPTS)
    # Served and refused, whatever the draw: six routes share the examples, so luck alone
    # could leave the signed route without one of each.
    @example(SERVED_EXAMPLE)
    @example(REFUSED_EXAMPLE)
    def check(attempt: Attempt) -> None:
        status = on_loop(send(attempt))
        sent.append(attempt)
        seen.setdefault(attempt.route, set()).add(status)
        assert status in attempt.allowed, (status, attempt)
        assert on_loop(served.healthy())

    await asyncio.to_thread(check)

    assert len(sent) >= EXAMPLES

    assert set(seen) == {
        "slack signed", "slack unsigned", "teams unsigned", "healthz", "elsewhere", "admin",
    }  # fmt: skip
    assert {200, 400} <= seen["slack signed"]  # both the served and the refused were drawn
    for record in caplog.records:
        assert record.exc_info is None, record.getMessage()
        assert record.levelno < logging.ERROR, record.getMessage()
    assert "Traceback" not in caplog.text
    assert len([r for r in caplog.records if r.levelno >= logging.WARNING]) < 50
