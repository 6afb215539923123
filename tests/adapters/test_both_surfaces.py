"""End to end with Slack AND Teams enabled in one service: a request shown on both surfaces.

The service runs as `hitl-bridge serve` does (`Server.start`), with FakeSlack, FakeBotConnector
and FakeAnthropic behind it; nothing of ours is mocked. The core's surface-neutral interface
(`Bridge.mirror`) shows every request of a Slack thread in a Teams channel too: the Slack
surface posts it in the thread, the Teams surface posts a card in the channel (proactively, at
the serviceUrl `TeamsSurface.remember` was given). An answer on either surface settles the one
request, and both copies are updated: the Slack message edited, the Teams activity updated in
place (PUT). Slack's side is played with signed payloads on `/slack/events`, Teams' with
activities on `/api/messages`, as in tests/adapters/surfaces/slack and
tests/adapters/surfaces/teams, whose
helpers (`Env`, `Thread`, `Chat`) run here against the one shared server.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from adapters.serve.service import Server
from adapters.serve.settings import Settings
from adapters.surfaces.slack.rooms import parse_room as parse_slack_room
from adapters.surfaces.teams.surface import TeamsRoom, TeamsSurface
from bot import RequestUpdate
from bot.records import RequestRecord, RequestStatus
from bot.store import upgrade
from bot.store.copies import CopyTables
from tests.adapters.surfaces.slack import conftest as slack
from tests.adapters.surfaces.teams import conftest as teams
from tests.fakes.anthropic_api import FakeAnthropic, reply_text, reply_tool_use
from tests.fakes.bot_connector import FakeBotConnector, card_errors, cards_of
from tests.fakes.slack_api import FakeSlack

JSON = dict[str, Any]
WAIT = 5.0  # upper bound for anything a test awaits; only a broken test ever reaches it
POLL = 0.02
FINAL = "All done, thanks."
APPROVAL = {"action": "Deploy v2", "reason": "Release day"}
# Where the Teams copies go: a channel (its conversation id without `;messageid=`), so each
# request is a new post in it.
TEAMS_CHANNEL = teams.CHANNEL
TEAMS_ROOM = TeamsRoom(TEAMS_CHANNEL).room_id
SLACK_ALICE = slack.ALICE  # the requests' actor: she mentions the bot in Slack
TEAMS_ADMIN = teams.ADMIN  # in HITL_ADMINS: may answer anyone's requests, Alice's included
# The admin by AAD object id (the id answers are checked and recorded by) and by Teams user id:
# the request's actor is a Slack user, so the Teams card refreshes (turns live) for nobody but
# the deciders whose Teams user id the service knows. With the AAD object id alone, it knows it
# only once it has had an activity from them; until then the card offers nothing to anyone.
ADMINS = f"{TEAMS_ADMIN.aad},{TEAMS_ADMIN.id}"

# Environment variables the service (or the Teams SDK, which loads a `.env` it finds from the
# working directory upwards at import, see microsoft_teams/apps/app.py) would read besides the
# Settings given here: without TEAMS_CLIENT_ID, the SDK falls back to CLIENT_ID & co.
SDK_VARIABLES = ("CLIENT_ID", "CLIENT_SECRET", "TENANT_ID", "MANAGED_IDENTITY_CLIENT_ID",
                 "CLOUD", "SERVICE_URL", "DANGEROUSLY_ALLOW_UNAUTHENTICATED_REQUESTS")  # fmt: skip


def mirror_to_teams(update: RequestUpdate) -> list[str]:
    """The Slack threads' requests are also shown in the Teams channel."""
    return [TEAMS_ROOM] if update.room_id.startswith("slack:") else []


# -- the service with both surfaces -------------------------------------------------------------


@dataclass
class Both:
    """The running service, its fakes, and each surface's test helpers over the one server."""

    server: Server
    on_slack: slack.Env  # FakeSlack; signed payloads to /slack/events
    on_teams: teams.Env  # FakeBotConnector; activities to /api/messages
    model: FakeAnthropic

    @property
    def fake_slack(self) -> FakeSlack:
        return self.on_slack.slack

    @property
    def connector(self) -> FakeBotConnector:
        return self.on_teams.connector

    @property
    def surface(self) -> TeamsSurface:
        """The running service's Teams surface."""
        adapter = self.server.service.teams
        assert adapter is not None
        return adapter.surface

    @property
    def chat(self) -> teams.Chat:
        """The Teams channel the requests are mirrored to."""
        return teams.Chat(self.on_teams, TEAMS_CHANNEL)

    async def record(self, request_id: str) -> RequestRecord:
        record = await self.server.service.store.get_request(request_id)
        assert record is not None
        return record

    async def recorded(self, request_id: str, *surfaces: str) -> RequestRecord:
        """The request once every one of `surfaces` has recorded where it posted it (polled:
        the store announces nothing)."""
        async with asyncio.timeout(WAIT):
            while True:
                record = await self.record(request_id)
                if all(surface in record.message_refs for surface in surfaces):
                    return record
                await asyncio.sleep(POLL)

    async def copy_ref(self, request_id: str, surface: str, room_id: str) -> JSON:
        """Where `surface` posted the request's copy in `room_id`, once it has recorded it."""
        copies = CopyTables(self.server.service.store)
        async with asyncio.timeout(WAIT):
            while True:
                ref = await copies.ref(request_id, surface, room_id)
                if ref is not None:
                    return ref
                await asyncio.sleep(POLL)


StartBoth = Callable[..., Awaitable[Both]]


@pytest.fixture
async def start_both(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[StartBoth]:
    """`await start_both(HITL_TIMEOUT_SECONDS=0.3, ...)`: the service, Slack and Teams enabled,
    mirroring Slack threads' requests to the Teams channel (unless `mirrored=False`)."""
    block_kit = slack.block_kit_schemas()  # before HITL_CONFORMANCE_DIR is cleared
    for name in list(os.environ):
        if name.startswith(("HITL_", "SLACK_", "ANTHROPIC_", "TEAMS_")) or name in SDK_VARIABLES:
            monkeypatch.delenv(name)
    monkeypatch.setenv("HITL_TEAMS_SCHEMA_DIR", str(teams.SCHEMAS))
    if block_kit is not None:
        monkeypatch.setenv("HITL_SLACK_SCHEMA_DIR", str(block_kit))
    async with AsyncExitStack() as stack:

        async def start(*, mirrored: bool = True, **overrides: Any) -> Both:
            fake_slack = await stack.enter_async_context(
                FakeSlack(users={SLACK_ALICE: "alice", slack.STRANGER: "mallory"})
            )
            connector = await stack.enter_async_context(FakeBotConnector())
            model = await stack.enter_async_context(FakeAnthropic())
            http = await stack.enter_async_context(aiohttp.ClientSession())
            url = f"sqlite+aiosqlite:///{tmp_path / 'hitl.db'}"
            await upgrade(url)
            values: dict[str, Any] = {
                "HITL_DATABASE_URL": url,
                "HITL_HOST": "127.0.0.1",
                "HITL_PORT": 0,
                "SLACK_BOT_TOKEN": fake_slack.token,
                "SLACK_SIGNING_SECRET": slack.SECRET,
                "SLACK_API_URL": fake_slack.base_url,
                "HITL_TEAMS_ALLOW_UNAUTHENTICATED": True,
                "HITL_ADMINS": ADMINS,
                "ANTHROPIC_API_KEY": "test",
                "ANTHROPIC_BASE_URL": model.base_url,
                "HITL_MODEL": slack.MODEL,
                "HITL_TIMEOUT_SECONDS": 30,
                **overrides,
            }
            server = await Server.start(Settings(_env_file=None, **values))
            stack.push_async_callback(server.stop)
            assert server.service.slack is not None and server.service.teams is not None
            both = Both(
                server=server,
                on_slack=slack.Env(server=server, slack=fake_slack, model=model, http=http),
                on_teams=teams.Env(server=server, connector=connector, model=model, http=http),
                model=model,
            )
            if mirrored:  # else only a policy's `deliver` shows copies
                server.service.bridge.mirror(mirror_to_teams)
            both.surface.remember(TEAMS_CHANNEL, connector.service_url)
            return both

        yield start


@pytest.fixture
async def both(start_both: StartBoth) -> Both:
    return await start_both()


# -- helpers ------------------------------------------------------------------------------------


def slack_request_id(message: Mapping[str, Any]) -> str:
    """The request a live Slack message's buttons point at."""
    return next(
        str(block["block_id"]).removeprefix("hitl_actions:")
        for block in message.get("blocks") or []
        if block.get("type") == "actions"
    )


def executes(card: Mapping[str, Any]) -> bool:
    """Whether a card has anything that sends an invoke (buttons or a refresh clause)."""
    return "Action.Execute" in teams.text_of(card)


async def teams_request(both: Both) -> tuple[str, JSON]:
    """The one card posted in the Teams channel, once it shows the request (not "Preparing…"):
    its activity id and that card, read from the activity's history."""
    chat = both.chat

    def posted() -> tuple[str, JSON] | None:
        for activity in chat.card_activities():
            for card in chat.versions(activity["id"]):
                if "Deploy v2" in teams.text_of(card):
                    return activity["id"], card
        return None

    found = await both.connector.wait_for(posted, WAIT)
    assert found is not None
    return found


async def teams_settled(both: Both, activity_id: str, marker: str) -> JSON:
    """The Teams card once updated to a state that sends nothing and says `marker`."""
    chat = both.chat

    def done() -> JSON:
        card = chat.card(activity_id)
        return {} if executes(card) or marker not in teams.text_of(card) else card

    return await both.connector.wait_for(done, WAIT)


async def start_turn(both: Both) -> tuple[slack.Thread, JSON, str, JSON]:
    """Alice mentions the bot in Slack; the model asks for approval. Returns the Slack thread,
    the executing Slack message, and the Teams card's activity id and executing card."""
    both.model.script(reply_tool_use("requestApproval", APPROVAL), reply_text(FINAL))
    thread = await both.on_slack.mention("please deploy v2")
    message = await thread.request()
    activity_id, card = await teams_request(both)

    # Slack: "Preparing request…" edited into the request, with Approve/Reject for Alice.
    versions = both.fake_slack.edits(slack.CHANNEL, message["ts"])
    assert "Preparing request…" in versions[0]["text"] and versions[1] == message
    assert slack.action_ids(message) == ["hitl_approve", "hitl_decline"]
    assert f"<@{SLACK_ALICE}>" in message["text"]
    # Teams: the same two steps, posted proactively in the channel (the serviceUrl remembered).
    chat = both.chat
    (posted,) = chat.card_activities()
    assert posted["id"] == activity_id
    cards = chat.versions(activity_id)
    assert "Preparing request…" in teams.text_of(cards[0]) and cards[1] == card
    assert card_errors(card) == []
    assert not teams.is_live(card)  # the card everyone sees is read-only…
    assert card["refresh"]["userIds"] == [TEAMS_ADMIN.id]  # …the admin's client fetches theirs
    assert card["refresh"]["action"]["verb"] == "hitl_refresh"
    (post,) = both.connector.calls_to("POST")
    assert post.conversation_id == TEAMS_CHANNEL

    # One request, shown in two rooms: its own (the Slack thread) and the mirrored one. The
    # surfaces are told concurrently: each records where it posted when it is done, the copy
    # by request, surface and room (bot.store.copies).
    record = await both.recorded(slack_request_id(message), "slack")
    assert record.status is RequestStatus.PENDING
    assert record.actor_id == SLACK_ALICE
    assert parse_slack_room(record.room_id) is not None
    assert record.room_id == f"slack:{slack.CHANNEL}:{thread.ts}"
    assert record.message_refs["slack"] == {
        "channel": slack.CHANNEL, "ts": message["ts"],
        "link": f"https://fake.slack.com/archives/{slack.CHANNEL}/p{message['ts'].replace('.', '')}"
                f"?thread_ts={thread.ts}&cid={slack.CHANNEL}",
    }  # fmt: skip
    assert "teams" not in record.message_refs  # the request's own room is not on Teams
    teams_ref = await both.copy_ref(record.id, "teams", TEAMS_ROOM)
    assert teams_ref["conversation_id"] == TEAMS_CHANNEL
    assert teams_ref["activity_id"] == activity_id
    assert teams_ref["service_url"] == both.connector.service_url
    return thread, message, activity_id, card


def assert_updated_in_place(both: Both, activity_id: str) -> None:
    """The Teams card was posted once and then only updated (PUT), never posted again: the
    last PUT carried the card it shows now."""
    connector = both.connector
    assert len(connector.calls_to("POST")) == 1
    puts = connector.calls_to("PUT")
    assert [(c.conversation_id, c.activity_id) for c in puts] == [(TEAMS_CHANNEL, activity_id)] * 2
    assert cards_of(puts[-1].body) == [both.chat.card(activity_id)]
    assert len(both.chat.versions(activity_id)) == 3  # preparing, executing, settled
    assert [a["id"] for a in both.chat.bot_activities()] == [activity_id]  # no replies there


# -- tests --------------------------------------------------------------------------------------


async def test_approved_in_slack_is_updated_in_teams_too(both: Both) -> None:
    thread, message, activity_id, _ = await start_turn(both)

    await both.on_slack.click(message, "hitl_approve")  # Alice, in Slack

    marker = f"Answered by <@{SLACK_ALICE}>"
    answered = await thread.settled(message, marker)
    assert not slack.has_actions(answered)
    assert "Approved" in json.dumps(answered["blocks"])
    card = await teams_settled(both, activity_id, "Approved")  # the Teams card, updated too
    assert card_errors(card) == []
    assert "Action.Execute" not in teams.text_of(card)  # no buttons, no refresh
    assert "Answered by" in teams.text_of(card) and not teams.is_live(card)
    assert_updated_in_place(both, activity_id)

    assert (await thread.reply())["text"] == FINAL  # the agent's words go to Slack only
    assert len(both.model.requests) == 2
    result = both.on_slack.tool_result(2)
    assert "is_error" not in result
    assert json.loads(result["content"]) == {"approved": True}
    record = await both.record(slack_request_id(message))
    assert record.status is RequestStatus.RESOLVED and record.settled_by == SLACK_ALICE
    assert len(both.fake_slack.edits(slack.CHANNEL, message["ts"])) == 3
    assert both.fake_slack.ephemerals == []  # nobody was told anything was wrong


async def test_expiry_updates_both(start_both: StartBoth) -> None:
    both = await start_both(HITL_TIMEOUT_SECONDS=0.5)
    thread, message, activity_id, _ = await start_turn(both)

    expired = await thread.settled(message, "Expired")  # nobody answered anywhere
    assert not slack.has_actions(expired)
    card = await teams_settled(both, activity_id, "Expired")
    assert card_errors(card) == []
    assert teams.verbs(card) == [] and "refresh" not in card
    assert_updated_in_place(both, activity_id)

    assert (await thread.reply())["text"] == FINAL
    result = both.on_slack.tool_result(2)
    assert result["is_error"] is True
    assert "timed out" in json.loads(result["content"])["error"]
    record = await both.record(slack_request_id(message))
    assert record.status is RequestStatus.TIMED_OUT and record.settled_by is None
    assert len(both.fake_slack.edits(slack.CHANNEL, message["ts"])) == 3
    assert len(both.model.requests) == 2


async def test_approved_in_teams_by_an_admin_is_updated_in_slack_too(both: Both) -> None:
    thread, message, activity_id, _ = await start_turn(both)
    request_id = slack_request_id(message)
    assert TEAMS_ADMIN.aad != SLACK_ALICE
    chat = both.chat

    # The admin sees the card: their Teams client runs its refresh (an automatic
    # adaptiveCard/action invoke) and shows the live card it is answered with.
    refreshed = await chat.invoke("hitl_refresh", request_id, user=TEAMS_ADMIN, trigger="automatic")
    live = refreshed.card
    assert teams.verbs(live) == ["hitl_approve", "hitl_decline"]
    assert teams.request_id_of(live) == request_id
    # They click Approve.
    reply = await chat.invoke("hitl_approve", request_id, user=TEAMS_ADMIN)

    answered = reply.card  # the invoke's response: the settled card
    assert not teams.is_live(answered) and "refresh" not in answered
    assert f"Answered by {TEAMS_ADMIN.name}" in teams.text_of(answered)
    card = await teams_settled(both, activity_id, f"Answered by {TEAMS_ADMIN.name}")
    assert teams.verbs(card) == [] and "refresh" not in card
    assert_updated_in_place(both, activity_id)
    edited = await thread.settled(message, "Approved")  # the Slack message, edited too
    assert not slack.has_actions(edited)
    assert "Answered by" in json.dumps(edited["blocks"])
    assert len(both.fake_slack.edits(slack.CHANNEL, message["ts"])) == 3

    assert (await thread.reply())["text"] == FINAL
    result = both.on_slack.tool_result(2)
    assert "is_error" not in result
    assert json.loads(result["content"]) == {"approved": True}
    record = await both.record(request_id)
    assert record.status is RequestStatus.RESOLVED and record.settled_by == TEAMS_ADMIN.aad
    assert both.fake_slack.ephemerals == []


async def test_a_rule_delivers_a_copy_to_teams(start_both: StartBoth, tmp_path: Path) -> None:
    """The same as the mirror above, said by the policy file: `deliver: [thread, teams:…]`."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(f"""\
rules:
  - match: {{tool: requestApproval}}
    approvers: [actor]
    deliver: [thread, "teams:{TEAMS_CHANNEL}"]
""")  # fmt: skip
    both = await start_both(mirrored=False, HITL_POLICY_FILE=str(policy))
    both.model.script(reply_tool_use("requestApproval", APPROVAL), reply_text(FINAL))
    thread = await both.on_slack.mention("please deploy v2")
    message = await thread.request()
    request_id = slack_request_id(message)
    ref = await both.copy_ref(request_id, "teams", TEAMS_ROOM)
    activity_id = str(ref["activity_id"])
    (posted,) = both.chat.card_activities()  # the copy only: no "Preparing…" card on Teams
    assert posted["id"] == activity_id
    assert "Deploy v2" in teams.text_of(both.chat.card(activity_id))

    await both.on_slack.click(message, "hitl_approve")  # Alice, in Slack
    await thread.settled(message, f"Answered by <@{SLACK_ALICE}>")
    card = await teams_settled(both, activity_id, "Answered by")
    assert card_errors(card) == [] and not executes(card)
    assert [(c.conversation_id, c.activity_id) for c in both.connector.calls_to("PUT")] == [
        (TEAMS_CHANNEL, activity_id)
    ]
    assert (await thread.reply())["text"] == FINAL
