"""`/metrics` of the real service with the doors: a request asked over the API (door `doors`),
a long poll open while it waits, its webhook delivered once it is clicked."""

from __future__ import annotations

import asyncio

from aiohttp import web
from prometheus_client.parser import text_string_to_metric_families

from tests.adapters.doors.api.test_api import held, posted, start
from tests.adapters.surfaces.slack.conftest import WAIT, Env, StartEnv

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def scrape(env: Env) -> Samples:
    assert env.server.metrics_url is not None
    async with env.http.get(env.server.metrics_url) as response:
        text = await response.text()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


async def test_a_door_request_its_long_poll_and_its_webhook(start_env: StartEnv) -> None:
    arrived = asyncio.Event()

    async def callback(_: web.Request) -> web.Response:
        arrived.set()
        return web.Response(status=204)

    app = web.Application()
    app.router.add_post("/hook", callback)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    try:
        env, api = await start(
            start_env, HITL_WEBHOOK_ALLOW_PRIVATE=1, HITL_METRICS_ADDRESS="127.0.0.1:0",
            HITL_METRICS_DATABASE_SECONDS=0.001,  # read at every scrape: the backlog below
        )  # fmt: skip
        status, made = await api.create(callback_url=f"http://{host}:{port}/hook")
        assert status == 201
        message = await posted(env, made["id"])
        polled = asyncio.create_task(api.call("GET", f"/requests/{made['id']}", wait=30))
        await held(env, 1)
        waiting = await scrape(env)
        assert waiting[("hitl_long_polls_open", frozenset())] == 1.0
        created = {"tool": "requestApproval", "door": "doors", "surface": "slack"}
        assert waiting[("hitl_requests_created_total", frozenset(created.items()))] == 1.0

        await env.click(message, "hitl_approve")
        await asyncio.wait_for(polled, WAIT)
        await asyncio.wait_for(arrived.wait(), WAIT)
        delivered = ("hitl_webhook_deliveries_total", frozenset({("outcome", "delivered")}))
        for _ in range(int(WAIT / 0.02)):  # the count follows the delivery's row being written
            done = await scrape(env)
            if done.get(delivered) == 1.0 and done[("hitl_webhook_backlog", frozenset())] == 0:
                break
            await asyncio.sleep(0.02)
        assert done.get(delivered) == 1.0
        assert done[("hitl_webhook_backlog", frozenset())] == 0.0
        assert done[("hitl_long_polls_open", frozenset())] == 0.0
        answered = frozenset({("outcome", "answered")})
        assert done[("hitl_requests_settled_total", answered)] == 1.0
    finally:
        await runner.cleanup()
