"""examples/langgraph/graph.py, run against a bridge on loopback: the graph's interrupt is
asked of the person, and the graph resumes with their answer."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.runnables import RunnableConfig

from examples.langgraph import graph
from hitl_client import HitlClient, RequestDeclined
from tests.examples.bridge import TO, Answer, Asked, Decline, bridge
from tests.examples.readme import checked, run_as_told

pytestmark = pytest.mark.subprocess  # the README's commands run as processes

WITHIN = 10.0  # seconds a run may take here
FEEDBACK = "Say 'within 24 hours' and link the payouts FAQ."


def reviewer(asked: Asked) -> Answer:
    return Answer({"answer": FEEDBACK})


async def test_the_graph_resumes_with_the_persons_answer() -> None:
    async with bridge(reviewer) as hitl, HitlClient(hitl.url, hitl.token) as client:
        final = await asyncio.wait_for(graph.run(client, TO, version="v3"), WITHIN)
    [asked] = hitl.asked
    assert (asked.tool, asked.to) == ("AskUserQuestion", TO)
    draft = "Payments v3: payouts settle in one day instead of two."
    assert asked.arguments == {"question": f"Draft release note:\n\n{draft}\n\nWhat should change?"}
    assert final["feedback"] == FEEDBACK
    assert final["note"] == f"{draft}\n\nReviewed: {FEEDBACK}"


async def test_a_declined_question_leaves_the_graph_paused_at_its_interrupt() -> None:
    paused = graph.build_graph()

    def busy(asked: Asked) -> Decline:
        return Decline("Ask me after the release")

    async with bridge(busy) as hitl, HitlClient(hitl.url, hitl.token) as client:
        with pytest.raises(RequestDeclined) as declined:
            await asyncio.wait_for(graph.run(client, TO, graph=paused, thread_id="t-1"), WITHIN)
    assert declined.value.reason == "Ask me after the release"
    config: RunnableConfig = {"configurable": {"thread_id": "t-1"}}
    state = await paused.aget_state(config)
    assert state.next == ("review",)  # waiting for an answer, not published
    assert [i.value for i in state.interrupts] == [hitl.asked[0].arguments]
    assert "note" not in state.values


async def test_the_readme_s_commands_run_the_graph_against_serve() -> None:
    readme = checked("langgraph", "langgraph")
    async with bridge(reviewer) as hitl:
        to_this_bridge = {"HITL_URL": hitl.url, "HITL_TOKEN": hitl.token, "HITL_TO": TO}
        ran = await run_as_told(readme.run, {**readme.env, **to_this_bridge})
    assert ran.status == 0, ran.err
    draft = "Payments v2: payouts settle in one day instead of two."
    assert ran.out == f"{draft}\n\nReviewed: {FEEDBACK}\n"
