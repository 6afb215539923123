"""bot/policies/tally.py: votes counted under a rule; only those of the current arguments."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.policies.policy_file import Match, Rule
from bot.policies.principals import parse_principal
from bot.policies.tally import (
    MemoryVotes,
    Tally,
    arguments_digest,
    needs_votes,
    tally,
)
from bot.records import Vote

GROUP = (parse_principal("slack:S0OPSTEAM"),)
T0 = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)


def rule(required: int = 2, declines_required: int = 1) -> Rule:
    return Rule(
        match=Match(tool="deploy"), approvers=GROUP, required=required,
        declines_required=declines_required,
    )  # fmt: skip


def vote(voter: str, approve: bool = True, digest: str = "now", reason: str | None = None) -> Vote:
    at = T0 + timedelta(seconds=len(voter))
    return Vote("r1", voter, approve, digest, at, reason)


def test_the_digest_is_of_the_values_not_the_key_order() -> None:
    one = arguments_digest({"env": "production", "replicas": 3})
    assert one == arguments_digest({"replicas": 3, "env": "production"})
    assert one != arguments_digest({"env": "production", "replicas": 4})
    assert len(one) == 64


def test_votes_are_needed_only_beyond_one() -> None:
    assert not needs_votes(rule(1, 1))
    assert needs_votes(rule(2, 1)) and needs_votes(rule(1, 2))


def test_one_approval_of_two_is_not_yet_approved() -> None:
    counted = tally([vote("bob")], "now", rule())
    assert counted == Tally(("bob",), (), 2, 1)
    assert not counted.approved and not counted.declined
    assert counted.line.template == "1 of 2 approvals: {person_a}"
    assert counted.line.people == {"person_a": "bob"}


def test_the_second_approval_approves_and_one_decline_declines() -> None:
    assert tally([vote("bob"), vote("carol")], "now", rule()).approved
    declined = tally([vote("bob"), vote("carol", False, reason="not today")], "now", rule())
    assert declined.declined and not declined.approved
    assert declined.reason == "not today"


def test_declines_required_counts_declines_too() -> None:
    votes = [vote("bob", False, reason="risky"), vote("carol")]
    counted = tally(votes, "now", rule(3, 2))
    assert not counted.declined and not counted.approved
    assert counted.line.plain == "1 of 3 approvals: carol; 1 of 2 declines: bob"
    both = tally([*votes, vote("dave", False)], "now", rule(3, 2))
    assert both.declined and both.reason == "bob: risky"
    assert tally([vote("dave", False, reason="no"), *votes], "now", rule(3, 2)).reason == (
        "dave: no; bob: risky"
    )


def test_votes_of_arguments_since_changed_no_longer_count_and_the_line_says_so() -> None:
    votes = [vote("bob", digest="before"), vote("carol", digest="before"), vote("eve")]
    counted = tally(votes, "now", rule())
    assert counted.approvers == ("eve",) and counted.stale == 2 and not counted.approved
    assert counted.line.plain == (
        "1 of 2 approvals: eve; votes given before the request changed no longer count"
    )
    assert tally(votes[:2], "now", rule()).line.plain == (
        "0 of 2 approvals; votes given before the request changed no longer count"
    )


def test_many_people_are_named_each_by_a_placeholder_of_letters() -> None:
    voters = [f"U{n:03}" for n in range(30)]
    line = tally([vote(v) for v in voters], "now", rule(31)).line
    assert list(line.people)[:2] == ["person_a", "person_b"]
    assert list(line.people)[26:28] == ["person_aa", "person_ab"]
    assert line.plain.startswith("30 of 31 approvals: U000, U001, ")
    assert line.plain.endswith("U028 and U029")


async def test_memory_votes_keep_one_per_person_until_the_arguments_change() -> None:
    box = MemoryVotes(keep=2)
    assert await box.cast(vote("bob"))
    assert not await box.cast(vote("bob", False))
    assert await box.cast(vote("bob", False, digest="changed"))
    assert [v.approve for v in await box.votes("r1")] == [False]
    for request_id in ("r2", "r3"):
        await box.cast(Vote(request_id, "bob", True, "now", T0))
    assert await box.votes("r1") == []  # the oldest request voted on is forgotten
