"""examples/langchain_agent/agent.py, run against a bridge on loopback with the example's local
ScriptedModel: the middleware's interrupt holds both calls, both are asked at once, and the
agent resumes with the person's decisions."""

from __future__ import annotations

import asyncio

import pytest

from examples.langchain_agent import agent
from hitl_client import HitlClient
from tests.examples.bridge import TO, Answer, Asked, Decline, Edit, bridge
from tests.examples.readme import checked, run_as_told

pytestmark = pytest.mark.subprocess  # the README's commands run as processes

WITHIN = 20.0  # seconds a run may take here
APPROVED = (
    "deploy: payments v2 is live in production\nnotify: posted to #releases: payments v2 is out"
)


def approver(asked: Asked) -> Answer:
    return Answer({"approved": True})


async def test_both_calls_are_asked_at_once_and_run_when_approved() -> None:
    async with bridge(approver, at_once=2) as hitl, HitlClient(hitl.url, hitl.token) as client:
        output = await asyncio.wait_for(agent.run(client, TO), WITHIN)
    assert sorted((a.tool, a.arguments["tool"]) for a in hitl.asked) == [
        ("approveToolCall", "deploy"), ("approveToolCall", "notify")
    ]  # fmt: skip
    assert output == APPROVED


def edit_deploy_decline_notify(asked: Asked) -> Edit | Decline:
    if asked.arguments["tool"] == "deploy":
        return Edit({"version": "v2.1"})
    return Decline("I will announce it myself")


async def test_an_edited_call_runs_as_edited_and_a_declined_one_not_at_all() -> None:
    async with (
        bridge(edit_deploy_decline_notify, at_once=2) as hitl,
        HitlClient(hitl.url, hitl.token) as client,
    ):
        output = await asyncio.wait_for(agent.run(client, TO), WITHIN)
    assert sorted(output.splitlines()) == [  # a rejection's result comes first
        "deploy: payments v2.1 is live in production",
        "notify: User rejected the tool call for `notify` with reason: I will announce it myself",
    ]


async def test_the_readme_s_commands_run_the_agent_against_serve() -> None:
    readme = checked("langchain_agent", "langchain")
    async with bridge(approver) as hitl:
        to_this_bridge = {"HITL_URL": hitl.url, "HITL_TOKEN": hitl.token, "HITL_TO": TO}
        no_model = {"LANGCHAIN_MODEL": ""}  # the README's default: the local ScriptedModel
        ran = await run_as_told(readme.run, {**readme.env, **to_this_bridge, **no_model})
    assert ran.status == 0, ran.err
    assert ran.out == APPROVED + "\n"
