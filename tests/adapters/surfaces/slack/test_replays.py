"""Replays over real HTTP: the same signed request (headers and body) is processed once.

Slack signs a request for 5 minutes; whoever saw one could send it again within them, and it
would pass the signature check. Each interaction is written down under its signature before it
is acked (bot/durable/inbox.py), so a replay is acked and ignored: no second settle, audit row,
notice or edit, and one line in the log at most every few seconds.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

import pytest

from bot.records import RequestStatus
from tests.adapters.surfaces.slack.conftest import ALICE, CHANNEL, STRANGER, WAIT, Env, has_actions
from tests.adapters.surfaces.slack.test_e2e import answered_by, finish, start_turn
from tests.fakes.slack_signing import view_submission_payload

APPROVAL = {"action": "Deploy v2", "reason": "Release day"}


async def post_again(
    env: Env, payload: dict[str, Any], times: int, stamp: int | None = None
) -> list[tuple[int, str]]:
    """Post one signed request `times` times, at once: the same headers, the same body. Signed
    at `stamp` (now if None): a later replay passes the first's, or a second that has ticked
    over in between makes it another request."""
    stamp = int(time.time()) if stamp is None else stamp

    async def once() -> tuple[int, str]:
        response = await env.post(payload, timestamp=stamp)
        return response.status, await response.text()

    return list(await asyncio.gather(*(once() for _ in range(times))))


async def settle_actions(env: Env, request_id: str) -> list[str]:
    audit = await env.store.list_audit(request_id=request_id)
    return [e.action for e in audit if e.action not in ("request.created", "request.delivered")]


def replay_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "replayed" in r.getMessage()]


async def test_a_replayed_click_is_processed_once(
    env: Env, caplog: pytest.LogCaptureFixture
) -> None:
    thread, message = await start_turn(env, "requestApproval", APPROVAL)
    click = env.click_payload(message, "hitl_approve")
    stamp = int(time.time())

    responses = await post_again(env, click, 3, stamp)

    assert [status for status, _ in responses] == [200, 200, 200]
    result = await finish(env, thread, message, answered_by(ALICE))
    assert json.loads(result["content"]) == {"approved": True}
    record = await env.request_record(message)
    assert record.status is RequestStatus.RESOLVED
    assert await settle_actions(env, record.id) == ["request.resolved"]
    # Processed again, a click on an answered request is told "already answered by…".
    assert (await post_again(env, click, 1, stamp))[0][0] == 200
    await asyncio.sleep(0.2)  # what a replay would have set off
    assert env.slack.ephemerals == []
    assert len(env.slack.calls_to("chat.update")) == 2  # preparing -> executing -> answered
    assert len(env.requests) == 2  # the model was handed the answer once
    assert len(replay_lines(caplog)) == 1  # three replays, one line


async def test_a_replayed_refusal_is_said_and_audited_once(env: Env) -> None:
    _, message = await start_turn(env, "requestApproval", APPROVAL)
    click = env.click_payload(message, "hitl_approve", user=STRANGER)

    assert [status for status, _ in await post_again(env, click, 2)] == [200, 200]

    (note,) = await env.slack.wait_for(lambda: env.slack.ephemerals, WAIT)
    assert note["user"] == STRANGER and note["text"].startswith(f"This request is for <@{ALICE}>")
    record = await env.request_record(message)
    await asyncio.sleep(0.2)
    assert len(env.slack.ephemerals) == 1
    audit = await env.store.list_audit(request_id=record.id)
    assert [e.actor_id for e in audit if e.action == "answer_refused"] == [STRANGER]
    assert (await env.request_record(message)).status is RequestStatus.PENDING


async def test_a_replayed_modal_submission_is_ignored_silently(env: Env) -> None:
    thread, message = await start_turn(env, "requestApproval", APPROVAL)
    await env.click(message, "hitl_decline")
    view = await env.modal()
    submission = view_submission_payload(
        view=view, user_id=ALICE, values={"reason": {"reason": "Not on a Friday"}}
    )

    stamp = int(time.time())
    first = await post_again(env, submission, 1, stamp)
    again = await post_again(env, submission, 2, stamp)

    # The first closes the modal; processed again, a replay would turn it into a notice that
    # the request was already declined. Ignored, it is a bare ack.
    assert first == [(200, "")]
    assert again == [(200, ""), (200, "")]
    result = await finish(env, thread, message, f"Declined by <@{ALICE}>")
    assert result["is_error"] is True
    record = await env.request_record(message)
    assert record.status is RequestStatus.REJECTED
    assert await settle_actions(env, record.id) == ["request.rejected"]
    assert env.slack.ephemerals == []
    assert not has_actions(env.slack.message(CHANNEL, message["ts"]))


async def test_a_new_click_with_the_same_payload_is_not_a_replay(
    env: Env, caplog: pytest.LogCaptureFixture
) -> None:
    """Signed at another time, the same payload is another request: handled (here, told
    that the request is already answered)."""
    caplog.set_level(logging.WARNING)
    thread, message = await start_turn(env, "requestApproval", APPROVAL)
    click = env.click_payload(message, "hitl_approve")
    assert (await env.post(click, timestamp=int(time.time()) - 1)).status == 200
    await finish(env, thread, message, answered_by(ALICE))

    assert (await env.post(click, timestamp=int(time.time()))).status == 200

    (note,) = await env.slack.wait_for(lambda: env.slack.ephemerals, WAIT)
    assert note["text"].startswith(f"This request was already answered by <@{ALICE}>")
    assert replay_lines(caplog) == []
