"""bot/policies/drivers.py: who may drive the agent in a room, under the policy's `drivers`;
each refusal audited (`turn_refused`)."""

from __future__ import annotations

from typing import Any

from bot.policies.deciders import Deciders
from bot.policies.directory import Directory
from bot.policies.drivers import NOT_A_DRIVER, drivers_of, may_drive, refused_turn
from bot.policies.policy_file import PolicyFile
from bot.policies.rules import Policy
from bot.store import open_store
from tests.bot.policies.test_deciders import ADMIN, BOB, CAROL, EVE, Groups

OPS_ROOMS = "slack:C0OPS*"
POLICY: dict[str, Any] = {
    "rules": [{"match": {"tool": "*"}, "approvers": ["actor"]}],
    "drivers": [
        {"room": OPS_ROOMS, "users": ["slack:S0OPSTEAM", f"slack:{BOB}"]},
        {"room": "slack:C0SECRET*", "users": ["slack:S0BROKEN1"]},
    ],
}


def deciders(directory: Directory | None = None) -> Deciders:
    policy = Policy.from_file(PolicyFile.model_validate(POLICY), frozenset(), frozenset({ADMIN}))
    return Deciders(policy, directory or Directory({"slack:": Groups()}))


def test_the_first_room_glob_that_matches_applies() -> None:
    drivers = deciders().policy.drivers
    assert drivers_of(drivers, "slack:C0OPS0001:1.2") is drivers[0]
    assert drivers_of(drivers, "slack:C0SECRET1:") is drivers[1]
    assert drivers_of(drivers, "slack:c0ops0001:1.2") is None  # case counts
    assert drivers_of(drivers, "teams:19:x") is None


async def test_drivers_named_in_groups_and_admins_may_others_not() -> None:
    check = deciders()
    room = "slack:C0OPS0001:1.2"
    assert (await may_drive(check, room, [BOB])).allowed
    assert (await may_drive(check, room, [CAROL])).allowed  # in the ops group
    assert (await may_drive(check, room, [ADMIN])).allowed
    assert (await may_drive(check, room, ["", EVE, BOB])).allowed  # by an alias
    refused = await may_drive(check, room, [EVE])
    assert not refused.allowed and refused.notice == NOT_A_DRIVER
    assert (await may_drive(check, "slack:C0GENERAL1:1.2", [EVE])).allowed  # no entry: anyone


async def test_a_group_that_cannot_be_read_lets_nobody_in_and_says_so() -> None:
    refused = await may_drive(deciders(), "slack:C0SECRET1:", [CAROL])
    assert not refused.allowed and refused.notice is not None
    assert refused.notice.plain == (
        "The members of slack:S0BROKEN1 cannot be read: Slack usergroups.users.list failed: "
        "no_such_subteam: nobody can drive the agent here through it until it can be read."
    )
    without = await may_drive(deciders(Directory({})), OPS_ROOMS, [CAROL])
    assert not without.allowed and without.notice is not None
    assert "cannot be read" in without.notice.plain


async def test_a_refusal_is_audited_an_allowed_turn_is_not(sqlite_url: str) -> None:
    check, store = deciders(), await open_store(sqlite_url)
    try:
        room = "slack:C0OPS1:"
        assert await refused_turn(check, store, room_id=room, user_id=BOB, surface="slack") is None
        notice = await refused_turn(check, store, room_id=room, user_id=EVE, surface="slack")
        assert notice == NOT_A_DRIVER
        (entry,) = await store.list_audit()
        assert (entry.action, entry.actor_id, entry.request_id) == ("turn_refused", EVE, None)
        assert entry.detail == {"surface": "slack", "room": room, "why": NOT_A_DRIVER.plain}
    finally:
        await store.close()
