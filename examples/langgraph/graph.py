"""A LangGraph graph that pauses for a person: its `review` node calls `interrupt()`, the
bridge asks the person (in Slack or Teams), and the graph resumes with `Command(resume=answer)`.

    pip install -e . 'langgraph>=1.0'   # from the repository's root
    HITL_URL=http://localhost:3000 HITL_TOKEN=hitl_... HITL_TO=slack:U0123ABCD \
        python examples/langgraph/graph.py

The graph drafts a release note, asks the person what to change, and writes the final note
with their answer. Its nodes are plain Python: no model, no API key.
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
from langgraph.types import Command, Interrupt, interrupt

from hitl_client import HitlClient


class ReleaseNote(TypedDict, total=False):
    """The graph's state."""

    version: str
    draft: str
    feedback: str  # the person's answer
    note: str


ReleaseGraph = CompiledStateGraph[ReleaseNote, None, ReleaseNote, ReleaseNote]


def draft(state: ReleaseNote) -> ReleaseNote:
    return {"draft": f"Payments {state['version']}: payouts settle in one day instead of two."}


def review(state: ReleaseNote) -> ReleaseNote:
    # The first time through, interrupt() stops the graph and surfaces this value; when the
    # graph is resumed with Command(resume=answer), the node runs again and it returns answer.
    feedback = interrupt(
        {"question": f"Draft release note:\n\n{state['draft']}\n\nWhat should change?"}
    )
    return {"feedback": str(feedback)}


def publish(state: ReleaseNote) -> ReleaseNote:
    return {"note": f"{state['draft']}\n\nReviewed: {state['feedback']}"}


def build_graph(checkpointer: InMemorySaver | None = None) -> ReleaseGraph:
    """draft → review (asks a person) → publish. Interrupts need a checkpointer: the paused
    graph's state is kept there until it is resumed (InMemorySaver here; a database one to
    survive a restart)."""
    builder = StateGraph(ReleaseNote)
    builder.add_node("draft", draft)
    builder.add_node("review", review)
    builder.add_node("publish", publish)
    builder.add_edge(START, "draft")
    builder.add_edge("draft", "review")
    builder.add_edge("review", "publish")
    builder.add_edge("publish", END)
    return builder.compile(checkpointer=checkpointer or InMemorySaver())


async def run(
    client: HitlClient,
    to: str,
    *,
    version: str = "v2",
    graph: ReleaseGraph | None = None,
    thread_id: str | None = None,
) -> ReleaseNote:
    """Run the graph; at each interrupt ask `to` its question through the bridge and resume
    with the answer; return the final state. A question declined or left unanswered raises
    the client's error (RequestDeclined, RequestExpired…): the graph then stays paused at its
    checkpoint, under `thread_id`."""
    graph = graph or build_graph()
    thread_id = thread_id or uuid.uuid4().hex
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    result = await graph.ainvoke({"version": version}, config, version="v2")
    while result.interrupts:
        answers = {i.id: await ask(client, to, thread_id, i) for i in result.interrupts}
        # One interrupt: Command(resume=answer). Several (nodes run in parallel): by their id.
        resume: Any = next(iter(answers.values())) if len(answers) == 1 else answers
        result = await graph.ainvoke(Command(resume=resume), config, version="v2")
    return result.value


async def ask(client: HitlClient, to: str, thread_id: str, pending: Interrupt) -> str:
    """The person's answer to an interrupt's {"question": ...} (or to its value as text)."""
    value = pending.value
    question = value["question"] if isinstance(value, dict) else str(value)
    # An interrupt's id stays the same when its node runs again: as the idempotency key
    # (with the thread), asking again after a crash finds the request already made.
    return await client.ask(question, to, idempotency_key=f"langgraph:{thread_id}:{pending.id}")


async def main() -> None:
    async with HitlClient(os.environ["HITL_URL"], os.environ["HITL_TOKEN"]) as client:
        final = await run(client, os.environ["HITL_TO"])
    print(final["note"])


if __name__ == "__main__":
    asyncio.run(main())
