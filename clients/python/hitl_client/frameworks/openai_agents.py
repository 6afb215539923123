"""The OpenAI Agents SDK's tool approvals decided by people through the bridge.

    from hitl_client.frameworks.openai_agents import approve_interruptions

    result = await Runner.run(agent, prompt)
    while result.interruptions:
        state = await approve_interruptions(result, hitl, to="slack:U0123ABCD")
        result = await Runner.run(agent, state)

A tool with `needs_approval` stops the run before it is called, as a `ToolApprovalItem` in
`result.interruptions`. Each is shown as the bridge's approval gate (Approve / Edit /
Decline), all at once, and the person's decision is written into the run's state:

- Approve: `state.approve(item)`; approve and allow here (a grant): `always_approve=True`, so
  the agent's later calls of the tool run unasked for the rest of the run.
- Decline: `state.reject(item, rejection_message=...)`, the model reading the person's reason.
- Edit: the SDK runs a call only as the model made it, so the call is rejected with the
  person's arguments in the message; the model calls again with them, and that call is asked.

An expiry, a withdrawal or an undeliverable request raise the client's error, the state left
undecided. Needs `openai-agents` (the `openai-agents` extra).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agents import RunResult, RunResultStreaming, RunState, ToolApprovalItem

from hitl_client.client import HitlClient
from hitl_client.frameworks.together import together
from hitl_client.models import ToolCallReview

__all__ = ["apply_review", "approve_interruptions", "review_interruptions"]


async def approve_interruptions(
    result: RunResult | RunResultStreaming,
    hitl: HitlClient,
    *,
    to: str,
    key: str | None = None,
    timeout_seconds: float | None = None,
) -> RunState[Any]:
    """The state to resume the run with (`Runner.run(agent, state)`), each of `result`'s
    pending approvals decided by `to`. With a `key` (the run's own id), each request's
    idempotency key is `key:call id`: asking again after a crash finds the request made."""
    state = result.to_state()
    items = list(result.interruptions)
    reviews = await review_interruptions(items, hitl, to=to, key=key,
                                         timeout_seconds=timeout_seconds)  # fmt: skip
    for item, review in zip(items, reviews, strict=True):
        apply_review(state, item, review)
    return state


async def review_interruptions(
    items: Sequence[ToolApprovalItem],
    hitl: HitlClient,
    *,
    to: str,
    key: str | None = None,
    timeout_seconds: float | None = None,
) -> list[ToolCallReview]:
    """Each pending call's review by `to`, all asked at once, in order."""
    return await together(
        hitl.review_tool_call(
            item.name or "tool",
            call_input(item),
            to,
            timeout_seconds=timeout_seconds,
            idempotency_key=None if key is None else f"{key}:{item.call_id or n}",
            allow=f"{item.name or 'this tool'} for the rest of this run",  # always_approve
        )
        for n, item in enumerate(items)
    )


def apply_review(state: RunState[Any], item: ToolApprovalItem, review: ToolCallReview) -> None:
    """Write a person's review of `item` into `state`."""
    if review.approved and not review.edited:
        state.approve(item, always_approve=review.grant)
    elif review.approved:
        arguments = json.dumps(review.arguments, ensure_ascii=False)
        state.reject(item, rejection_message=(
            f"A person approved {item.name} only with these arguments: {arguments}. Call it "
            "again with them to have that call approved."
        ))  # fmt: skip
    else:
        said = f"A person declined: {review.reason}" if review.reason else "A person declined."
        state.reject(item, rejection_message=said)


def call_input(item: ToolApprovalItem) -> dict[str, Any]:
    """The call's arguments as an object: a function tool's JSON, else under `arguments`."""
    raw = item.arguments
    try:
        parsed = json.loads(raw) if raw else {}
    except ValueError:
        parsed = raw
    return parsed if isinstance(parsed, dict) else {"arguments": parsed}
