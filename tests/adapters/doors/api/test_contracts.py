"""The HTTP API's contracts against a hostile or careless client, end to end through
`hitl-bridge serve` (Server.start) with the fake Slack (issue 21): a reused idempotency key,
numbers that are not numbers, URLs that cannot be parsed or reach a private address through an
IPv6 form, the bearer scheme's case, and text that would act on its reader."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from tests.adapters.doors.api.test_api import APPROVAL, JSON, TO, Api, posted, start
from tests.adapters.surfaces.slack.conftest import StartEnv


@pytest.fixture
async def api(start_env: StartEnv) -> Api:
    return (await start(start_env))[1]


async def test_a_reused_idempotency_key_with_another_body_is_a_409_naming_it(api: Api) -> None:
    status, first = await api.create(idempotency_key="deploy-42", timeout_seconds=600)
    assert status == 201
    status, refused = await api.create(idempotency_key="deploy-42", timeout_seconds=601)
    assert status == 409 and refused["error"] == "conflict"
    assert "deploy-42" in refused["message"] and list(refused["fields"]) == ["idempotency_key"]
    # The same body again, its keys in another order, is still the first request.
    again = {"timeout_seconds": 600, "idempotency_key": "deploy-42", "to": TO,
             "arguments": dict(reversed(APPROVAL.items())), "tool": "requestApproval"}  # fmt: skip
    status, same = await api.call("POST", "/requests", again)
    assert status == 200 and same["id"] == first["id"]
    await posted(api.env, first["id"])
    assert len(api.env.slack.calls_to("chat.postMessage")) == 1


FORM = {"fields": [{"name": "replicas", "label": "Replicas", "type": "integer"}]}


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"timeout_seconds": True}, "timeout_seconds"),
        ({"timeout_seconds": "100"}, "timeout_seconds"),
        ({"tool": "collectUserData", "arguments": {"fields": [{**FORM["fields"][0], "min": "1"}]}},
         "arguments.fields.0.min"),
        ({"tool": "collectUserData", "arguments": {"fields": [{**FORM["fields"][0], "max": True}]}},
         "arguments.fields.0.max"),
        ({"tool": "collectUserData",
          "arguments": {"fields": [{**FORM["fields"][0], "required": "yes"}]}},
         "arguments.fields.0.required"),
        ({"tool": "requestApproval", "arguments": {**APPROVAL, "reason": 7}}, "arguments.reason"),
    ],
)  # fmt: skip
async def test_a_number_is_a_number(api: Api, fields: JSON, field: str) -> None:
    """`true` was a 1 s request, "100" was 100: a client's bug, silently taken."""
    body = {"tool": "requestApproval", "arguments": APPROVAL, "to": TO, **fields}
    status, refused = await api.call("POST", "/requests", body)
    assert status == 400 and refused["error"] == "invalid", refused
    assert field.removeprefix("arguments.") in refused["fields"], refused
    assert api.env.slack.calls_to("chat.postMessage") == []


CALLBACKS = [
    ("http://a..b/", "is not a valid host name"),
    (f"http://{'a' * 64}.example.com/", "is not a valid host name"),
    ("http://[::1/", "not a valid URL"),
    ("http://exa\x00mple.com/", "control characters"),
    ("http://[2002:7f00:1::]/hook", "a loopback address (it carries 127.0.0.1)"),
    ("http://[2002:a00:1::]/hook", "a private address (it carries 10.0.0.1)"),
    ("http://[64:ff9b::7f00:1]/hook", "a loopback address (it carries 127.0.0.1)"),
    ("http://[64:ff9b:1::a00:1]/hook", "a local-use NAT64 address"),
    ("http://[::7f00:1]/hook", "a loopback address (it carries 127.0.0.1)"),
    ("http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", "a loopback address (it carries 127."),
    ("http://[::ffff:169.254.169.254]/", "a link-local address"),
]


@pytest.mark.parametrize(("url", "why"), CALLBACKS, ids=[c[0] for c in CALLBACKS])
async def test_a_callback_url_refused_is_a_400_naming_it(
    api: Api, caplog: pytest.LogCaptureFixture, url: str, why: str
) -> None:
    caplog.set_level(logging.DEBUG)
    status, refused = await api.create(callback_url=url)
    assert status == 400 and refused["error"] == "invalid", refused
    assert why in refused["fields"]["callback_url"]
    assert "Traceback" not in caplog.text and "failed [" not in caplog.text  # no guard's line
    assert api.env.slack.calls_to("chat.postMessage") == []


@pytest.mark.parametrize("scheme", ["bearer", "BEARER", "BeArEr"])
async def test_the_bearer_scheme_is_case_insensitive(api: Api, scheme: str) -> None:
    """RFC 7235: /mcp took `bearer`, /api/v1 refused it."""
    url = f"{api.env.server.url}/api/v1/requests"
    headers = {"Authorization": f"{scheme}  {api.token} "}
    async with api.env.http.get(url, headers=headers) as response:
        assert response.status == 200, await response.text()


# What a person reads must be what is there: an ANSI escape recolours a terminal, NUL and BEL
# act or vanish, and U+202E (right-to-left override) shows "exe.pdf" for "fdp.exe".
HOSTILE = "Pay \x1b[31minvoice\x1b[0m\x00\x07 #42 for \u202efdp.exe\u202c?\nReally?\t(yes)"
SHOWN = "Pay [31minvoice[0m #42 for ⟦U+202E⟧fdp.exe⟦U+202C⟧?\nReally?\t(yes)"


async def test_control_and_bidi_characters_never_reach_slack(api: Api) -> None:
    body = {"tool": "AskUserQuestion", "arguments": {"question": HOSTILE}, "to": TO}
    status, made = await api.call("POST", "/requests", body)
    assert status == 201, made
    assert made["arguments"] == {"question": SHOWN}  # as stored, and as every surface shows it
    message = await posted(api.env, made["id"])
    (call,) = api.env.slack.calls_to("chat.postMessage")
    sent = json.dumps([call, message], ensure_ascii=False)
    for char in ("\x1b", "\x00", "\x07", "\u202e", "\u202c"):
        assert char not in sent
    assert "⟦U+202E⟧fdp.exe" in sent


async def test_an_over_long_question_is_counted_as_shown(api: Api) -> None:
    """A marker is longer than the override it shows: the limit counts what people read, so a
    request is refused when made, never failing later when it is drawn again."""
    arguments: dict[str, Any] = {"question": "x" * 3995 + "\u202e"}
    body = {"tool": "AskUserQuestion", "arguments": arguments, "to": TO}
    status, refused = await api.call("POST", "/requests", body)
    assert status == 400 and "question" in refused["fields"]
