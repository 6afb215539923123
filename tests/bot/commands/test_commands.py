"""bot/commands/: the `hitl` commands on a real store, their phrases written plainly."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.commands import LISTED, Commands, Place
from bot.gates.grants import Grants
from bot.records import RequestRecord
from bot.requests.access import AnswerPolicy
from bot.store import SqlStore, open_store

HERE = Place("slack:C1", ":")
ACTOR, ADMIN, STRANGER = "U0ACTOR", "U0ADMIN", "U0STRANGER"


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqlStore]:
    opened = await open_store(f"sqlite+aiosqlite:///{tmp_path / 'commands.db'}")
    yield opened
    await opened.close()


@pytest.fixture
def commands(store: SqlStore) -> Commands:
    return Commands(store, AnswerPolicy(admins=frozenset({ADMIN})), Grants(store))


async def said(commands: Commands, text: str, user: str = ACTOR, place: Place = HERE) -> str:
    return "\n".join(p.plain for p in await commands.answer(text, place=place, user=user))


def request(request_id: str, room_id: str, tool_name: str = "requestApproval") -> RequestRecord:
    now = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    return RequestRecord(
        id=request_id, tool_name=tool_name, arguments={}, room_id=room_id,
        tool_call_id=f"toolu_{request_id}", channel_id="agent", channel_type="ai",
        actor_id=ACTOR, detached=False, created_at=now, expires_at=now + timedelta(hours=1),
    )  # fmt: skip


def test_a_place_holds_its_conversation_and_its_threads_only() -> None:
    assert HERE.holds("slack:C1") and HERE.holds("slack:C1:1712.0001")
    assert not HERE.holds("slack:C12:1712.0001") and not HERE.holds("slack:C")
    teams = Place("teams:19:abc@thread.tacv2", ";messageid=")
    assert teams.holds("teams:19:abc@thread.tacv2;messageid=17")
    assert not teams.holds("teams:19:abc@thread.tacv2x")


async def test_pending_lists_what_waits_here_and_only_here(
    store: SqlStore, commands: Commands
) -> None:
    assert await said(commands, "") == "Nothing is waiting for an answer in this conversation."
    await store.create_request(request("r1", "slack:C1:1.0"))
    await store.create_request(request("r2", "slack:C2:1.0"))
    # A chosen name is a value: braces in it are never read as a placeholder.
    await store.create_request(request("r3", "slack:C1:2.0", tool_name="ask{actor}"))
    listed = await said(commands, "pending")
    assert listed.splitlines()[0] == "2 request(s) waiting for an answer:"
    assert f"• requestApproval for {ACTOR}, until 2026-12-01 10:00 UTC" in listed
    assert f"• ask{{actor}} for {ACTOR}" in listed


async def test_a_long_list_is_cut_with_a_count_of_the_rest(
    store: SqlStore, commands: Commands
) -> None:
    for n in range(LISTED + 3):
        await store.create_request(request(f"r{n}", f"slack:C1:{n}.0"))
    lines = (await said(commands, "pending")).splitlines()
    assert len(lines) == 1 + LISTED + 1 and lines[-1] == "… and 3 more"


async def test_grants_listed_and_revoked_by_who_may(store: SqlStore, commands: Commands) -> None:
    grants = Grants(store)
    made = await grants.grant(
        room_id="slack:C1:1.0", actor_id=ACTOR, tool_name="deploy",
        arguments={"env": "prod"}, scope=["env"], granted_by=ACTOR, request_id="r1",
    )  # fmt: skip
    await grants.grant(
        room_id="slack:C2:1.0", actor_id=ACTOR, tool_name="deploy", arguments={},
        granted_by=ACTOR, request_id="r2",
    )  # fmt: skip
    listed = (await said(commands, "grants")).splitlines()
    assert listed[0] == "1 tool grant(s) here:"
    assert listed[1].startswith(f"• `{made.id}` deploy for {ACTOR} (env=prod), until ")
    assert listed[1].endswith(f", granted by {ACTOR}")
    assert listed[2] == "Revoke one with `/hitl revoke <id>`."

    refused = await said(commands, f"revoke {made.id}", user=STRANGER)
    assert refused == f"Cannot revoke: you may not revoke grant {made.id}."
    assert await said(commands, f"revoke {made.id}", user=ADMIN) == (
        f"Revoked `{made.id}`: deploy asks {ACTOR} again."
    )
    assert await said(commands, f"revoke {made.id}", user=ADMIN) == (
        f"Cannot revoke: grant {made.id} was revoked already."
    )
    assert await said(commands, "grants") == (
        "No tool is allowed to run unasked in this conversation."
    )


async def test_anything_else_is_the_usage(store: SqlStore) -> None:
    commands = Commands(store, AnswerPolicy(), None, command="@hitl-bridge hitl")
    usage = await said(commands, "help me")
    assert usage.splitlines() == [
        "`@hitl-bridge hitl` or `@hitl-bridge hitl pending`: the requests waiting in this "
        "conversation.",
        "`@hitl-bridge hitl mine`: the requests waiting for your answer, anywhere.",
        "`@hitl-bridge hitl grants`: the tools allowed to run unasked here.",
        "`@hitl-bridge hitl revoke <id>`: revoke one.",
    ]
    assert await said(commands, "revoke x") == "Tool grants are not kept by this bridge."


async def test_mine_lists_the_callers_open_requests_in_every_room(
    store: SqlStore, commands: Commands
) -> None:
    assert await said(commands, "mine") == "Nothing waits for your answer."
    await store.create_request(request("r1", "slack:C1:1.0"))
    await store.create_request(request("r2", "slack:C2:1.0"))
    mine = await said(commands, "mine")
    assert mine.splitlines() == [
        "2 request(s) waiting for your answer:",
        f"• `r1` requestApproval for {ACTOR} in slack:C1:1.0, until 2026-12-01 10:00 UTC",
        f"• `r2` requestApproval for {ACTOR} in slack:C2:1.0, until 2026-12-01 10:00 UTC",
    ]
    assert await said(commands, "mine", user=STRANGER) == "Nothing waits for your answer."
    shared = await commands.answer("mine", place=HERE, user=ACTOR, private=False)
    assert [p.plain for p in shared] == [
        "Ask me that in a private chat: a reply here is seen by everyone."
    ]


async def test_admins_see_every_room_and_others_are_refused_on_the_record(
    store: SqlStore, commands: Commands
) -> None:
    await store.create_request(request("r1", "slack:C1:1.0"))
    await store.create_request(request("r2", "slack:C2:1.0"))
    assert (await said(commands, "pending")).startswith("1 request(s)")  # this room's only
    everywhere = await said(commands, "pending", user=ADMIN)
    assert everywhere.startswith("2 request(s)") and "`r2` requestApproval" in everywhere
    # An admin in a shared conversation sees what everyone there would.
    shared = await commands.answer("pending", place=HERE, user=ADMIN, private=False)
    assert shared[0].plain.startswith("1 request(s)")

    for text in ("audit @U0ACTOR", "cancel r1 stop"):
        refused = await said(commands, text, user=STRANGER)
        assert refused == "Only the bridge's admins may do that; the attempt is recorded."
    lines = await store.list_audit(actor_id=STRANGER)
    assert [(e.action, e.detail["command"]) for e in lines] == [
        ("admin.refused", "cancel r1 stop"), ("admin.refused", "audit @U0ACTOR"),
    ]  # fmt: skip
    # Without a router here, a cancel cannot be made (the surfaces pass theirs).
    assert await said(commands, "cancel r1", user=ADMIN) == (
        "Requests cannot be cancelled from here."
    )
    assert "`/hitl cancel <id> [reason]`" in await said(commands, "help", user=ADMIN)
    assert "cancel" not in await said(commands, "help")


async def test_an_admin_lists_every_rooms_grants(store: SqlStore, commands: Commands) -> None:
    grants = Grants(store)
    for room in ("slack:C1:1.0", "slack:C2:1.0"):
        await grants.grant(
            room_id=room, actor_id=ACTOR, tool_name="deploy", arguments={},
            seconds=3600, granted_by=ACTOR,
        )  # fmt: skip
    assert (await said(commands, "grants")).startswith("1 tool grant(s) here:")
    listed = await said(commands, "grants", user=ADMIN)
    assert listed.startswith("2 tool grant(s) in all:")
    assert "in slack:C2:1.0" in listed
