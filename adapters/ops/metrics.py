"""Prometheus metrics of one worker, on `/metrics` at HITL_METRICS_ADDRESS (docs/operations.md).

Every metric lives in this worker's own `CollectorRegistry` (never prometheus_client's global
one), fed from the points the service already has: the handler's observers (requests created
and settled), the Slack and Teams clients' per-attempt hooks (adapters/surfaces/slack/metered.py,
adapters/surfaces/teams/metered.py), the surfaces' HTTP routes (acks), the webhook sender, the model
(wrapped), the store's outage watch, and the worker's run leases and long polls (read when
scraped). What describes the whole deployment rather than this worker (requests pending, the
webhook backlog) is read from the database, at most once per `database_seconds`, however often
and however many scrapers ask. The core (`bot/`) knows nothing of this module.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

from aiohttp import web
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from adapters.serve.http_server import Handler
from bot.agent.provider import (
    AIProvider,
    AssistantTurn,
    ReplyInterruptedError,
    TextDeltaCallback,
    ToolStartCallback,
)
from bot.doors.service import DOOR_CHANNEL
from bot.human_input.log_lines import OUTCOMES
from bot.human_input.snapshots import RenderState, RequestUpdate
from bot.reports.request_log import surface_of
from bot.store.gauges import OTHER, DeploymentCounts, DeploymentGauges
from bot.tools import AITool

log = logging.getLogger(__name__)

PATH = "/metrics"
DATABASE_SECONDS = 15.0  # a usual scrape interval: the database gauges are read once in it
# Seconds from asked to settled: a person answers in seconds to days.
DECISION_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 12 * 3600, 86400,
                    7 * 86400)  # fmt: skip
ACK_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0)  # Slack's limit: 3 s
MODEL_BUCKETS = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0)

Count = Callable[[], int]


class DeploymentCollector(Collector):
    """`hitl_requests_pending{surface}`, `hitl_webhook_backlog` and `hitl_store_up`, from one
    database read kept for `every` seconds (`refresh` before each scrape; `collect`, which
    prometheus_client calls synchronously, yields what was read)."""

    def __init__(
        self,
        read: Callable[[], Any],
        every: float = DATABASE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.read = read
        self.every = every
        self.clock = clock
        self.reads = 0  # database reads so far (the tests check they are spaced)
        self._counts: DeploymentCounts | None = None
        self._up = 0
        self._read_at: float | None = None
        self._lock = asyncio.Lock()

    async def refresh(self) -> None:
        """Read the database unless a read within `every` s stands; scrapers arriving while
        one reads share it. A failed read counts as one (the store is down: `hitl_store_up`
        says so, the last counts stay) and is tried again in the next interval."""
        async with self._lock:
            now = self.clock()
            if self._read_at is not None and now - self._read_at < self.every:
                return
            self._read_at = now
            self.reads += 1
            try:
                self._counts = await self.read()
                self._up = 1
            except Exception as err:  # an outage, or a schema behind: never a failed scrape
                log.warning("metrics: could not read the database: %s", str(err)[:200])
                self._up = 0

    def collect(self) -> Iterable[Metric]:
        up = GaugeMetricFamily(
            "hitl_store_up", "Whether the last database read of the metrics succeeded (1) or not"
        )
        up.add_metric([], self._up)
        yield up
        if self._counts is None:
            return
        pending = GaugeMetricFamily(
            "hitl_requests_pending",
            "Requests waiting for a person, in the whole deployment, by surface (database)",
            labels=["surface"],
        )
        for surface, n in sorted(self._counts.pending.items()):
            pending.add_metric([surface], n)
        yield pending
        backlog = GaugeMetricFamily(
            "hitl_webhook_backlog",
            "Webhook deliveries not done yet, in the whole deployment (database)",
        )
        backlog.add_metric([], self._counts.webhook_backlog)
        yield backlog


class WorkerCollector(Collector):
    """What this worker holds now, read when scraped: its run leases, the runs it adopted from
    dead workers, its long polls."""

    def __init__(self) -> None:
        self.leases: Count | None = None
        self.adopted: Count | None = None
        self.long_polls: Count | None = None

    def collect(self) -> Iterable[Metric]:
        if self.leases is not None:
            yield _gauge("hitl_run_leases_held", "Agent runs this worker holds", self.leases())
        if self.adopted is not None:
            adopted = CounterMetricFamily(
                "hitl_runs_adopted", "Runs of dead workers this worker took over and resumed"
            )
            adopted.add_metric([], self.adopted())
            yield adopted
        if self.long_polls is not None:
            yield _gauge(
                "hitl_long_polls_open", "Long polls (API and MCP) waiting on this worker",
                self.long_polls(),
            )  # fmt: skip


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    gauge = GaugeMetricFamily(name, documentation)
    gauge.add_metric([], value)
    return gauge


class Metrics:
    """This worker's metrics and the hooks that feed them."""

    def __init__(
        self,
        database: DeploymentGauges,
        every: float = DATABASE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.registry = registry = CollectorRegistry()
        self.created = Counter(
            "hitl_requests_created", "Requests for human input created on this worker",
            ["tool", "door", "surface"], registry=registry,
        )  # fmt: skip
        self.settled = Counter(
            "hitl_requests_settled", "Requests settled on this worker, by how they ended",
            ["outcome"], registry=registry,
        )  # fmt: skip
        self.decision = Histogram(
            "hitl_request_decision_seconds", "Time from a request's creation to its settle",
            ["outcome"], buckets=DECISION_BUCKETS, registry=registry,
        )  # fmt: skip
        self.slack_calls = Counter(
            "hitl_slack_api_calls", "Slack Web API attempts (retries each counted)",
            ["method", "outcome"], registry=registry,
        )  # fmt: skip
        self.teams_calls = Counter(
            "hitl_teams_api_calls", "Bot Connector attempts (retries each counted)",
            ["method", "outcome"], registry=registry,
        )  # fmt: skip
        self.acked = Counter(
            "hitl_interactions_acked", "Events and interactions a surface's route acked (2xx)",
            ["surface"], registry=registry,
        )  # fmt: skip
        self.ack_seconds = Histogram(
            "hitl_interaction_ack_seconds", "Time from an event's arrival to its ack",
            ["surface"], buckets=ACK_BUCKETS, registry=registry,
        )  # fmt: skip
        self.webhooks = Counter(
            "hitl_webhook_deliveries", "Webhook attempts finished on this worker, by outcome",
            ["outcome"], registry=registry,
        )  # fmt: skip
        self.model_calls = Counter(
            "hitl_model_calls", "Calls of the model (one agent turn each)",
            ["model", "outcome"], registry=registry,
        )  # fmt: skip
        self.model_seconds = Histogram(
            "hitl_model_call_seconds", "Time a model call took, streamed to its end",
            ["model"], buckets=MODEL_BUCKETS, registry=registry,
        )  # fmt: skip
        self.store_unavailable = Counter(
            "hitl_store_unavailable", "Database calls that failed as an outage",
            registry=registry,
        )  # fmt: skip
        self.deployment = DeploymentCollector(database.read, every, clock)
        self.worker = WorkerCollector()
        registry.register(self.deployment)
        registry.register(self.worker)

    # -- the hooks ---------------------------------------------------------------------------

    async def observe(self, update: RequestUpdate) -> None:
        """The handler's observer: a request asked, or settled (as log_lines tells them)."""
        again = update.shown_again or update.run_outcome is not None or update.copy
        if again or not update.pending_id:
            return
        if update.state is RenderState.EXECUTING:
            door = "doors" if update.channel_id == DOOR_CHANNEL else "agent"
            surface = surface_of(update.room_id) or OTHER
            self.created.labels(update.tool_name, door, surface).inc()
            return
        outcome = OUTCOMES.get(update.state)
        if outcome is None:  # a call still streaming in
            return
        self.settled.labels(outcome).inc()
        if update.settled_at is not None:
            waited = (update.settled_at - update.created_at).total_seconds()
            self.decision.labels(outcome).observe(max(waited, 0.0))

    def slack_call(self, method: str, outcome: str) -> None:
        self.slack_calls.labels(method, outcome).inc()

    def teams_call(self, method: str, outcome: str) -> None:
        self.teams_calls.labels(method, outcome).inc()

    def webhook(self, outcome: str) -> None:
        self.webhooks.labels(outcome).inc()

    def store_outage(self, _line: str) -> None:
        self.store_unavailable.inc()

    def acks(self, surface: str, handle: Handler) -> Handler:
        """`handle` (a surface's route), its acks counted and timed."""
        acked, seconds = self.acked.labels(surface), self.ack_seconds.labels(surface)

        async def timed(request: web.Request) -> web.StreamResponse:
            started = time.perf_counter()
            response = await handle(request)
            if 200 <= response.status < 300:
                seconds.observe(time.perf_counter() - started)
                acked.inc()
            return response

        return timed

    # -- serving -----------------------------------------------------------------------------

    async def scrape(self) -> bytes:
        """The text exposition of every metric, the database gauges refreshed if due."""
        await self.deployment.refresh()
        return generate_latest(self.registry)

    def web_app(self) -> web.Application:
        """The metrics' own HTTP application (`GET /metrics`), for their own port."""
        app = web.Application()

        async def metrics(_: web.Request) -> web.Response:
            body = await self.scrape()
            return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

        app.router.add_get(PATH, metrics)
        return app


class MeteredModel:
    """An AIProvider whose calls are counted and timed (`hitl_model_calls_total`,
    `hitl_model_call_seconds`); `inner` does the work."""

    def __init__(self, inner: AIProvider, metrics: Metrics, model: str) -> None:
        self.inner = inner
        self._calls = {
            outcome: metrics.model_calls.labels(model, outcome)
            for outcome in ("ok", "interrupted", "cancelled", "error")
        }
        self._seconds = metrics.model_seconds.labels(model)

    async def generate(
        self,
        *,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[AITool],
        on_tool_start: ToolStartCallback,
        on_text_delta: TextDeltaCallback | None = None,
    ) -> AssistantTurn:
        started = time.perf_counter()
        outcome = "error"
        try:
            turn = await self.inner.generate(
                system=system,
                messages=messages,
                tools=tools,
                on_tool_start=on_tool_start,
                on_text_delta=on_text_delta,
            )
            outcome = "ok"
            return turn
        except ReplyInterruptedError:
            outcome = "interrupted"
            raise
        except asyncio.CancelledError:  # the turn was cut (a shutdown, a person's stop)
            outcome = "cancelled"
            raise
        finally:
            self._calls[outcome].inc()
            self._seconds.observe(time.perf_counter() - started)
