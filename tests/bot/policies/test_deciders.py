"""bot/policies/deciders.py: who may answer a request under its rule, at click time."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bot.policies.deciders import Deciders, subject
from bot.policies.directory import Directory, GroupUnreadable
from bot.policies.policy_file import PolicyFile
from bot.policies.rules import Policy
from bot.records import RequestRecord
from bot.words.tool_names import GATE_TOOL

ACTOR, BOB, CAROL, ADMIN, EVE = "U0ACTOR01", "U0BOB0001", "U0CAROL01", "U0ADMIN01", "U0EVE0001"
RULES = {
    "rules": [
        {"match": {"tool": "deploy", "arguments": {"env": "production"}},
         "approvers": ["slack:S0OPSTEAM", f"slack:{BOB}"], "allow_self": False},
        {"match": {"tool": "rotate"}, "approvers": ["slack:S0BROKEN1"]},
        {"match": {"tool": "*"}, "approvers": ["actor"]},
    ]
}  # fmt: skip


class Groups:
    """Slack's user groups as Slack would answer: the ops team, and one it cannot read."""

    async def members(self, group: str) -> frozenset[str]:
        if group == "slack:S0OPSTEAM":
            return frozenset({CAROL, ACTOR})
        raise GroupUnreadable(group, "Slack usergroups.users.list failed: no_such_subteam")


def deciders() -> Deciders:
    policy = Policy.from_file(PolicyFile.model_validate(RULES), frozenset(), frozenset({ADMIN}))
    return Deciders(policy, Directory({"slack:": Groups()}))


def gate(tool: str, arguments: dict[str, Any], actor: str | None = ACTOR) -> RequestRecord:
    args = {"tool": tool, "arguments": arguments, "description": "", "schema": {}}
    return RequestRecord(id="r1", tool_name=GATE_TOOL, arguments=args, actor_id=actor,
                         created_at=datetime.now(UTC))  # fmt: skip


async def test_an_approval_gate_is_decided_by_the_gated_call_s_rule() -> None:
    record = gate("deploy", {"env": "production"})
    assert subject(record) == ("deploy", {"env": "production"})
    check = deciders().check
    assert (await check(record, [CAROL])).allowed  # in the group
    assert (await check(record, [BOB])).allowed  # named
    assert (await check(record, [ADMIN])).allowed  # admins always
    refused = await check(record, [EVE])
    assert not refused.allowed and refused.notice is not None
    assert (
        refused.notice.plain == f"Only the group slack:S0OPSTEAM or {BOB} may answer this request."
    )
    own = await check(record, [ACTOR])  # in the group, but it is their own request
    assert not own.allowed and own.notice is not None and "other than you" in own.notice.plain


async def test_an_alias_counts_as_the_person() -> None:
    assert (await deciders().check(gate("deploy", {"env": "production"}), [EVE, BOB])).allowed


async def test_the_actor_rule_and_a_request_without_an_actor() -> None:
    check = deciders().check
    staging = gate("deploy", {"env": "staging"})  # the catch-all rule: the actor
    assert (await check(staging, [ACTOR])).allowed and not (await check(staging, [EVE])).allowed
    assert (await check(gate("deploy", {"env": "staging"}, actor=None), [EVE])).allowed


async def test_a_group_that_cannot_be_read_refuses_and_says_why() -> None:
    refused = await deciders().check(gate("rotate", {}), [BOB])
    assert not refused.allowed and refused.notice is not None
    assert refused.notice.plain == (
        "The members of slack:S0BROKEN1 cannot be read: Slack usergroups.users.list failed: "
        "no_such_subteam: nobody can answer through it until it can be read."
    )
