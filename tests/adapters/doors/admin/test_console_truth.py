"""What the console says is true, against the real service (`Server.start`, as `hitl-bridge
serve` runs it) with the fake Slack answering `users.info`: who asked (a door's token, or the
person whose turn asked), the surfaces and rooms each request was shown in, people by name with
their id on hover, tools by the names people know, counts in good English; in the table, the
request's page and both exports."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from adapters.doors.admin.app import AdminConsole
from bot.bridge.people import PeopleNames
from tests.adapters.doors.admin.conftest import (
    APPROVALS,
    BOBBY,
    ENV_TOKEN,
    Asked,
    ask_as_in_production,
)
from tests.adapters.doors.admin.test_console_http import csrf_of
from tests.adapters.surfaces.slack.conftest import ADMIN, ALICE, CHANNEL, Env, StartEnv

WAIT = 10.0  # seconds a page may wait for names here: only a broken test waits that long


@pytest.fixture
async def client() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        yield session


async def started(start_env: StartEnv, client: aiohttp.ClientSession) -> tuple[Env, Asked]:
    env = await start_env(HITL_ADMIN_TOKEN=ENV_TOKEN)
    console = env.server.service.admin
    assert isinstance(console, AdminConsole) and isinstance(console.people, PeopleNames)
    console.people.wait = WAIT
    asked = await ask_as_in_production(env)
    async with client.get(f"{env.server.url}/admin/signin") as form:
        csrf = csrf_of(await form.text())
    data = {"csrf": csrf, "token": ENV_TOKEN}
    async with client.post(f"{env.server.url}/admin/signin", data=data) as signed:
        assert signed.status == 200 and signed.url.path == "/admin/"
    return env, asked


async def page(client: aiohttp.ClientSession, env: Env, path: str) -> str:
    async with client.get(f"{env.server.url}{path}") as response:
        assert response.status == 200, await response.text()
        return await response.text()


def cells(text: str, request_id: str) -> dict[str, str]:
    """The table row of `request_id`: its cells' inner HTML by class."""
    row = re.search(rf'<tr>(?:(?!</tr>).)*?>{re.escape(request_id)}</a>(?:(?!</tr>).)*</tr>',
                    text, re.S)  # fmt: skip
    assert row is not None, text
    return dict(re.findall(r'<td class="([a-z-]+)">(.*?)</td>', row.group(0), re.S))


def person(name: str, person_id: str) -> str:
    return f'<span class="person" title="{person_id}">{name}</span>'


async def test_the_table_says_who_asked_where_and_by_name(
    start_env: StartEnv, client: aiohttp.ClientSession
) -> None:
    env, asked = await started(start_env, client)
    text = await page(client, env, "/admin/requests")
    assert '<span id="total">3 requests</span>' in text
    ci, deploy, agent = (cells(text, i) for i in (asked.by_ci, asked.by_deploy, asked.by_agent))
    # Who asked: the door's token, not the person asked; the agent's: Bobby, by name.
    assert ci["asked-by"] == "token:ci-agent" and deploy["asked-by"] == "token:deploy-bot"
    assert agent["asked-by"] == person("bobby", BOBBY)
    assert agent["decided-by"] == person("admin", ADMIN)
    # Where: the rooms as written (no stray colon), the surfaces from them (not "ai").
    assert ci["room"] == f"slack:D{ALICE[1:]}" and deploy["room"] == f"slack:{CHANNEL}"
    assert agent["room"] == f"slack:{CHANNEL}@1700000000.000100"
    assert {ci["surface"], deploy["surface"], agent["surface"]} == {"slack"}
    # Tools by the names people know, the tool's own name on hover.
    assert ci["tool"] == '<span class="tool" title="requestApproval">Approval</span>'
    assert deploy["tool"] == '<span class="tool" title="AskUserQuestion">Question</span>'
    assert agent["tool"] == '<span class="tool" title="approveToolCall">Tool call approval</span>'
    looked_up = {call["user"] for call in env.slack.calls_to("users.info")}
    assert {BOBBY, ADMIN} <= looked_up

    # A token's filter finds that token's requests only; a person's, what they asked or decided.
    text = await page(client, env, "/admin/requests?actor=token:ci-agent")
    assert '<span id="total">1 request</span>' in text and asked.by_ci in text
    assert asked.by_deploy not in text and asked.by_agent not in text
    text = await page(client, env, f"/admin/requests?actor={ALICE}")  # asked of, not by, Alice
    assert '<span id="total">0 requests</span>' in text
    text = await page(client, env, f"/admin/requests?actor={BOBBY}")
    assert '<span id="total">1 request</span>' in text and asked.by_agent in text


async def test_the_request_page_names_each_room_its_surface_and_the_people(
    start_env: StartEnv, client: aiohttp.ClientSession
) -> None:
    env, asked = await started(start_env, client)
    text = await page(client, env, f"/admin/requests/{asked.by_agent}")
    shown = re.findall(r'<span class="room">([^<]+)</span> <span class="surface">\(([^)]+)\)',
                       text)  # fmt: skip
    assert shown == [(f"slack:{CHANNEL}@1700000000.000100", "slack"),
                     (f"slack:{APPROVALS}", "slack")]  # fmt: skip
    assert f'<dd id="asked-by">{person("bobby", BOBBY)}</dd>' in text
    assert f'<dd id="decided-by">{person("admin", ADMIN)}</dd>' in text
    text = await page(client, env, f"/admin/requests/{asked.by_ci}")
    assert '<dd id="asked-by">token:ci-agent</dd>' in text
    assert f'<dd id="asked-for">{person("alice", ALICE)}</dd>' in text


async def test_the_exports_say_the_same(start_env: StartEnv, client: aiohttp.ClientSession) -> None:
    env, asked = await started(start_env, client)
    text = await page(client, env, "/admin/requests.csv")
    rows = {row["id"]: row for row in csv.DictReader(io.StringIO(text))}
    async with client.get(f"{env.server.url}/admin/requests.json") as response:
        assert response.content_type == "application/json"
        items: list[dict[str, Any]] = json.loads(await response.text())
    assert {item["id"]: item["asked_by"] for item in items} == {
        row["id"]: row["asked_by"] for row in rows.values()
    } == {asked.by_ci: "token:ci-agent", asked.by_deploy: "token:deploy-bot",
          asked.by_agent: BOBBY}  # fmt: skip
    agent = rows[asked.by_agent]
    assert agent["surface"] == "slack" and agent["copies"] == f"slack:{APPROVALS}"
    assert agent["tool_label"] == "Tool call approval" and agent["tool"] == "approveToolCall"
    ci = rows[asked.by_ci]
    assert ci["room"] == f"slack:D{ALICE[1:]}" and ci["asked_for"] == ALICE
    assert ci["surface"] == "slack"
    by_id = {item["id"]: item for item in items}
    assert by_id[asked.by_agent]["arguments"] == {"tool": "drop_table",
                                                  "arguments": {"table": "users"}}  # fmt: skip
