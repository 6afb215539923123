"""hitl_client.frameworks.openai_agents with the real OpenAI Agents SDK (`Runner` on a scripted
`Model`, no network) and the real bridge, the person answering in (fake) Slack."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from agents import (
    Agent,
    AgentOutputSchemaBase,
    Handoff,
    Model,
    ModelResponse,
    ModelSettings,
    ModelTracing,
    RunConfig,
    RunContextWrapper,
    Runner,
    Tool,
    TResponseInputItem,
    Usage,
    function_tool,
)
from agents.items import TResponseStreamEvent
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)
from openai.types.responses.response_prompt_param import ResponsePromptParam

from hitl_client import HitlClient
from hitl_client.frameworks.openai_agents import approve_interruptions
from tests.examples.bridge import TO, Answer, Asked, Decline, Edit, bridge

WITHIN = 20.0  # seconds a run may take here: a bound on a hang, not a speed requirement
CONFIG = RunConfig(tracing_disabled=True)  # the SDK's tracing would upload to OpenAI

Call = tuple[str, dict[str, Any]]


class ScriptedModel(Model):
    """Answers each turn with the next of `turns` (the tool calls to make); after the last,
    with the outputs of every call it was given, as text."""

    def __init__(self, *turns: list[Call]) -> None:
        self.turns = list(turns)

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: ResponsePromptParam | None,
    ) -> ModelResponse:
        if self.turns:
            made = self.turns.pop(0)
            output: list[Any] = [
                ResponseFunctionToolCall(
                    id=f"fc_{len(self.turns)}_{n}",
                    type="function_call",
                    call_id=f"call_{len(self.turns)}_{n}",
                    name=name,
                    arguments=json.dumps(args),
                )
                for n, (name, args) in enumerate(made)
            ]
            return ModelResponse(output=output, usage=Usage(), response_id=None)
        told = [str(dict(i).get("output")) for i in ([] if isinstance(input, str) else input)
                if dict(i).get("type") == "function_call_output"]  # fmt: skip
        text = ResponseOutputText(type="output_text", text="\n".join(told), annotations=[])
        message = ResponseOutputMessage(id="msg", type="message", role="assistant",
                                        status="completed", content=[text])  # fmt: skip
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: ResponsePromptParam | None,
    ) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError("these tests run the agent unstreamed")


@function_tool(needs_approval=True)
def deploy(ctx: RunContextWrapper[list[str]], service: str, replicas: int) -> str:
    """Deploy a service with a number of replicas."""
    ctx.context.append(f"deploy {service} x{replicas}")
    return f"{service} runs {replicas} replicas"


@function_tool(needs_approval=True)
def delete_file(ctx: RunContextWrapper[list[str]], path: str) -> str:
    """Delete a file."""
    ctx.context.append(f"delete {path}")
    return f"{path} deleted"


def release_agent(model: ScriptedModel) -> Agent[list[str]]:
    return Agent[list[str]](name="Release manager", instructions="Deploy when asked.",
                            tools=[deploy, delete_file], model=model)  # fmt: skip


async def run(model: ScriptedModel, hitl: HitlClient) -> tuple[str, list[str], int]:
    """The run to its end, each pause decided through the adapter: (output, ran, pauses)."""
    agent, ran = release_agent(model), list[str]()
    result = await Runner.run(agent, "Scale the api.", context=ran, run_config=CONFIG)
    pauses = 0
    while result.interruptions:
        state = await approve_interruptions(result, hitl, to=TO, key=f"run-{pauses}")
        result = await Runner.run(agent, state, run_config=CONFIG)
        pauses += 1
    return str(result.final_output), ran, pauses


def person(asked: Asked) -> Answer | Decline | Edit:
    """Edits a deploy of one replica to three, approves the others; declines any delete."""
    call = asked.arguments["arguments"]
    if asked.arguments["tool"] == "delete_file":
        return Decline("keep the report until Friday")
    return Edit({"replicas": 3}) if call["replicas"] == 1 else Answer({"approved": True})


async def test_the_calls_of_one_turn_are_asked_at_once_and_each_decided() -> None:
    model = ScriptedModel(
        [("deploy", {"service": "api", "replicas": 1}), ("delete_file", {"path": "/r.csv"})],
        [("deploy", {"service": "api", "replicas": 3})],  # the model takes the person's edit
    )
    async with bridge(person, at_once=2) as hitl, HitlClient(hitl.url, hitl.token) as client:
        output, ran, pauses = await asyncio.wait_for(run(model, client), WITHIN)
    assert [(a.arguments["tool"], a.arguments["arguments"]) for a in hitl.asked][2:] == [
        ("deploy", {"service": "api", "replicas": 3})
    ]  # the first two, the turn's own calls, were asked together (at_once=2)
    assert (ran, pauses) == (["deploy api x3"], 2)
    told = output.splitlines()
    assert "A person declined: keep the report until Friday" in told
    assert "A person approved deploy only with these arguments: " in "\n".join(told)
    assert told[-1] == "api runs 3 replicas"


async def test_an_approved_call_runs_as_the_model_made_it() -> None:
    model = ScriptedModel([("deploy", {"service": "api", "replicas": 2})])
    approve = Answer({"approved": True})
    async with bridge(lambda a: approve) as hitl, HitlClient(hitl.url, hitl.token) as client:
        output, ran, pauses = await asyncio.wait_for(run(model, client), WITHIN)
    assert [a.tool for a in hitl.asked] == ["approveToolCall"]
    assert (output, ran, pauses) == ("api runs 2 replicas", ["deploy api x2"], 1)


async def test_a_grant_approves_the_tool_for_the_rest_of_the_run() -> None:
    """`grant` (approve and allow here) is `always_approve`: the next call runs unasked."""
    model = ScriptedModel([("deploy", {"service": "api", "replicas": 2})],
                          [("deploy", {"service": "web", "replicas": 2})])  # fmt: skip
    agent, ran = release_agent(model), list[str]()
    grant = Answer({"approved": True, "grant": True})  # the person clicks "Approve and allow"
    async with bridge(lambda a: grant) as hitl, HitlClient(hitl.url, hitl.token) as client:
        paused = await Runner.run(agent, "Scale both.", context=ran, run_config=CONFIG)
        state = await asyncio.wait_for(approve_interruptions(paused, client, to=TO), WITHIN)
        done = await Runner.run(agent, state, run_config=CONFIG)
    assert done.interruptions == []
    assert ran == ["deploy api x2", "deploy web x2"]
    [asked] = hitl.asked  # the second call ran unasked
    assert asked.arguments["grant"] == {"rule": "deploy for the rest of this run"}
