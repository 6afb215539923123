"""What one AG-UI client can hold on a worker: threads whose client never comes back are freed
(counted in the door's own structures), and a token runs a bounded number of turns at once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from ag_ui.core import RunAgentInput, RunErrorEvent, UserMessage

from adapters.doors.ag_ui.door import AgUiDoor
from bot.doors.tokens import Tokens
from bot.records import RequestStatus
from bot.store.doors import DoorTables
from tests.adapters.doors.ag_ui.test_ag_ui import APPROVAL, Client, client_of, finished, interrupted
from tests.adapters.surfaces.slack.conftest import Env, StartEnv
from tests.adapters.workers import eventually
from tests.fakes.anthropic_api import Turn, reply, reply_text, tool_use_block

ABANDONED = 200  # runs left at their interrupt, their client never back
BATCH = 20  # runs posted at once


def ask_then_end(body: dict[str, Any]) -> Turn:
    """The model's move whatever thread it is in: a person's message asks for an approval,
    the approval's outcome (an answer, or its expiry) ends the turn."""
    if isinstance(body["messages"][-1]["content"], str):
        return reply(tool_use_block("requestApproval", APPROVAL))
    return reply_text("Done.")


def ended_turns(env: Env) -> int:
    """How many turns read their request's outcome (the model's calls with a tool result)."""
    return sum(1 for r in env.model.requests if r.tool_results)


async def door_of(env: Env) -> AgUiDoor:
    loading = env.server.service.ag_ui
    assert loading is not None
    return await loading.loaded()


async def abandon(client: Client, threads: range) -> None:
    """A run on each thread, read to its interrupt, and never resumed."""
    for start in range(threads.start, threads.stop, BATCH):
        batch = range(start, min(start + BATCH, threads.stop))
        for events in await asyncio.gather(*[client.run(f"t-{n}", "ship it") for n in batch]):
            interrupted(events)


@pytest.mark.slow  # 200 turns, each waiting out its request's expiry: ~20 s
async def test_hundreds_of_abandoned_threads_are_freed(start_env: StartEnv) -> None:
    env = await start_env(HITL_TIMEOUT_SECONDS=3, HITL_AG_UI_TURNS_PER_TOKEN=ABANDONED)
    threads = (await door_of(env)).threads
    threads.kept_for = 0.05  # what no resume reads this soon is dropped (the default: minutes)
    client = await client_of(env)
    env.model.script(*[ask_then_end] * (2 * ABANDONED))
    await abandon(client, range(ABANDONED))
    # Each request expires; its turn reads that, ends, and nobody reads the thread again.
    await eventually(lambda: ended_turns(env) == ABANDONED, "every turn's end", timeout=30)
    await eventually(lambda: threads.held() == (0, 0), "the threads freed")


async def test_a_thread_whose_client_left_mid_turn_is_freed(start_env: StartEnv) -> None:
    env = await start_env()
    threads = (await door_of(env)).threads
    threads.kept_for = 0.05
    client = await client_of(env)
    go_on = asyncio.Event()
    env.model.script(reply_text("A long answer.", hold=go_on))
    message = UserMessage(id="m-1", content="hi")
    run = RunAgentInput(thread_id="t-left", run_id="r-1", messages=[message])
    body = run.model_dump(mode="json", by_alias=True)
    headers = {"Authorization": f"Bearer {client.token}"}
    async with env.http.post(client.url, json=body, headers=headers) as response:
        assert (await response.content.readline()).startswith(b"data: ")  # RUN_STARTED
    assert threads.held()[0] == 1  # its turn runs on, the client gone
    go_on.set()
    await eventually(lambda: threads.held() == (0, 0), "the thread freed")


async def test_unread_threads_are_bounded_and_the_latest_kept(start_env: StartEnv) -> None:
    env = await start_env(HITL_TIMEOUT_SECONDS=2)
    threads = (await door_of(env)).threads
    threads.max_unread = 4
    client = await client_of(env)
    env.model.script(*[ask_then_end] * 20)
    await abandon(client, range(10))
    await eventually(lambda: ended_turns(env) == 10, "every turn's end")
    await eventually(lambda: threads.held()[0] == 4, "all but 4 unread threads dropped")
    assert threads.held()[1] > 0  # what the kept turns did after their interrupt, for a late resume


async def test_a_token_runs_at_most_its_turns_at_once(start_env: StartEnv) -> None:
    env = await start_env(HITL_AG_UI_TURNS_PER_TOKEN=2)
    env.model.script(*[ask_then_end] * 10)
    client = await client_of(env)
    (first,) = interrupted(await client.run("t-1", "ship it")).interrupts
    interrupted(await client.run("t-2", "ship it"))
    refused = await client.run("t-3", "ship it")
    error = refused[-1]
    assert isinstance(error, RunErrorEvent) and error.code == "too_many_turns"
    assert "HITL_AG_UI_TURNS_PER_TOKEN" in error.message and "2" in error.message
    assert len([r for r in env.model.requests if r.body]) == 2  # the refused run asked nothing
    assert len(await env.store.pending_in_room("ag-ui:web-app:t-3")) == 0

    plain, _ = await Tokens(DoorTables(env.store)).create("other-app")
    interrupted(await Client(env, plain).run("t-3", "ship it"))  # another token's own turns
    assert (await door_of(env)).threads.held()[0] == 3  # the refused run left nothing behind

    finished(await client.resume("t-1", first.id, "resolved", {"approved": True}))
    record = await env.store.get_request(first.id)
    assert record is not None and record.status is RequestStatus.RESOLVED
    interrupted(await client.run("t-3", "ship it"))  # its turn ended: room for another
