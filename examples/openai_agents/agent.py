"""An OpenAI Agents SDK agent whose `deploy` tool needs a person's approval, given in Slack or
Teams through the bridge.

    pip install ./clients/python 'openai-agents>=0.24'   # from the repository's root
    HITL_URL=http://localhost:3000 HITL_TOKEN=hitl_... HITL_TO=slack:U0123ABCD \
        python examples/openai_agents/agent.py

`deploy` is a function tool with `needs_approval=True`: the SDK stops the run before calling
it and returns the call as a pending approval (`RunResult.interruptions`).
`approve_interruptions` (hitl_client.frameworks.openai_agents) shows each one as the bridge's
approval gate and writes the person's decision into the run's state: Approve is
`RunState.approve` ("approve and allow here" with `always_approve=True`), Decline is
`RunState.reject` with their reason, which the model reads; the run resumes from that state
until the agent's final answer. A rejected deploy never runs.

The model: OpenAI's (the SDK's default) when OPENAI_API_KEY is set; otherwise `ScriptedModel`
below, a local stand-in that calls `deploy` once and then reports what happened, so the
example runs without a key and without any network but the bridge's.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
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
    Response,
    ResponseCompletedEvent,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)
from openai.types.responses.response_prompt_param import ResponsePromptParam

from hitl_client import HitlClient
from hitl_client.frameworks.openai_agents import approve_interruptions

PROMPT = "Deploy payments v2 to production."


@dataclass
class Release:
    """The run's context: what `deploy` actually did."""

    deployed: list[str] = field(default_factory=list)


@function_tool(needs_approval=True)
def deploy(ctx: RunContextWrapper[Release], service: str, version: str) -> str:
    """Deploy a version of a service to production.

    Args:
        service: The service to deploy.
        version: The version to deploy.
    """
    ctx.context.deployed.append(f"{service} {version}")
    return f"{service} {version} is live in production"


def build_agent(model: str | Model | None = None) -> Agent[Release]:
    return Agent[Release](
        name="Release manager",
        instructions="You deploy services when asked. Deploy with the deploy tool.",
        tools=[deploy],
        model=model,
    )


@dataclass
class Outcome:
    """How a run ended: the agent's final answer, and what was deployed."""

    output: str
    deployed: list[str]


async def run(client: HitlClient, to: str, *, model: str | Model | None = None) -> Outcome:
    """Run the agent; ask `to` to approve each call that needs approval, then resume the run
    approved or rejected, until its final answer. `model`: without one, ScriptedModel when
    OPENAI_API_KEY is unset, else the SDK's default OpenAI model."""
    if model is None and not os.environ.get("OPENAI_API_KEY"):
        model = ScriptedModel()
    agent = build_agent(model)
    # The SDK's tracing uploads to OpenAI: off with the local model, so nothing leaves.
    config = RunConfig(tracing_disabled=isinstance(model, ScriptedModel))
    release = Release()
    run_id = uuid.uuid4().hex  # the requests' idempotency keys: asked again, found again
    result = await Runner.run(agent, PROMPT, context=release, run_config=config)
    while result.interruptions:
        state = await approve_interruptions(result, client, to=to, key=f"openai-agents:{run_id}")
        # The state (approvals and rejections recorded in it) is the next run's input.
        result = await Runner.run(agent, state, run_config=config)
    return Outcome(str(result.final_output), release.deployed)


class ScriptedModel(Model):
    """A local, scripted stand-in for an LLM (no network): asked first, it calls
    `deploy(service="payments", version="v2")`; asked again with the call's result, it
    answers with that result, whether the deploy ran or was rejected."""

    CALL_ID = "call_deploy_1"

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
        result = _tool_output(input, self.CALL_ID)
        if result is None:
            arguments = json.dumps({"service": "payments", "version": "v2"})
            call = ResponseFunctionToolCall(
                id=self.CALL_ID, call_id=self.CALL_ID, type="function_call", name="deploy",
                arguments=arguments,
            )  # fmt: skip
            return ModelResponse(output=[call], usage=Usage(), response_id=None)
        text = ResponseOutputText(type="output_text", text=f"deploy: {result}", annotations=[])
        message = ResponseOutputMessage(
            id="msg_1", type="message", role="assistant", status="completed", content=[text]
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    async def stream_response(
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
        """Streamed (Runner.run_streamed), the same answer as one completed response."""
        answer = await self.get_response(
            system_instructions, input, model_settings, tools, output_schema, handoffs,
            tracing, previous_response_id=previous_response_id,
            conversation_id=conversation_id, prompt=prompt,
        )  # fmt: skip
        response = Response(
            id="scripted-response", created_at=0, model="scripted", object="response",
            output=answer.output, tool_choice="none", tools=[], parallel_tool_calls=False,
            status="completed",
        )  # fmt: skip
        yield ResponseCompletedEvent(type="response.completed", response=response,
                                     sequence_number=0)  # fmt: skip


def _tool_output(items: str | list[TResponseInputItem], call_id: str) -> str | None:
    """The output the model was given for tool call `call_id`, if any yet."""
    for item in [] if isinstance(items, str) else items:
        found: dict[str, Any] = dict(item)
        if found.get("type") == "function_call_output" and found.get("call_id") == call_id:
            return str(found.get("output"))
    return None


async def main() -> None:
    async with HitlClient(os.environ["HITL_URL"], os.environ["HITL_TOKEN"]) as client:
        outcome = await run(client, os.environ["HITL_TO"])
    print(outcome.output)


if __name__ == "__main__":
    asyncio.run(main())
