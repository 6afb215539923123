"""A settle handed to the worker holding the request joins the trace it was made in.

Two workers share one SQLite file, each a `HumanInputHandler` on a store of its own, traced as
`serve` traces it (adapters/ops/observability.py: the settle observer and the trace carrier) into
an in-memory exporter of its own. The holder hears the proposal at its heartbeat (SQLite has no
NOTIFY); its "request settled" span must be a child of the span the other worker answered in.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from adapters.ops.tracing import Tracing
from bot.human_input import HumanInputHandler
from bot.human_input.carried import SEPARATOR, proposal_id, within
from bot.store import SqlStore, open_store

HOLD = 1.0  # seconds; the holder beats, and so hears proposals, every HOLD / 4


@dataclass
class TracedWorker:
    handler: HumanInputHandler
    store: SqlStore
    tracing: Tracing
    spans: InMemorySpanExporter

    def settled_spans(self) -> list[ReadableSpan]:
        return [s for s in self.spans.get_finished_spans() if s.name == "request settled"]


async def traced_worker(url: str, name: str) -> TracedWorker:
    store = await open_store(url, migrate=name == "holder")
    handler = HumanInputHandler(store=store, hold_seconds=HOLD, worker_id=name)
    spans = InMemorySpanExporter()
    tracing = Tracing(spans, worker=name, batch=False)
    handler.add_observer(tracing.observe)
    handler.carry_traces(tracing.carrier)
    return TracedWorker(handler, store, tracing, spans)


@pytest.fixture
async def workers(tmp_path: Path) -> AsyncIterator[tuple[TracedWorker, TracedWorker]]:
    url = f"sqlite+aiosqlite:///{tmp_path / 'shared.db'}"
    holder = await traced_worker(url, "holder")
    other = await traced_worker(url, "other")
    try:
        yield holder, other
    finally:
        for worker in (holder, other):
            await worker.handler.close()
            await worker.handler.drain()
            await worker.store.close()
            await worker.tracing.close()


async def test_the_holder_settles_in_the_trace_of_the_answer(
    workers: tuple[TracedWorker, TracedWorker],
) -> None:
    holder, other = workers
    pending = await holder.handler.create("AskUserQuestion", {"question": "Which colour?"})
    waited = asyncio.create_task(holder.handler.wait(pending.pending_id, timeout=30))

    with other.tracing.tracer.start_as_current_span("POST /slack/events") as click:
        assert await asyncio.wait_for(other.handler.answer(pending.pending_id, "blue"), 10)
    assert await asyncio.wait_for(waited, 10) == "blue"
    await holder.handler.drain()

    assert other.settled_spans() == []  # the holder wrote it, and told of it
    (settled,) = holder.settled_spans()
    clicked = click.get_span_context()
    assert settled.context is not None and settled.parent is not None
    assert settled.context.trace_id == clicked.trace_id
    assert settled.parent.span_id == clicked.span_id
    assert settled.attributes is not None
    assert settled.attributes["hitl.request_id"] == pending.pending_id


async def test_a_settle_outside_any_trace_hands_over_a_bare_id(
    workers: tuple[TracedWorker, TracedWorker],
) -> None:
    holder, other = workers
    pending = await holder.handler.create("AskUserQuestion", {"question": "Which colour?"})
    assert await asyncio.wait_for(other.handler.answer(pending.pending_id, "red"), 10)
    await holder.handler.drain()
    (settled,) = holder.settled_spans()
    assert settled.parent is None  # a trace of its own
    assert SEPARATOR not in proposal_id(other.tracing.carrier)


@pytest.mark.parametrize(
    "carried",
    ["", "not-a-traceparent", "00-zz-11-01", "00-" + "0" * 32 + "-" + "1" * 16 + "-01;x"],
)
def test_a_malformed_trace_in_a_row_enters_nothing(carried: str) -> None:
    """A proposal's id is a row's: a malformed trace in it is ignored, not an error."""
    tracing = Tracing(InMemorySpanExporter(), worker="w", batch=False)
    with within(tracing.carrier, f"0123456789abcdef{SEPARATOR}{carried}"):
        assert tracing.carrier.current() is None
