"""A LangChain agent (`create_agent`) whose tool calls wait for a person: LangChain's
`HumanInTheLoopMiddleware` pauses the agent before `deploy` and `notify` run, and the bridge
asks the person in Slack or Teams.

    pip install ./clients/python 'langchain>=1.0'   # from the repository's root
    HITL_URL=http://localhost:3000 HITL_TOKEN=hitl_... HITL_TO=slack:U0123ABCD \\
        python examples/langchain_agent/agent.py

The middleware stops the agent with one interrupt holding every gated call of the model's
turn; `resume` (hitl_client.frameworks.langchain) asks the person about all of them at once
and returns the `Command` that resumes the agent with their decisions: approved calls run,
edited ones run as edited, declined ones do not and the model reads why.

The model: `LANGCHAIN_MODEL` (a name `create_agent` reads, say `anthropic:claude-sonnet-4-5`,
with its provider's package and key) when set; otherwise `ScriptedModel` below, a local
stand-in that asks for both tools at once and then reports their results, so the example
runs without a key and without any network but the bridge's.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolCall, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from hitl_client import HitlClient
from hitl_client.frameworks.langchain import resume

PROMPT = "Deploy payments v2 to production and tell #releases."


@tool
def deploy(service: str, version: str) -> str:
    """Deploy a version of a service to production."""
    return f"{service} {version} is live in production"


@tool
def notify(channel: str, message: str) -> str:
    """Post a message to a chat channel."""
    return f"posted to {channel}: {message}"


def build_agent(model: BaseChatModel | str) -> Any:
    """The agent, with a person's review before each call of `deploy` (approve, edit or
    reject it) and of `notify` (approve or reject only). The middleware's interrupts need a
    checkpointer: InMemorySaver here, a database one to survive a restart."""
    review = HumanInTheLoopMiddleware(
        interrupt_on={"deploy": True, "notify": {"allowed_decisions": ["approve", "reject"]}}
    )
    return create_agent(model, tools=[deploy, notify], middleware=[review],
                        checkpointer=InMemorySaver())  # fmt: skip


async def run(client: HitlClient, to: str, *, model: BaseChatModel | str | None = None) -> str:
    """Run the agent; at each pause ask `to` through the bridge and resume with their
    decisions; return the agent's final answer."""
    agent = build_agent(model or os.environ.get("LANGCHAIN_MODEL") or ScriptedModel())
    thread_id = uuid.uuid4().hex
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    result = await agent.ainvoke({"messages": [HumanMessage(PROMPT)]}, config, version="v2")
    while result.interrupts:
        # The thread's id keys the requests: asked again after a crash, the same ones.
        command = await resume(result.interrupts, client, to=to, key=f"langchain:{thread_id}")
        result = await agent.ainvoke(command, config, version="v2")
    return str(result.value["messages"][-1].content)


class ScriptedModel(BaseChatModel):
    """A local, scripted stand-in for an LLM (no network): asked first, it calls `deploy`
    and `notify` in one turn; given their results, it answers with each tool's, one a line."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedModel:
        return self  # the script names its tools itself

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        results = [m for m in messages if isinstance(m, ToolMessage)]
        if results:
            said = AIMessage("\n".join(f"{m.name}: {_last_line(m.content)}" for m in results))
        else:
            said = AIMessage("", tool_calls=[
                ToolCall(name="deploy", args={"service": "payments", "version": "v2"},
                         id="call_deploy"),
                ToolCall(name="notify", args={"channel": "#releases",
                                              "message": "payments v2 is out"}, id="call_notify"),
            ])  # fmt: skip
        return ChatResult(generations=[ChatGeneration(message=said)])

    @property
    def _llm_type(self) -> str:
        return "scripted"


def _last_line(content: Any) -> str:
    """A tool's result (its last line: an edited call's result follows the middleware's note)."""
    return str(content).splitlines()[-1] if str(content) else ""


async def main() -> None:
    async with HitlClient(os.environ["HITL_URL"], os.environ["HITL_TOKEN"]) as client:
        print(await run(client, os.environ["HITL_TO"]))


if __name__ == "__main__":
    asyncio.run(main())
