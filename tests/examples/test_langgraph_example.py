"""examples/langgraph/graph.py, run against a bridge on loopback: the graph's Agent Inbox
interrupt is asked of the person, and the graph resumes with their decision, a decline
included (a decision, not an error)."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.runnables import RunnableConfig

from examples.langgraph import graph
from hitl_client import HitlClient, RequestExpired
from tests.examples.bridge import TO, Answer, Asked, Decline, Edit, bridge
from tests.examples.readme import checked, run_as_told

pytestmark = pytest.mark.subprocess  # the README's commands run as processes

WITHIN = 10.0  # seconds a run may take here
DRAFT = "Payments v3: payouts settle in one day instead of two."
EDITED = "Payments v3: payouts settle within 24 hours."


def approver(asked: Asked) -> Answer:
    return Answer({"approved": True})


async def test_an_approved_note_is_published_as_drafted() -> None:
    async with bridge(approver) as hitl, HitlClient(hitl.url, hitl.token) as client:
        final = await asyncio.wait_for(graph.run(client, TO, version="v3"), WITHIN)
    [asked] = hitl.asked
    assert (asked.tool, asked.to) == ("approveToolCall", TO)
    assert asked.arguments["tool"] == graph.ACTION
    assert asked.arguments["arguments"] == {"note": DRAFT}
    assert final["note"] == DRAFT


async def test_an_edited_note_is_published_as_the_person_wrote_it() -> None:
    async with (
        bridge(lambda asked: Edit({"note": EDITED})) as hitl,
        HitlClient(hitl.url, hitl.token) as client,
    ):
        final = await asyncio.wait_for(graph.run(client, TO, version="v3"), WITHIN)
    assert final["note"] == EDITED


async def test_a_declined_note_is_not_published_and_the_graph_says_why() -> None:
    async with (
        bridge(lambda asked: Decline("Wait for the payouts FAQ")) as hitl,
        HitlClient(hitl.url, hitl.token) as client,
    ):
        final = await asyncio.wait_for(graph.run(client, TO, version="v3"), WITHIN)
    assert final["declined"] == "Wait for the payouts FAQ"
    assert "note" not in final


@pytest.mark.slow  # the request's shortest deadline, a second, waited out
async def test_a_request_nobody_answers_leaves_the_graph_paused_at_its_interrupt() -> None:
    paused = graph.build_graph()
    async with bridge(approver, at_once=2) as hitl, HitlClient(hitl.url, hitl.token) as client:
        # at_once=2: the person waits for a second request, so this one expires unanswered
        with pytest.raises(RequestExpired):
            run = graph.run(client, TO, graph=paused, thread_id="t-1", timeout_seconds=1)
            await asyncio.wait_for(run, WITHIN)
    config: RunnableConfig = {"configurable": {"thread_id": "t-1"}}
    state = await paused.aget_state(config)
    assert state.next == ("review",)  # waiting for an answer, nothing published
    assert "note" not in state.values and len(hitl.asked) == 0


async def test_the_readme_s_commands_run_the_graph_against_serve() -> None:
    readme = checked("langgraph", "langgraph")
    async with bridge(approver) as hitl:
        to_this_bridge = {"HITL_URL": hitl.url, "HITL_TOKEN": hitl.token, "HITL_TO": TO}
        ran = await run_as_told(readme.run, {**readme.env, **to_this_bridge})
    assert ran.status == 0, ran.err
    assert ran.out == "Payments v2: payouts settle in one day instead of two.\n"
