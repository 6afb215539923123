"""Tracing's own edges: spans reach an OTLP/HTTP collector the test serves on 127.0.0.1, as
the environment configures the SDK's exporter; without an endpoint nothing is traced and the
SDK is not imported."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from adapters.ops.tracing import tracing_from_environment

ROOT = Path(__file__).resolve().parents[3]
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


@pytest.fixture
async def collector() -> AsyncIterator[tuple[str, list[ExportTraceServiceRequest]]]:
    """An OTLP/HTTP collector (protobuf on /v1/traces): its URL, what it received."""
    received: list[ExportTraceServiceRequest] = []

    async def traces(request: web.Request) -> web.Response:
        assert request.content_type == "application/x-protobuf"
        received.append(ExportTraceServiceRequest.FromString(await request.read()))
        return web.Response(body=b"", content_type="application/x-protobuf")

    app = web.Application()
    app.router.add_post("/v1/traces", traces)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    yield f"http://{host}:{port}", received
    await runner.cleanup()


async def test_a_request_s_span_reaches_the_collector_the_environment_names(
    collector: tuple[str, list[ExportTraceServiceRequest]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, received = collector
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    tracing = tracing_from_environment("worker-a")
    assert tracing is not None
    app = web.Application(middlewares=[tracing.middleware()])

    async def hello(_: web.Request) -> web.Response:
        return web.Response(text="hi")

    app.router.add_get("/hello", hello)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    traceparent = f"00-{TRACE_ID}-00f067aa0ba902b7-01"
    async with aiohttp.ClientSession() as http:
        response = await http.get(
            f"http://{host}:{port}/hello", headers={"traceparent": traceparent}
        )
        assert response.status == 200
        response.release()
    await runner.cleanup()
    await tracing.close()  # flushes the batch: the exporter posts it
    spans = [
        (resource, span)
        for export in received
        for resource in export.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    ]
    (resource, span) = next((r, s) for r, s in spans if s.name == "GET /hello")
    assert span.trace_id.hex() == TRACE_ID
    attributes = {a.key: a.value.string_value for a in resource.resource.attributes}
    assert attributes["service.name"] == "hitl-bridge"
    assert attributes["service.instance.id"] == "worker-a"


@pytest.mark.subprocess
def test_without_an_endpoint_nothing_is_traced_nor_imported(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from adapters.ops.tracing import tracing_from_environment\n"
        "assert tracing_from_environment('w') is None\n"
        "assert not [m for m in sys.modules if m.startswith('opentelemetry')], 'imported'\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
