"""Runs survive their worker: a shutdown leaves the request pending, another worker finishes it."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from bot import AIChannel, AnthropicAIProvider, Bridge, HumanInputToolHandler, RenderState
from bot.durable.leases import RunLeases, left_by
from bot.store import SqlStore, open_store
from tests.bot.conftest import watch, within
from tests.fakes.anthropic_api import FakeAnthropic, reply_text, reply_tool_use

ASK = "AskUserQuestion"


async def worker(store: SqlStore, provider: AnthropicAIProvider) -> tuple[Bridge, AIChannel]:
    """One worker's core, on the shared store (a Bridge per process)."""
    bridge = Bridge(store=store, lease_seconds=1.0)
    human = HumanInputToolHandler.builtin(timeout=30)
    channel = AIChannel("agent", provider=provider, human_input_handler=human)
    bridge.register_channel(channel)
    await bridge.start()
    return bridge, channel


async def test_a_new_message_first_finishes_the_round_its_worker_left(
    fake: FakeAnthropic, provider: AnthropicAIProvider, sqlite_url: str
) -> None:
    fake.script(
        reply_tool_use(ASK, {"question": "Which colour?"}, id="toolu_left"),
        reply_text("Blue it is."),
    )
    store = await open_store(sqlite_url)
    first, first_channel = await worker(store, provider)
    assert first_channel.human_input_handler is not None
    seen = watch(first_channel.human_input_handler.handler)
    turn = asyncio.create_task(first_channel.respond("R1", "Paint it", actor_id="ann"))
    asked = await seen.wait_for(RenderState.EXECUTING)

    first.suspend()  # the first worker shuts down while the person is being asked
    turn.cancel()
    await asyncio.gather(turn, return_exceptions=True)
    await first.close()
    record = await store.get_request(asked.pending_id)
    assert record is not None and record.status.value == "pending"  # not withdrawn

    second, second_channel = await worker(store, provider)
    assert second.runs is not None
    second.runs.lease_seconds = 30.0  # adoption must not be what finishes the round here
    assert second_channel.human_input_handler is not None
    handler = second_channel.human_input_handler.handler
    follow_up = asyncio.create_task(second_channel.respond("R1", "Any news?", actor_id="ann"))
    await asyncio.sleep(0)
    assert await within(handler.answer(asked.pending_id, json.dumps({"answer": "blue"}), by="ann"))
    assert await within(follow_up) == "Blue it is."

    [result] = fake.requests[-1].tool_results
    assert result["tool_use_id"] == "toolu_left"
    assert json.loads(result["content"]) == {"answer": "blue"}
    last_user = fake.requests[-1].body["messages"][-1]["content"]
    assert {"type": "text", "text": "Any news?"} in last_user
    await second.close()
    await store.close()


async def test_take_over_takes_an_open_run_from_a_live_holder_and_only_an_open_one(
    sqlite_url: str,
) -> None:
    """The console demo's take-over; `serve`'s workers still wait for a lease to lapse."""
    store = await open_store(sqlite_url)
    killed = RunLeases(store, worker_id="killed-demo", lease_seconds=3600.0)
    restarted = RunLeases(store, worker_id="restarted-demo", lease_seconds=3600.0)
    assert await killed.acquire("console:ann", "console", "ann", patience=0)
    assert not await restarted.acquire("console:ann", "console", "ann", patience=0)
    assert await restarted.orphans() == []  # not lapsed: no worker of `serve` adopts it

    assert await restarted.take_over("console:ann", "console")
    assert not await killed.acquire("console:ann", "console", "ann", patience=0)  # now taken
    await restarted.finish("console:ann", "console")
    assert not await restarted.take_over("console:ann", "console")  # idle: nothing to resume
    assert not await restarted.take_over("console:bob", "console")  # never run
    await store.close()


async def test_held_and_adopted_count_what_the_metrics_read(sqlite_url: str) -> None:
    """`held` the runs a worker renews now; `adopted` the lapsed runs it took over."""
    store = await open_store(sqlite_url)
    gone = RunLeases(store, worker_id="gone", lease_seconds=0.001)
    alive = RunLeases(store, worker_id="alive", lease_seconds=3600.0)
    assert await gone.acquire("room-1", "agent", "ann", patience=0)
    assert (gone.held, gone.adopted) == (1, 0)
    await asyncio.sleep(0.01)  # the lease lapses: it is what is tested, not a wait for work
    [orphan] = await alive.orphans()
    assert await alive.adopt(orphan)
    assert (alive.held, alive.adopted) == (1, 1)
    await alive.finish("room-1", "agent")
    assert (alive.held, alive.adopted) == (0, 1)
    await store.close()


async def test_a_run_left_on_this_host_is_not_said_to_be_another_worker_s(
    provider: AnthropicAIProvider, sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A worker restarted alone adopts the run its earlier process left: the log says so, and
    does not send its operator looking for another worker."""
    caplog.set_level(logging.INFO, logger="bot.bridge.root")  # its own sweep may adopt first
    store = await open_store(sqlite_url)
    bridge, _ = await worker(store, provider)
    assert bridge.runs is not None
    host = bridge.runs.worker_id.split(":", 1)[0]
    before_restart = RunLeases(store, worker_id=f"{host}:1:0ld000", lease_seconds=0.001)
    elsewhere = RunLeases(store, worker_id="other-host:7:abc123", lease_seconds=0.001)
    assert await before_restart.acquire("R-mine", "agent", "ann", patience=0)
    assert await elsewhere.acquire("R-theirs", "agent", "bob", patience=0)
    await asyncio.sleep(0.01)  # the leases lapse: it is what is tested, not a wait for work
    await bridge.adopt_orphans(bridge.runs)  # both, unless its own sweep took one already

    async def both_said() -> list[str]:
        while True:  # its own sweep logs after its adopt: a few loop turns at most
            lines = sorted(r.getMessage() for r in caplog.records if "resuming" in r.getMessage())
            if len(lines) >= 2:
                return lines
            await asyncio.sleep(0)

    assert await within(both_said()) == [
        f"resuming the run of R-mine left by an earlier process of this host ({host}:1:0ld000),"
        " stopped or restarted",
        "resuming the run of R-theirs left by another worker (other-host:7:abc123), gone",
    ]
    await bridge.close()
    await store.close()


def test_who_left_a_run_is_told_by_its_owner_s_host() -> None:
    me = "web-1:42:a1b2c3"
    assert left_by(me, me) == "left by this worker (its lease lapsed)"
    assert "earlier process of this host" in left_by("web-1:41:ffffff", me)
    assert "another worker (web-2:41:ffffff)" in left_by("web-2:41:ffffff", me)
    assert "another" not in left_by(None, me)
