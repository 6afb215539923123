"""Where a request's copies go (bot/policies/delivery.py): its rule's `deliver`, each place found
through the surfaces (`Bridge.find`, given here as a function of addresses); a place that cannot
be found is one undeliverable copy, told once, when the request is posted."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bot.doors.addresses import Address, Addressee, UnknownAddressError
from bot.human_input import RenderState, RequestUpdate
from bot.policies import Policy, PolicyFile
from bot.policies.deciders import Deciders
from bot.policies.delivery import Delivery, addresses
from bot.policies.tally import Tally

TEAMS = "19:ops0channel@thread.tacv2"
DELIVER = ["thread", "approvers_dm", "slack:C0APPROVALS", f"teams:{TEAMS}", "slack:C0NOWHERE"]
APPROVERS = ["actor", "slack:U0BOB00001", "slack:S0OPSTEAM", "slack:U0CAT00003"]
RULES: dict[str, Any] = {
    "rules": [
        {"match": {"tool": "deploy"}, "approvers": APPROVERS, "deliver": DELIVER},
        {"match": {"tool": "*"}, "approvers": ["actor"]},
    ]
}


class Places:
    """The surfaces' answers: a Slack DM per user, channels and Teams conversations as they
    are, except C0NOWHERE (the app is not in it). Counts what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def find(self, address: Address) -> Addressee:
        self.asked.append(address.text)
        if address.where == "C0NOWHERE":
            raise UnknownAddressError("no Slack channel C0NOWHERE for this app")
        if address.where.startswith("U"):
            return Addressee(f"slack:D{address.where[1:]}:", address.where)
        if address.surface == "slack":
            return Addressee(f"slack:{address.where}:", None)
        return Addressee(f"teams:{address.where}", None)


def delivery() -> tuple[Delivery, Places, list[tuple[str, str, str]]]:
    policy = Policy.from_file(PolicyFile.model_validate(RULES), frozenset(), frozenset())
    places, told = Places(), []

    async def undeliverable(update: RequestUpdate, where: str, why: str) -> None:
        told.append((update.pending_id, where, why))

    return Delivery(Deciders(policy), places.find, undeliverable), places, told


def update(state: RenderState, tool: str = "deploy", **fields: Any) -> RequestUpdate:
    values: dict[str, Any] = {
        "state": state, "pending_id": "r1", "tool_name": tool, "arguments": {},
        "room_id": "slack:C0GENERAL01:1.1", "tool_call_id": "t1", "channel_id": "agent",
        "channel_type": "ai", "actor_id": "U0ALICE001", "created_at": datetime.now(UTC),
    }  # fmt: skip
    return RequestUpdate(**{**values, **fields})


def test_the_places_of_a_rule_in_its_order_users_only_for_dms() -> None:
    rule = Policy.from_file(PolicyFile.model_validate(RULES), frozenset(), frozenset()).rules[0]
    assert [a.text for a in addresses(rule)] == [
        "slack:U0BOB00001", "slack:U0CAT00003", "slack:C0APPROVALS", f"teams:{TEAMS}",
        "slack:C0NOWHERE",
    ]  # fmt: skip


async def test_a_posted_request_s_copies_and_the_one_that_cannot_be() -> None:
    deliver, places, told = delivery()
    rooms = await deliver.rooms(update(RenderState.EXECUTING))
    assert rooms == [
        "slack:D0BOB00001:", "slack:D0CAT00003:", "slack:C0APPROVALS:", f"teams:{TEAMS}",
    ]  # fmt: skip
    assert told == [("r1", "slack:C0NOWHERE", "no Slack channel C0NOWHERE for this app")]

    # Later updates (the tally, the ending) go to the same rooms; the failure is told once.
    tally = Tally(approvers=("U0BOB00001",), decliners=(), required=2)
    assert await deliver.rooms(update(RenderState.EXECUTING, tally=tally)) == rooms
    assert await deliver.rooms(update(RenderState.COMPLETE)) == rooms
    assert len(told) == 1 and len(places.asked) == 15


async def test_no_copies_before_a_request_nor_under_a_thread_only_rule() -> None:
    deliver, places, told = delivery()
    assert await deliver.rooms(update(RenderState.IN_PROGRESS, pending_id="")) == []
    assert await deliver.rooms(update(RenderState.CANCELLED, pending_id="")) == []
    assert await deliver.rooms(update(RenderState.EXECUTING, tool="status")) == []
    assert places.asked == [] and told == []


async def test_a_copy_in_the_request_s_own_room_is_no_copy() -> None:
    deliver, _, _ = delivery()
    rooms = await deliver.rooms(update(RenderState.EXECUTING, room_id="slack:C0APPROVALS:"))
    assert "slack:C0APPROVALS:" not in rooms and len(rooms) == 3
