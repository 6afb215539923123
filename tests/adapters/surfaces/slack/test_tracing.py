"""Traces of the served bridge (adapters/ops/tracing.py), read from the SDK's in-memory exporter:
a mention's trace holds the model's calls, the gated tool's call and the Slack calls made for
it (each sent with its `traceparent`); the click that approves holds the settle; an API
caller's `traceparent` is continued."""

from __future__ import annotations

from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from adapters.ops.tracing import REQUEST_ID, Tracing
from bot.doors.tokens import Tokens
from bot.store.doors import DoorTables
from tests.adapters.gated_tools import CALL, FINAL, agent_file
from tests.adapters.surfaces.slack.conftest import ALICE, CHANNEL, StartEnv
from tests.fakes.anthropic_api import reply_text, reply_tool_use

pytestmark = pytest.mark.usefixtures("runs")  # the runs of `deploy`, per test

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


def named(spans: list[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


def trace_of(span: ReadableSpan) -> int:
    assert span.context is not None
    trace_id: int = span.context.trace_id
    return trace_id


async def test_a_mention_s_trace_holds_the_model_the_tool_and_slack_calls_and_the_click_the_settle(
    start_env: StartEnv, tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    env = await start_env(
        tracing_for=lambda worker: Tracing(exporter, worker=worker, batch=False),
        **agent_file(tmp_path),
    )
    env.model.script(reply_tool_use("deploy", CALL), reply_text(FINAL))
    thread = await env.mention("deploy the api please")
    message = await thread.request()
    await env.click(message, "hitl_approve")
    assert (await thread.reply())["text"] == FINAL
    record = await env.request_record(message)
    spans = list(exporter.get_finished_spans())

    inbound = named(spans, "POST /slack/events")
    assert inbound and all(s.kind is SpanKind.SERVER for s in inbound)
    mention = inbound[0]
    chats = named(spans, "chat")
    (tool,) = named(spans, "execute_tool deploy")
    assert len(chats) == 2 and {trace_of(s) for s in [*chats, tool]} == {trace_of(mention)}
    assert tool.attributes is not None and tool.attributes["gen_ai.tool.name"] == "deploy"

    posts = [s for s in spans if s.kind is SpanKind.CLIENT and s.name.endswith("chat.postMessage")]
    assert posts and trace_of(posts[0]) == trace_of(mention)
    sent = [t for m, t in env.slack.traceparents if m == "chat.postMessage"]
    assert sent and all(
        t is not None and t.split("-")[1] == f"{trace_of(mention):032x}" for t in sent
    )

    (settled,) = named(spans, "request settled")
    assert settled.attributes is not None
    assert settled.attributes[REQUEST_ID] == record.id
    assert settled.attributes["hitl.outcome"] == "complete"
    assert settled.attributes["hitl.settled_by"] == ALICE
    clicks = {trace_of(s) for s in inbound[1:]}
    assert trace_of(settled) in clicks and trace_of(settled) != trace_of(mention)
    (resource,) = {tuple(sorted(s.resource.attributes.items())) for s in spans}
    assert ("service.name", "hitl-bridge") in resource


async def test_an_api_caller_s_traceparent_is_continued(
    start_env: StartEnv, exporter: InMemorySpanExporter
) -> None:
    env = await start_env(tracing_for=lambda worker: Tracing(exporter, worker=worker, batch=False))
    env.slack.channels.add(CHANNEL)
    plain, _ = await Tokens(DoorTables(env.store)).create("ci-agent")
    headers = {"Authorization": f"Bearer {plain}", "traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"}
    body = {
        "tool": "AskUserQuestion",
        "arguments": {"question": "Ship it?"},
        "to": f"slack:{CHANNEL}/{ALICE}",
    }
    async with env.http.post(f"{env.server.url}/api/v1/requests", json=body, headers=headers) as r:
        assert r.status == 201, await r.text()
        created = await r.json()
    async with env.http.get(
        f"{env.server.url}/api/v1/requests/{created['id']}", headers=headers
    ) as r:
        assert r.status == 200
    spans = list(exporter.get_finished_spans())
    (create,) = named(spans, "POST /api/v1/requests")
    assert create.parent is not None and create.parent.span_id == int(PARENT_ID, 16)
    assert trace_of(create) == int(TRACE_ID, 16)
    assert create.attributes is not None and create.attributes["http.response.status_code"] == 201
    (read,) = named(spans, "GET /api/v1/requests/{id}")
    assert read.attributes is not None and read.attributes[REQUEST_ID] == created["id"]
