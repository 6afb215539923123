"""LangGraph's interrupts answered by people through the bridge: LangChain v1's
`HumanInTheLoopMiddleware` (its batched `HITLRequest` and its per-call `ToolApprovalRequest`)
and Agent Inbox's `HumanInterrupt`.

    from hitl_client.frameworks.langchain import resume

    result = await agent.ainvoke(inputs, config, version="v2")
    while result.interrupts:
        command = await resume(result.interrupts, hitl, to="slack:U0123ABCD")
        result = await agent.ainvoke(command, config, version="v2")

Each tool call is shown as the bridge's approval gate (Approve / Edit / Decline; a call
whose tool allows only a reply is asked as a question) and every call of every interrupt is
asked at once. The decisions come back in the framework's terms, within what each action
allows (`allowed_decisions`, or Agent Inbox's `allow_*`):

| the person       | middleware                        | Agent Inbox                         |
| ---------------- | --------------------------------- | ----------------------------------- |
| Approve          | approve (edit, as asked, if only  | accept (edit, as asked, if only     |
|                  | edits are allowed)                | edits are allowed)                  |
| Edit             | edit, with the edited arguments   | edit, with the edited arguments     |
|                  | (reject naming them if edits are  | (response naming them if edits are  |
|                  | not allowed)                      | not allowed)                        |
| Decline          | reject, with the reason (respond  | response, with the reason (ignore   |
|                  | if only respond is allowed)       | if responses are not allowed)       |
| answers (asked)  | respond, with the answer          | response, with the answer           |

A decision no mapping allows raises DecisionNotAllowed; an expiry, a withdrawal or an
undeliverable request raise the client's error. Either way the graph stays paused at its
checkpoint, to be resumed later. Needs `langgraph` (the `langgraph` or `langchain` extra);
the middleware itself is `langchain`'s. The shapes read and written are LangChain's own,
mirrored here so that LangGraph alone is enough (tests/clients/python/frameworks/ holds them
to LangChain's).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, NotRequired, TypeAlias, cast

from langgraph.types import Command, Interrupt
from pydantic import TypeAdapter, ValidationError
from typing_extensions import TypedDict  # pydantic reads typing's only from Python 3.12

from hitl_client.client import HitlClient
from hitl_client.errors import RequestDeclined
from hitl_client.frameworks.errors import DecisionNotAllowed, UnknownInterrupt
from hitl_client.frameworks.together import together
from hitl_client.models import ToolCallReview

__all__ = [
    "Decision",
    "HITLRequest",
    "HITLResponse",
    "HumanInterrupt",
    "HumanResponse",
    "ToolApprovalRequest",
    "answer",
    "resume",
]

DecisionType = Literal["approve", "edit", "reject", "respond"]
EVERY_DECISION: tuple[DecisionType, ...] = ("approve", "edit", "reject", "respond")

# -- HumanInTheLoopMiddleware's shapes (langchain.agents.middleware.human_in_the_loop) --------


class Action(TypedDict):
    name: str
    args: dict[str, Any]


class ActionRequest(TypedDict):
    name: str
    args: dict[str, Any]
    description: NotRequired[str]


class ReviewConfig(TypedDict):
    action_name: str
    allowed_decisions: list[DecisionType]
    args_schema: NotRequired[dict[str, Any]]


class HITLRequest(TypedDict):
    """The batched middleware's interrupt: every gated call of one model turn."""

    action_requests: list[ActionRequest]
    review_configs: list[ReviewConfig]


class ToolApprovalRequest(TypedDict):
    """The per-call middleware's interrupt (`interrupt_mode="per_call"`): one gated call,
    its allowed decisions in the interrupt's `response_schema`."""

    type: Literal["tool_approval"]
    tool_call_id: str
    name: str
    args: dict[str, Any]
    description: str


class ApproveDecision(TypedDict):
    type: Literal["approve"]


class EditDecision(TypedDict):
    type: Literal["edit"]
    edited_action: Action


class RejectDecision(TypedDict):
    type: Literal["reject"]
    message: NotRequired[str]


class RespondDecision(TypedDict):
    type: Literal["respond"]
    message: str


Decision: TypeAlias = ApproveDecision | EditDecision | RejectDecision | RespondDecision


class HITLResponse(TypedDict):
    """What resumes a `HITLRequest`: a decision for each action, in the same order."""

    decisions: list[Decision]


# -- Agent Inbox's shapes (langgraph.prebuilt.interrupt, deprecated there since LangGraph 1) --


class InboxAction(TypedDict):
    action: str
    args: dict[str, Any]


class HumanInterruptConfig(TypedDict):
    allow_ignore: bool
    allow_respond: bool
    allow_edit: bool
    allow_accept: bool


class HumanInterrupt(TypedDict):
    """One of an Agent Inbox interrupt's requests (its value is a list of them)."""

    action_request: InboxAction
    config: HumanInterruptConfig
    description: NotRequired[str | None]


class HumanResponse(TypedDict):
    type: Literal["accept", "ignore", "response", "edit"]
    args: str | InboxAction | None


_HITL_REQUEST = TypeAdapter(HITLRequest)
_TOOL_APPROVAL = TypeAdapter(ToolApprovalRequest)
_INBOX = TypeAdapter(list[HumanInterrupt])


# -- asking ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Asker:
    """Who is asked, and how each request is keyed: with a `key` (the thread's id), each
    request's idempotency key is `key:interrupt id:position`, so asking again after a crash
    finds the requests already made rather than asking twice."""

    hitl: HitlClient
    to: str
    key: str | None
    timeout_seconds: float | None

    def keyed(self, *parts: str) -> Asker:
        key = None if self.key is None else ":".join((self.key, *parts))
        return Asker(self.hitl, self.to, key, self.timeout_seconds)

    async def review(self, name: str, args: dict[str, Any]) -> ToolCallReview:
        return await self.hitl.review_tool_call(
            name, args, self.to, timeout_seconds=self.timeout_seconds, idempotency_key=self.key
        )

    async def question(
        self, description: str | None, name: str, args: dict[str, Any]
    ) -> tuple[str | None, str | None]:
        """A call asked as a question (its description, or the call itself): (the answer,
        None), or (None, the reason) when the person declined."""
        text = description or f"{name} {_json(args)}"
        try:
            said = await self.hitl.ask(text[:4000], self.to, timeout_seconds=self.timeout_seconds,
                                       idempotency_key=self.key)  # fmt: skip
        except RequestDeclined as declined:
            return None, declined.reason
        return said, None


async def resume(
    interrupts: Sequence[Interrupt],
    hitl: HitlClient,
    *,
    to: str,
    key: str | None = None,
    timeout_seconds: float | None = None,
) -> Command[Any]:
    """The `Command` that resumes a graph paused at `interrupts` (`result.interrupts`), each
    answered by `to` (all asked at once): `Command(resume={interrupt id: its value})`, which
    LangGraph takes for one pending interrupt as for several."""
    asker = Asker(hitl, to, key, timeout_seconds)
    values = await together(answer(i, asker.keyed(i.id)) for i in interrupts)
    return Command(resume={i.id: value for i, value in zip(interrupts, values, strict=True)})


async def answer(interrupt: Interrupt, asker: Asker) -> Any:
    """One interrupt's resume value: a `HITLResponse`, a `Decision`, or a list of
    `HumanResponse`; UnknownInterrupt for a value of another kind."""
    value = interrupt.value
    try:
        if isinstance(value, dict) and "action_requests" in value:
            return await _answer_batch(_HITL_REQUEST.validate_python(value), asker)
        if isinstance(value, dict) and value.get("type") == "tool_approval":
            call = _TOOL_APPROVAL.validate_python(value)
            action = ActionRequest(name=call["name"], args=call["args"],
                                   description=call["description"])  # fmt: skip
            return await _decide(action, allowed_in(interrupt.response_schema), asker)
        if isinstance(value, list) and value and all(_inbox_like(v) for v in value):
            requests = _INBOX.validate_python(value)
            return await together(_respond(r, asker.keyed(str(n))) for n, r in enumerate(requests))
        if _inbox_like(value):  # one HumanInterrupt, not in a list
            return await _respond(_INBOX.validate_python([value])[0], asker)
    except ValidationError as err:
        raise UnknownInterrupt(f"interrupt {interrupt.id} is not well formed: {err}") from err
    raise UnknownInterrupt(
        f"interrupt {interrupt.id} is none of HITLRequest, ToolApprovalRequest or HumanInterrupt"
    )


def _inbox_like(value: Any) -> bool:
    return isinstance(value, dict) and "action_request" in value and "config" in value


async def _answer_batch(request: HITLRequest, asker: Asker) -> HITLResponse:
    actions = request["action_requests"]
    decisions = await together(
        _decide(a, _allowed(request, n), asker.keyed(str(n))) for n, a in enumerate(actions)
    )
    return HITLResponse(decisions=decisions)


def _allowed(request: HITLRequest, n: int) -> list[DecisionType]:
    """The decisions action `n` allows: its own config (the middleware writes one per action,
    in order), else its tool's, else all."""
    name, configs = request["action_requests"][n]["name"], request["review_configs"]
    if len(configs) == len(request["action_requests"]) and configs[n]["action_name"] == name:
        return configs[n]["allowed_decisions"]
    named = [c["allowed_decisions"] for c in configs if c["action_name"] == name]
    return named[0] if named else list(EVERY_DECISION)


async def _decide(action: ActionRequest, allowed: Sequence[str], asker: Asker) -> Decision:
    """One action's decision: reviewed at the gate where it may run, asked as a question
    where its tool only takes a reply."""
    if "approve" in allowed or "edit" in allowed:
        return decision(await asker.review(action["name"], action["args"]), action, allowed)
    if "respond" in allowed:
        said, reason = await asker.question(
            action.get("description"), action["name"], action["args"]
        )
        if said is not None:
            return RespondDecision(type="respond", message=said)
        if "reject" in allowed:
            return _reject(reason)
        raise DecisionNotAllowed(f"{action['name']}: declined, and reject is not allowed")
    raise DecisionNotAllowed(f"{action['name']} allows {list(allowed)}: nothing to ask")


def decision(review: ToolCallReview, action: ActionRequest, allowed: Sequence[str]) -> Decision:
    """The middleware's decision for a person's review of `action`, within `allowed`."""
    name = action["name"]
    if review.approved and review.edited:
        if "edit" in allowed:
            return EditDecision(type="edit", edited_action=Action(name=name, args=review.arguments))
        if "reject" in allowed:
            return _reject(f"approved only with these arguments: {_json(review.arguments)}")
    elif review.approved:
        if "approve" in allowed:
            return ApproveDecision(type="approve")
        if "edit" in allowed:  # only edits allowed: the call as asked is an edit of nothing
            return EditDecision(type="edit", edited_action=Action(name=name, args=review.arguments))
    else:
        if "reject" in allowed:
            return _reject(review.reason)
        if "respond" in allowed:
            said = f"A person declined: {review.reason}" if review.reason else "A person declined."
            return RespondDecision(type="respond", message=said)
    chose = "edited" if review.edited else "approved" if review.approved else "declined"
    raise DecisionNotAllowed(f"{name}: the person {chose} it; allowed are {list(allowed)}")


def _reject(reason: str | None) -> RejectDecision:
    """A rejection; without a reason the middleware tells the model not to retry the call."""
    if reason:
        return RejectDecision(type="reject", message=reason)
    return RejectDecision(type="reject")


async def _respond(request: HumanInterrupt, asker: Asker) -> HumanResponse:
    action, config = request["action_request"], request["config"]
    if config["allow_accept"] or config["allow_edit"]:
        return inbox_response(await asker.review(action["action"], action["args"]), request)
    if config["allow_respond"]:
        said, reason = await asker.question(
            request.get("description"), action["action"], action["args"]
        )
        if said is not None:
            return HumanResponse(type="response", args=said)
        if config["allow_ignore"]:
            return HumanResponse(type="ignore", args=None)
        raise DecisionNotAllowed(f"{action['action']}: declined ({reason}), and ignore is off")
    raise DecisionNotAllowed(f"{action['action']} allows only to ignore it: nothing to ask")


def inbox_response(review: ToolCallReview, request: HumanInterrupt) -> HumanResponse:
    """Agent Inbox's response for a person's review of `request`, within its config."""
    action, config = request["action_request"], request["config"]
    edited = InboxAction(action=action["action"], args=review.arguments)
    if review.approved and review.edited:
        if config["allow_edit"]:
            return HumanResponse(type="edit", args=edited)
        if config["allow_respond"]:
            said = f"Approved only with these arguments: {_json(review.arguments)}"
            return HumanResponse(type="response", args=said)
    elif review.approved:
        if config["allow_accept"]:
            return HumanResponse(type="accept", args=None)
        if config["allow_edit"]:
            return HumanResponse(type="edit", args=edited)
    else:
        if config["allow_respond"]:
            return HumanResponse(type="response", args=review.reason or "Declined.")
        if config["allow_ignore"]:
            return HumanResponse(type="ignore", args=None)
    chose = "edited" if review.edited else "approved" if review.approved else "declined"
    allows = [k.removeprefix("allow_") for k, v in config.items() if v]
    raise DecisionNotAllowed(f"{action['action']}: the person {chose} it; allowed are {allows}")


def allowed_in(schema: Any) -> list[DecisionType]:
    """The decisions a per-call interrupt's `response_schema` allows (every one without it):
    the discriminator's names of a union, or the `type` of a single decision."""
    if schema is not None and not isinstance(schema, dict):  # a Python type, not surfaced yet
        schema = TypeAdapter(schema).json_schema()
    if not isinstance(schema, dict):
        return list(EVERY_DECISION)
    mapping = (schema.get("discriminator") or {}).get("mapping")
    names = list(mapping) if isinstance(mapping, dict) else []
    const = ((schema.get("properties") or {}).get("type") or {}).get("const")
    names += [const] if isinstance(const, str) else []
    known = [cast(DecisionType, n) for n in names if n in EVERY_DECISION]
    return known or list(EVERY_DECISION)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
