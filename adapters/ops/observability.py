"""What a worker tells its operators, wired into the service `serve` builds: metrics
(adapters/ops/metrics.py, when HITL_METRICS_ADDRESS is set) and traces (adapters/ops/tracing.py,
when
an OTLP endpoint is). Each hears every request and wraps the model and the approval gate;
neither SDK is imported when it is off."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import aiohttp

from adapters.ops.tracing import Tracing, tracing_from_environment
from adapters.serve.settings import Settings
from bot.human_input.holding import worker_name

if TYPE_CHECKING:
    from adapters.ops.metrics import Metrics
    from bot import Bridge, HumanInputHandler
    from bot.agent.provider import AIProvider
    from bot.gates.gate import Gate
    from bot.store import SqlStore

TracingFor = Callable[[str], Tracing | None]
"""The tracing of a worker (by its name): from the environment, or a test's exporter."""


@dataclass(frozen=True)
class Watched:
    """The model and the gate as the agent gets them, and what watches them."""

    provider: AIProvider
    gate: Gate
    metrics: Metrics | None = None
    tracing: Tracing | None = None
    # For the aiohttp sessions that call out (Slack's Web API, webhooks): traced calls.
    trace_configs: list[aiohttp.TraceConfig] = field(default_factory=list)


def watched(
    settings: Settings,
    store: SqlStore,
    bridge: Bridge,
    handler: HumanInputHandler,
    provider: AIProvider,
    gate: Gate,
    tracing_for: TracingFor = tracing_from_environment,
) -> Watched:
    """`provider` and `gate` wrapped by what is configured, each hearing `handler`'s
    requests."""
    runs = bridge.runs
    tracing = tracing_for(runs.worker_id if runs is not None else worker_name())
    metrics = open_metrics(settings, store)
    if metrics is not None:
        from adapters.ops.metrics import MeteredModel

        handler.add_observer(metrics.observe)
        store.watch_outages(metrics.store_outage)
        if runs is not None:
            metrics.worker.leases = lambda: runs.held
            metrics.worker.adopted = lambda: runs.adopted
        provider = MeteredModel(provider, metrics, settings.model)
    if tracing is None:
        return Watched(provider, gate, metrics)
    handler.add_observer(tracing.observe)
    handler.carry_traces(tracing.carrier)  # a settle handed to the holder keeps its trace
    return Watched(tracing.model(provider), tracing.gate(gate), metrics, tracing,
                   [tracing.client_trace()])  # fmt: skip


def open_metrics(settings: Settings, store: SqlStore) -> Metrics | None:
    """This worker's metrics when HITL_METRICS_ADDRESS is set (prometheus_client is imported
    only then); None otherwise."""
    if settings.metrics_listen is None:
        return None
    from adapters.ops.metrics import Metrics
    from bot.store.gauges import DeploymentGauges

    return Metrics(DeploymentGauges(store), settings.metrics_database_seconds)
