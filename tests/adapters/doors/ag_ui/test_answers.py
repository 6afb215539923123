"""A resume's answer read as strictly as the interrupt's `responseSchema` says: `true` or `false`
for an approval, a number for a number. A value a lax reading would coerce ("yes", "on", "1",
1, 0...) is refused with `invalid_answer`, nothing is settled, and the right answer still
settles it afterwards."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ag_ui.core import Interrupt, RunErrorEvent

from bot.records import RequestStatus
from tests.adapters.doors.ag_ui.test_ag_ui import (
    Client,
    client_of,
    interrupted,
    results,
    script_approval,
    texts,
)
from tests.adapters.surfaces.slack.conftest import StartEnv
from tests.fakes.anthropic_api import reply, reply_text, tool_use_block

FORM = {
    "fields": [
        {"name": "replicas", "label": "Replicas", "type": "integer"},
        {"name": "urgent", "label": "Urgent", "type": "boolean"},
        {"name": "day", "label": "Day", "type": "date"},
    ]
}


@pytest.fixture
async def client(start_env: StartEnv) -> Client:
    return await client_of(await start_env())


async def refused(client: Client, thread: str, interrupt: Interrupt, payload: Any) -> str:
    """The resume is a RUN_ERROR `invalid_answer` and the request is still pending: its
    message."""
    events = await client.resume(thread, interrupt.id, "resolved", payload)
    error = events[-1]
    assert isinstance(error, RunErrorEvent), events
    assert error.code == "invalid_answer", error
    record = await client.env.store.get_request(interrupt.id)
    assert record is not None and record.status is RequestStatus.PENDING
    return error.message


@pytest.mark.parametrize(
    "coerced",
    ["yes", "on", "1", 1, "true", "True", 1.0, "no", "off", "0", 0, "false"],
    ids=json.dumps,
)
async def test_an_approval_is_true_or_false_only(client: Client, coerced: Any) -> None:
    env = client.env
    script_approval(env)
    (interrupt,) = interrupted(await client.run("t-strict", "ship it")).interrupts
    message = await refused(client, "t-strict", interrupt, {"approved": coerced})
    assert "approved" in message
    assert len(env.model.requests) == 1  # the model was told nothing
    fine = await client.resume("t-strict", interrupt.id, "resolved", {"approved": True})
    assert results(fine) == [{"approved": True}] and texts(fine) == ["Deployed."]


async def test_an_answer_sent_as_json_text_is_read_as_strictly(client: Client) -> None:
    script_approval(client.env)
    (interrupt,) = interrupted(await client.run("t-text", "ship it")).interrupts
    await refused(client, "t-text", interrupt, json.dumps({"approved": "yes"}))
    fine = await client.resume("t-text", interrupt.id, "resolved", json.dumps({"approved": False}))
    assert results(fine) == [{"approved": False}]


async def test_a_forms_values_have_their_fields_types(client: Client) -> None:
    env = client.env
    env.model.script(reply(tool_use_block("collectUserData", FORM)), reply_text("Scaled."))
    (interrupt,) = interrupted(await client.run("t-form", "scale it")).interrupts
    message = await refused(client, "t-form", interrupt,
                            {"replicas": "3", "urgent": "yes", "day": "2026-12-07"})  # fmt: skip
    assert "replicas" in message and "urgent" in message and "day" not in message
    await refused(client, "t-form", interrupt, {"replicas": 3.5, "urgent": 1, "day": "2026-12-07"})
    answer = {"replicas": 3, "urgent": False, "day": "2026-12-07"}
    fine = await client.resume("t-form", interrupt.id, "resolved", answer)
    assert results(fine) == [answer] and texts(fine) == ["Scaled."]
