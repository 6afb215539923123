"""hitl_client.frameworks.langchain with the real LangChain agent (`create_agent` with
`HumanInTheLoopMiddleware`, on a scripted chat model) and a real LangGraph graph (Agent
Inbox's `HumanInterrupt`), asked through the real bridge and answered in (fake) Slack."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from typing import Any, TypedDict, get_type_hints

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware, InterruptOnConfig
from langchain.agents.middleware import human_in_the_loop as middleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolCall, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from hitl_client import HitlClient, ToolCallReview
from hitl_client.frameworks import langchain as adapter
from hitl_client.frameworks.errors import DecisionNotAllowed, UnknownInterrupt
from tests.examples.bridge import TO, Answer, Asked, Decline, Edit, bridge

WITHIN = 20.0  # seconds a run may take here: a bound on a hang, not a speed requirement

ran: list[str] = []  # what the tools did, in order (each test clears it)


@tool
def deploy(service: str, replicas: int) -> str:
    """Deploy a service with a number of replicas."""
    ran.append(f"deploy {service} x{replicas}")
    return f"{service} runs {replicas} replicas"


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    ran.append(f"delete {path}")
    return f"{path} deleted"


@tool
def ask_user(question: str) -> str:
    """Ask the user (the person answers in the tool's place)."""
    raise AssertionError("a respond decision never runs the tool")


class ScriptedModel(GenericFakeChatModel):
    """A chat model that says what it is scripted to (no network); tools bound are ignored,
    as the script already names them."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedModel:
        return self


def calls(*made: tuple[str, dict[str, Any]]) -> AIMessage:
    return AIMessage("", tool_calls=[ToolCall(name=n, args=a, id=f"call_{i}")
                                     for i, (n, a) in enumerate(made)])  # fmt: skip


def agent(
    turn: AIMessage, interrupt_on: dict[str, bool | InterruptOnConfig], mode: Any = "batched"
) -> Any:
    ran.clear()
    model = ScriptedModel(messages=iter([turn, AIMessage("done")]))
    gate = HumanInTheLoopMiddleware(interrupt_on=interrupt_on, interrupt_mode=mode)
    return create_agent(model, tools=[deploy, delete_file, ask_user], middleware=[gate],
                        checkpointer=InMemorySaver())  # fmt: skip


async def run(graph: Any, hitl: HitlClient, inputs: Any) -> tuple[list[BaseMessage], int]:
    """Run to the end, every interrupt resumed through the adapter: (messages, resumes)."""
    config: RunnableConfig = {"configurable": {"thread_id": uuid.uuid4().hex}}
    result = await graph.ainvoke(inputs, config, version="v2")
    resumes = 0
    while result.interrupts:
        command = await adapter.resume(result.interrupts, hitl, to=TO)
        result = await graph.ainvoke(command, config, version="v2")
        resumes += 1
    return result.value["messages"], resumes


def tool_results(messages: Sequence[BaseMessage]) -> dict[str, str]:
    return {str(m.name): str(m.content) for m in messages if isinstance(m, ToolMessage)}


PROMPT = {"messages": [{"role": "user", "content": "Scale the api, drop the old report."}]}
TWO_CALLS = calls(("deploy", {"service": "api", "replicas": 1}),
                  ("delete_file", {"path": "/srv/report.csv"}))  # fmt: skip


def by_tool(asked: Asked) -> Answer | Decline | Edit:
    """Edits deploy to 3 replicas, declines the delete, approves anything else."""
    if asked.arguments["tool"] == "deploy":
        return Edit({"replicas": 3})
    if asked.arguments["tool"] == "delete_file":
        return Decline("keep the report until Friday")
    return Answer({"approved": True})


async def test_one_interrupt_s_calls_are_asked_at_once_and_decided_each() -> None:
    gated = agent(TWO_CALLS, {"deploy": True, "delete_file": True})
    async with bridge(by_tool, at_once=2) as hitl, HitlClient(hitl.url, hitl.token) as client:
        messages, resumes = await asyncio.wait_for(run(gated, client, PROMPT), WITHIN)
    assert resumes == 1
    assert sorted((a.tool, a.arguments["tool"]) for a in hitl.asked) == [
        ("approveToolCall", "delete_file"), ("approveToolCall", "deploy")
    ]  # fmt: skip
    assert ran == ["deploy api x3"]  # as edited; the delete never ran
    results = tool_results(messages)
    assert results["deploy"].endswith("api runs 3 replicas")
    assert results["delete_file"] == (
        "User rejected the tool call for `delete_file` with reason: keep the report until Friday"
    )


async def test_an_approved_call_runs_as_the_model_asked() -> None:
    gated = agent(calls(("deploy", {"service": "api", "replicas": 2})), {"deploy": True})
    approve = Answer({"approved": True})
    async with bridge(lambda a: approve) as hitl, HitlClient(hitl.url, hitl.token) as client:
        messages, _ = await asyncio.wait_for(run(gated, client, PROMPT), WITHIN)
    [asked] = hitl.asked
    assert asked.arguments["arguments"] == {"service": "api", "replicas": 2}
    assert ran == ["deploy api x2"]
    assert tool_results(messages) == {"deploy": "api runs 2 replicas"}


async def test_per_call_interrupts_are_asked_at_once_within_each_tool_s_decisions() -> None:
    only_yes_or_no: InterruptOnConfig = {"allowed_decisions": ["approve", "reject"]}
    gated = agent(TWO_CALLS, {"deploy": True, "delete_file": only_yes_or_no}, "per_call")
    async with bridge(by_tool, at_once=2) as hitl, HitlClient(hitl.url, hitl.token) as client:
        messages, resumes = await asyncio.wait_for(run(gated, client, PROMPT), WITHIN)
    assert (resumes, len(hitl.asked)) == (1, 2)  # two interrupts, one resume
    assert ran == ["deploy api x3"]
    assert "with reason: keep the report until Friday" in tool_results(messages)["delete_file"]


async def test_a_tool_that_only_takes_a_reply_is_asked_as_a_question() -> None:
    reply: InterruptOnConfig = {"allowed_decisions": ["respond"], "description": "Which region?"}
    gated = agent(calls(("ask_user", {"question": "Which region?"})), {"ask_user": reply})
    answer = Answer({"answer": "eu-west-1"})
    async with bridge(lambda a: answer) as hitl, HitlClient(hitl.url, hitl.token) as client:
        messages, _ = await asyncio.wait_for(run(gated, client, PROMPT), WITHIN)
    assert [(a.tool, a.arguments) for a in hitl.asked] == [
        ("AskUserQuestion", {"question": "Which region?"})
    ]
    assert tool_results(messages) == {"ask_user": "eu-west-1"}


async def test_a_decision_the_tool_does_not_allow_leaves_the_agent_paused() -> None:
    must_run: InterruptOnConfig = {"allowed_decisions": ["approve"]}
    gated = agent(calls(("deploy", {"service": "api", "replicas": 1})), {"deploy": must_run})
    config: RunnableConfig = {"configurable": {"thread_id": "paused"}}
    decline = Decline("not today")
    async with bridge(lambda a: decline) as hitl, HitlClient(hitl.url, hitl.token) as client:
        result = await gated.ainvoke(PROMPT, config, version="v2")
        with pytest.raises(DecisionNotAllowed, match="declined"):
            await asyncio.wait_for(adapter.resume(result.interrupts, client, to=TO), WITHIN)
    state = await gated.aget_state(config)
    assert len(state.interrupts) == 1 and ran == []


# -- Agent Inbox ----------------------------------------------------------------------------


class Release(TypedDict, total=False):
    responses: list[dict[str, Any]]


def inbox(action: str, args: dict[str, Any], **allow: bool) -> dict[str, Any]:
    config = {f"allow_{k}": allow.get(k, False) for k in ("ignore", "respond", "edit", "accept")}
    return {"action_request": {"action": action, "args": args}, "config": config,
            "description": f"Review {action}"}  # fmt: skip


def review(state: Release) -> Release:
    """A node asking Agent Inbox's way: interrupt([HumanInterrupt, ...]) -> [HumanResponse]."""
    asked = [
        inbox("deploy", {"service": "api", "replicas": 1}, accept=True, edit=True, respond=True),
        inbox("delete_file", {"path": "/srv/report.csv"}, accept=True, ignore=True),
        inbox("ask_user", {"question": "Which region?"}, respond=True),
    ]
    return {"responses": interrupt(asked)}


def inbox_person(asked: Asked) -> Answer | Decline | Edit:
    if asked.tool == "AskUserQuestion":
        return Answer({"answer": "eu-west-1"})
    return by_tool(asked)


async def test_agent_inbox_interrupts_get_human_responses() -> None:
    builder = StateGraph(Release)
    builder.add_node("review", review)
    builder.add_edge(START, "review")
    builder.add_edge("review", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": "inbox"}}
    async with bridge(inbox_person, at_once=3) as hitl, HitlClient(hitl.url, hitl.token) as client:
        paused = await graph.ainvoke({}, config, version="v2")
        command = await asyncio.wait_for(
            adapter.resume(paused.interrupts, client, to=TO, key="inbox"), WITHIN
        )
        done = await graph.ainvoke(command, config, version="v2")
    assert sorted(a.tool for a in hitl.asked) == ["AskUserQuestion", *["approveToolCall"] * 2]
    assert done.value["responses"] == [
        {"type": "edit", "args": {"action": "deploy", "args": {"service": "api", "replicas": 3}}},
        {"type": "ignore", "args": None},  # declined, and the request allows no response
        {"type": "response", "args": "eu-west-1"},
    ]


async def test_an_interrupt_of_the_graph_s_own_is_not_guessed_at() -> None:
    def ask(state: Release) -> Release:
        return {"responses": interrupt({"question": "Which region?"})}

    graph = StateGraph(Release).add_node("ask", ask).add_edge(START, "ask")
    compiled = graph.compile(checkpointer=InMemorySaver())
    paused = await compiled.ainvoke({}, {"configurable": {"thread_id": "own"}}, version="v2")
    async with HitlClient("http://127.0.0.1:9", "hitl_unused") as client:
        with pytest.raises(UnknownInterrupt):
            await adapter.resume(paused.interrupts, client, to=TO)


# -- the mapping, within each action's allowed decisions -------------------------------------

ACTION = adapter.ActionRequest(name="deploy", args={"replicas": 1})
APPROVED = ToolCallReview(approved=True, arguments={"replicas": 1})
EDITED = ToolCallReview(approved=True, arguments={"replicas": 3}, edited=True)
DECLINED = ToolCallReview(approved=False, arguments={"replicas": 1}, reason="freeze")


def edit(replicas: int) -> dict[str, Any]:
    return {"type": "edit", "edited_action": {"name": "deploy", "args": {"replicas": replicas}}}


@pytest.mark.parametrize(
    ("review", "allowed", "decided"),
    [
        (APPROVED, ["approve", "reject"], {"type": "approve"}),
        (APPROVED, ["edit"], edit(1)),
        (EDITED, ["approve", "edit"], edit(3)),
        (EDITED, ["approve", "reject"], {"type": "reject", "message":
                                         'approved only with these arguments: {"replicas": 3}'}),
        (DECLINED, ["approve", "reject"], {"type": "reject", "message": "freeze"}),
        (ToolCallReview(approved=False, arguments={}), ["reject"], {"type": "reject"}),
        (DECLINED, ["approve", "respond"], {"type": "respond",
                                            "message": "A person declined: freeze"}),
    ],
)  # fmt: skip
def test_a_review_becomes_an_allowed_decision(
    review: ToolCallReview, allowed: list[str], decided: dict[str, Any]
) -> None:
    assert adapter.decision(review, ACTION, allowed) == decided


@pytest.mark.parametrize(("review", "allowed"), [(DECLINED, ["approve"]), (EDITED, ["approve"])])
def test_a_review_no_decision_allows_is_refused(review: ToolCallReview, allowed: list[str]) -> None:
    with pytest.raises(DecisionNotAllowed):
        adapter.decision(review, ACTION, allowed)


async def test_per_call_interrupts_tell_their_allowed_decisions() -> None:
    yes_or_no: InterruptOnConfig = {"allowed_decisions": ["approve", "reject"]}
    reply: InterruptOnConfig = {"allowed_decisions": ["respond"]}
    turn = calls(("deploy", {"service": "api", "replicas": 1}), ("ask_user", {"question": "?"}))
    gated = agent(turn, {"deploy": yes_or_no, "ask_user": reply}, "per_call")
    config: RunnableConfig = {"configurable": {"thread_id": "schemas"}}
    paused = await gated.ainvoke(PROMPT, config, version="v2")
    allowed = {i.value["name"]: adapter.allowed_in(i.response_schema) for i in paused.interrupts}
    assert allowed == {"deploy": ["approve", "reject"], "ask_user": ["respond"]}
    assert adapter.allowed_in(None) == ["approve", "edit", "reject", "respond"]


# -- the shapes, held to LangChain's ---------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["Action", "ActionRequest", "ReviewConfig", "HITLRequest", "ToolApprovalRequest",
     "ApproveDecision", "EditDecision", "RejectDecision", "RespondDecision", "HITLResponse"],
)  # fmt: skip
def test_the_middleware_s_shapes_are_langchain_s(name: str) -> None:
    ours, theirs = getattr(adapter, name), getattr(middleware, name)
    assert set(get_type_hints(ours)) == set(get_type_hints(theirs))
    assert ours.__required_keys__ == theirs.__required_keys__
