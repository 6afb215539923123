"""`/metrics` of the real service with Teams (Server.start, FakeBotConnector): Bot Connector
attempts counted by method and outcome, a 429 the connector retries among them."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from tests.adapters.surfaces.teams.conftest import StartEnv, request_id_of
from tests.adapters.surfaces.teams.test_e2e import (
    ANSWERED_BY_ALICE,
    assert_settled_reply,
    finish,
    start_turn,
)

ACTIVITIES = "POST /v3/conversations/{id}/activities"
ACTIVITY = "PUT /v3/conversations/{id}/activities/{id}"


async def test_connector_calls_and_a_throttled_one_are_counted(start_env: StartEnv) -> None:
    env = await start_env(HITL_METRICS_ADDRESS="127.0.0.1:0")
    env.connector.fail_next("POST", 429, retry_after="0")
    chat, activity_id, card = await start_turn(env, "AskUserQuestion", {"question": "Q?"})
    reply = await chat.invoke("hitl_answer", request_id_of(card), inputs={"answer.answer": "A"})
    assert_settled_reply(reply, ANSWERED_BY_ALICE)
    await finish(env, chat, activity_id, ANSWERED_BY_ALICE)

    url = env.server.metrics_url
    assert url is not None
    async with env.http.get(url) as response:
        text = await response.text()
    calls = {
        (s.labels["method"], s.labels["outcome"]): s.value
        for family in text_string_to_metric_families(text)
        if family.name == "hitl_teams_api_calls"
        for s in family.samples
        if s.name == "hitl_teams_api_calls_total"
    }
    assert calls[(ACTIVITIES, "rate_limited")] == 1.0
    assert calls[(ACTIVITIES, "ok")] >= 2.0  # the request, the agent's reply
    assert calls[(ACTIVITY, "ok")] >= 1.0  # the card edited to its answer
    created = {
        (s.labels["tool"], s.labels["door"], s.labels["surface"]): s.value
        for family in text_string_to_metric_families(text)
        if family.name == "hitl_requests_created"
        for s in family.samples
        if s.name == "hitl_requests_created_total"
    }
    assert created == {("AskUserQuestion", "agent", "teams"): 1.0}
