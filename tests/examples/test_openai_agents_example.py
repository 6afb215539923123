"""examples/openai_agents/agent.py, run against a bridge on loopback with the example's local
ScriptedModel (no OpenAI): the pending approval of `deploy` is asked of the person, and the run
is approved or rejected as they decide."""

from __future__ import annotations

import asyncio

import pytest
from agents import RunConfig, Runner

from examples.openai_agents import agent
from hitl_client import HitlClient
from tests.examples.bridge import TO, Answer, Asked, Decline, bridge
from tests.examples.readme import checked, run_as_told

pytestmark = pytest.mark.subprocess  # the README's commands run as processes

WITHIN = 10.0  # seconds a run may take here
CALL = {"service": "payments", "version": "v2"}


def approver(asked: Asked) -> Answer:
    return Answer({"approved": True})


def refuser(asked: Asked) -> Decline:
    return Decline("Not during the change freeze")


async def test_an_approved_deploy_runs_and_the_run_completes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # the example's default: ScriptedModel
    async with bridge(approver) as hitl, HitlClient(hitl.url, hitl.token) as client:
        outcome = await asyncio.wait_for(agent.run(client, TO), WITHIN)
    [asked] = hitl.asked
    assert (asked.tool, asked.to) == ("approveToolCall", TO)  # the gate: Approve / Edit / Decline
    assert (asked.arguments["tool"], asked.arguments["arguments"]) == ("deploy", CALL)
    assert outcome.deployed == ["payments v2"]
    assert outcome.output == "deploy: payments v2 is live in production"


async def test_a_rejected_deploy_does_not_run_and_the_model_is_told_why() -> None:
    async with bridge(refuser) as hitl, HitlClient(hitl.url, hitl.token) as client:
        outcome = await asyncio.wait_for(agent.run(client, TO, model=agent.ScriptedModel()), WITHIN)
    assert [a.tool for a in hitl.asked] == ["approveToolCall"]
    assert outcome.deployed == []
    assert outcome.output == "deploy: A person declined: Not during the change freeze"


async def test_the_scripted_model_streams_the_same_call() -> None:
    """Runner.run_streamed works on it too: the run pauses at the same pending approval."""
    streamed = Runner.run_streamed(agent.build_agent(agent.ScriptedModel()), agent.PROMPT,
                                   context=agent.Release(),
                                   run_config=RunConfig(tracing_disabled=True))  # fmt: skip
    async for _ in streamed.stream_events():
        pass
    (pending,) = streamed.interruptions
    assert pending.name == "deploy"


async def test_the_readme_s_commands_run_the_agent_against_serve() -> None:
    readme = checked("openai_agents", "openai-agents")
    async with bridge(approver) as hitl:
        to_this_bridge = {"HITL_URL": hitl.url, "HITL_TOKEN": hitl.token, "HITL_TO": TO}
        no_key = {"OPENAI_API_KEY": ""}  # the README's default: the local ScriptedModel
        ran = await run_as_told(readme.run, {**readme.env, **to_this_bridge, **no_key})
    assert ran.status == 0, ran.err
    assert ran.out == "deploy: payments v2 is live in production\n"
