"""A LangGraph graph that pauses for a person: its `review` node calls `interrupt()` with an
Agent Inbox request, the bridge asks the person (in Slack or Teams), and the graph resumes
with their decision.

    pip install ./clients/python 'langgraph>=1.0'   # from the repository's root
    HITL_URL=http://localhost:3000 HITL_TOKEN=hitl_... HITL_TO=slack:U0123ABCD \\
        python examples/langgraph/graph.py

The graph drafts a release note and asks to publish it: the person approves it, edits it, or
declines with a reason, and the graph publishes the note (as edited) or records why not. Its
nodes are plain Python: no model, no API key.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from typing import Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import interrupt

from hitl_client import HitlClient
from hitl_client.frameworks.langchain import HumanInterrupt, HumanResponse, resume

ACTION = "publish_release_note"


class ReleaseNote(TypedDict, total=False):
    """The graph's state."""

    version: str
    draft: str
    note: str  # what was published
    declined: str  # or why it was not


ReleaseGraph = CompiledStateGraph[ReleaseNote, None, ReleaseNote, ReleaseNote]


def draft(state: ReleaseNote) -> ReleaseNote:
    return {"draft": f"Payments {state['version']}: payouts settle in one day instead of two."}


def review(state: ReleaseNote) -> ReleaseNote:
    # Agent Inbox's request: the action, what the person may do with it. The first time
    # through, interrupt() stops the graph and surfaces the list; when the graph is resumed,
    # the node runs again and interrupt() returns the person's responses, one per request.
    asked = HumanInterrupt(
        action_request={"action": ACTION, "args": {"note": state["draft"]}},
        config={"allow_accept": True, "allow_edit": True, "allow_respond": True,
                "allow_ignore": False},
        description="Publish this release note?",
    )  # fmt: skip
    response: HumanResponse = interrupt([asked])[0]
    return decided(state["draft"], response)


def decided(draft: str, response: HumanResponse) -> ReleaseNote:
    """accept: the draft as it is; edit: the note as the person wrote it; response: their
    reason for not publishing it."""
    args: Any = response["args"]
    if response["type"] == "accept":
        return {"note": draft}
    if response["type"] == "edit":
        return {"note": str(args["args"]["note"])}
    return {"declined": str(args)}


def build_graph(checkpointer: InMemorySaver | None = None) -> ReleaseGraph:
    """draft → review (asks a person, and keeps the note to publish or why not). Interrupts
    need a checkpointer: the paused graph's state is kept there until it is resumed
    (InMemorySaver here; a database one to survive a restart)."""
    builder = StateGraph(ReleaseNote)
    builder.add_node("draft", draft)
    builder.add_node("review", review)
    builder.add_edge(START, "draft")
    builder.add_edge("draft", "review")
    builder.add_edge("review", END)
    return builder.compile(checkpointer=checkpointer or InMemorySaver())


async def run(
    client: HitlClient,
    to: str,
    *,
    version: str = "v2",
    graph: ReleaseGraph | None = None,
    thread_id: str | None = None,
    timeout_seconds: float | None = None,
) -> ReleaseNote:
    """Run the graph; at each interrupt ask `to` through the bridge and resume with their
    decision (`resume` of hitl_client.frameworks.langchain); return the final state. A decline
    is a decision (`declined`, with the reason); a request that expires or is withdrawn
    raises the client's error, the graph then paused at its checkpoint under `thread_id`.
    `timeout_seconds`: how long the person has (the bridge's default without it)."""
    graph = graph or build_graph()
    thread_id = thread_id or uuid.uuid4().hex
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    result = await graph.ainvoke({"version": version}, config, version="v2")
    while result.interrupts:
        # The thread's id keys the requests: asked again after a crash, the same ones.
        command = await resume(result.interrupts, client, to=to, key=f"langgraph:{thread_id}",
                               timeout_seconds=timeout_seconds)  # fmt: skip
        result = await graph.ainvoke(command, config, version="v2")
    return result.value


async def main() -> None:
    async with HitlClient(os.environ["HITL_URL"], os.environ["HITL_TOKEN"]) as client:
        final = await run(client, os.environ["HITL_TO"])
    print(final["note"] if "note" in final else f"Not published: {final['declined']}")


if __name__ == "__main__":
    asyncio.run(main())
