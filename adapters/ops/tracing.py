"""Traces with OpenTelemetry, on when `OTEL_EXPORTER_OTLP_ENDPOINT` (or its traces-only form)
is set; the SDK and its OTLP/HTTP exporter are imported only then.

What gets a span, each with the request's id as `hitl.request_id` where there is one:

- every inbound HTTP request on the one port (Slack, Teams, the API, MCP, the console), a
  SERVER span continuing the caller's `traceparent` (an API client's trace goes on here);
- every outbound Web API call to Slack and every webhook delivery, a CLIENT span whose
  `traceparent` is sent along (a webhook's receiver continues the trace);
- every model call and every call of the agent file's tools;
- every settle of a request (its tool, outcome and who decided), in the trace of what settled
  it (the click, the reply, the API call), also when the worker holding the request applies
  it for another (the trace travels in the proposal: bot/human_input/carried.py).

The configuration is OpenTelemetry's own (`OTEL_SERVICE_NAME`, `OTEL_EXPORTER_OTLP_HEADERS`,
`OTEL_RESOURCE_ATTRIBUTES`...). Spans leave in batches from the SDK's own thread, so the event
loop never waits on the collector; a collector that is down loses spans, not requests.
The tracer provider is this server's, not the process's global one.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable, Iterator, Mapping
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import aiohttp
from aiohttp import web

from bot.human_input import RenderState, RequestUpdate

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import Span, Tracer

    from bot.agent.provider import AIProvider, AssistantTurn, TextDeltaCallback, ToolStartCallback
    from bot.gates.gate import Gate
    from bot.tools import AITool, ToolHandler

ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
REQUEST_ID = "hitl.request_id"
SETTLED = frozenset({
    RenderState.COMPLETE, RenderState.REJECTED, RenderState.EXPIRED, RenderState.CANCELLED,
    RenderState.UNDELIVERABLE,
})  # fmt: skip
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def tracing_from_environment(worker: str) -> Tracing | None:
    """Tracing to the OTLP/HTTP endpoint the environment names; None (nothing imported)
    without one."""
    if not any(os.environ.get(name) for name in ENDPOINTS):
        return None
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return Tracing(OTLPSpanExporter(), worker=worker)


class Tracing:
    """One server's tracer provider and the hooks that make its spans."""

    def __init__(self, exporter: SpanExporter, *, worker: str, batch: bool = True) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

        resource = Resource.create({"service.name": "hitl-bridge", "service.instance.id": worker})
        self.provider = TracerProvider(resource=resource)
        processor = BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter)
        self.provider.add_span_processor(processor)
        self.tracer: Tracer = self.provider.get_tracer("hitl-bridge")
        self.carrier = TraceContextCarrier()  # for the handler: HumanInputHandler.carry_traces

    async def close(self) -> None:
        """Send what is left (in a thread: the exporter blocks), then stop."""
        await asyncio.to_thread(self.provider.shutdown)

    # -- inbound ---------------------------------------------------------------------------

    def middleware(self) -> Any:
        """A SERVER span per request, continuing the caller's `traceparent`."""
        from opentelemetry.propagate import extract
        from opentelemetry.trace import SpanKind, Status, StatusCode

        tracer = self.tracer

        @web.middleware
        async def traced(request: web.Request, handler: Handler) -> web.StreamResponse:
            resource = request.match_info.route.resource
            route = resource.canonical if resource is not None else request.path
            with tracer.start_as_current_span(
                f"{request.method} {route}", context=extract(request.headers), kind=SpanKind.SERVER,
                attributes={"http.request.method": request.method, "http.route": route,
                            "url.path": request.path},
            ) as span:  # fmt: skip
                request_id = request.match_info.get("id")  # the API's and the console's routes
                if request_id:
                    span.set_attribute(REQUEST_ID, request_id)
                try:
                    response = await handler(request)
                except web.HTTPException as err:
                    span.set_attribute("http.response.status_code", err.status)
                    raise
                span.set_attribute("http.response.status_code", response.status)
                if response.status >= 500:
                    span.set_status(Status(StatusCode.ERROR))
                return response

        return traced

    # -- outbound --------------------------------------------------------------------------

    def client_trace(self) -> aiohttp.TraceConfig:
        """For an aiohttp session: a CLIENT span per call, its `traceparent` sent along."""
        from opentelemetry import trace
        from opentelemetry.propagate import inject
        from opentelemetry.trace import SpanKind, Status, StatusCode

        tracer = self.tracer
        config = aiohttp.TraceConfig()

        async def started(_: Any, ctx: SimpleNamespace, params: Any) -> None:
            url = params.url
            ctx.span = span = tracer.start_span(
                f"{params.method} {url.host}{url.path}", kind=SpanKind.CLIENT,
                attributes={"http.request.method": params.method, "server.address": url.host or "",
                            "url.full": str(url.with_query(None))},
            )  # fmt: skip
            inject(params.headers, context=trace.set_span_in_context(span))

        async def ended(_: Any, ctx: SimpleNamespace, params: Any) -> None:
            span: Span = ctx.span
            span.set_attribute("http.response.status_code", params.response.status)
            if params.response.status >= 500:
                span.set_status(Status(StatusCode.ERROR))
            span.end()

        async def failed(_: Any, ctx: SimpleNamespace, params: Any) -> None:
            span: Span = ctx.span
            span.record_exception(params.exception)
            span.set_status(Status(StatusCode.ERROR, type(params.exception).__name__))
            span.end()

        config.on_request_start.append(started)
        config.on_request_end.append(ended)
        config.on_request_exception.append(failed)
        return config

    # -- the agent ---------------------------------------------------------------------------

    def model(self, provider: AIProvider) -> AIProvider:
        """`provider` with a span per model call."""
        return TracedProvider(provider, self.tracer)

    def gate(self, gate: Gate) -> Gate:
        """An approval gate whose gated handler makes a span per call of the agent file's
        tools (covering the wait for the approval and the run)."""

        def traced(inner: ToolHandler, live: Mapping[str, AITool], tools: Any) -> ToolHandler:
            return self.tool_handler(gate(inner, live, tools))

        return traced

    def tool_handler(self, handler: ToolHandler) -> ToolHandler:
        """`handler` with a span per tool call."""
        tracer = self.tracer

        async def traced(name: str, arguments: dict[str, Any]) -> str:
            with tracer.start_as_current_span(
                f"execute_tool {name}",
                attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name},
            ):
                return await handler(name, arguments)

        return traced

    # -- requests ----------------------------------------------------------------------------

    async def observe(self, update: RequestUpdate) -> None:
        """A human-input observer: a span per settle, in the trace of what settled it."""
        if update.state not in SETTLED or update.run_outcome is not None or update.copy:
            return  # not a settle: a gated call's run recorded later, or a copy's message
        attributes = {
            REQUEST_ID: update.pending_id,
            "hitl.tool": update.tool_name,
            "hitl.outcome": update.state.value,
            "hitl.settled_by": update.settled_by or "",
        }
        self.tracer.start_span("request settled", attributes=attributes).end()


class TraceContextCarrier:
    """The current OpenTelemetry context as a W3C `traceparent`, and back: what a settle handed
    to another worker carries (bot/human_input/carried.py)."""

    def __init__(self) -> None:
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        # W3C's own, whatever OTEL_PROPAGATORS says: the proposal's id holds a traceparent.
        self._propagator = TraceContextTextMapPropagator()

    def current(self) -> str | None:
        headers: dict[str, str] = {}
        self._propagator.inject(headers)
        return headers.get("traceparent")

    @contextlib.contextmanager
    def entered(self, traceparent: str) -> Iterator[None]:
        from opentelemetry import context

        token = context.attach(self._propagator.extract({"traceparent": traceparent}))
        try:
            yield
        finally:
            context.detach(token)


class TracedProvider:
    """An AIProvider whose every call is a span (gen_ai's conventions)."""

    def __init__(self, inner: AIProvider, tracer: Tracer) -> None:
        self.inner = inner
        self.tracer = tracer

    async def generate(
        self,
        *,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[AITool],
        on_tool_start: ToolStartCallback,
        on_text_delta: TextDeltaCallback | None = None,
    ) -> AssistantTurn:
        attributes: Mapping[str, Any] = {"gen_ai.operation.name": "chat"}
        with self.tracer.start_as_current_span("chat", attributes=attributes) as span:
            turn = await self.inner.generate(
                system=system,
                messages=messages,
                tools=tools,
                on_tool_start=on_tool_start,
                on_text_delta=on_text_delta,
            )
            span.set_attribute("gen_ai.response.finish_reasons", [turn.stop_reason or ""])
            return turn

    async def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if close is not None:
            await close()
