"""M-of-N approvals (docs/policies.md): a request's votes counted under its rule.

Under a rule with `required: N` a request settles as approved once N people allowed to answer
it have approved; with `declines_required: M`, as declined once M have declined (one decline
declines by default). Each vote is a row (bot/store/votes.py), so whichever worker a click
reaches counts every vote. A vote is of the arguments as they stood (their digest): if they
change after votes began, the earlier votes no longer count, and the tally says so.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from bot.policies.policy_file import Rule
from bot.records import Vote
from bot.words.phrases import Phrase, listed, placeholders


def needs_votes(rule: Rule) -> bool:
    """Whether a request under `rule` is decided by counting votes rather than by one answer."""
    return rule.required > 1 or rule.declines_required > 1


def arguments_digest(arguments: Mapping[str, Any]) -> str:
    """The SHA-256 of the arguments as canonical JSON: equal for equal arguments, whatever
    their keys' order (a JSONB column keeps none)."""
    canonical = json.dumps(
        arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Tally:
    """The votes that count (of the request's current arguments), in the order given."""

    approvers: tuple[str, ...]
    decliners: tuple[str, ...]
    required: int = 1
    declines_required: int = 1
    reasons: tuple[str, ...] = ()  # each decliner's reason ("" for none), in their order
    stale: int = 0  # votes given before the arguments changed: not counted

    @property
    def approved(self) -> bool:
        return len(self.approvers) >= self.required

    @property
    def declined(self) -> bool:
        return len(self.decliners) >= self.declines_required

    @property
    def reason(self) -> str:
        """Why it was declined: the one decliner's reason, or each decliner's, named."""
        if len(self.decliners) == 1:
            return self.reasons[0] if self.reasons else ""
        given = zip(self.decliners, self.reasons, strict=True)
        return "; ".join(f"{who}: {why}" for who, why in given if why)

    @property
    def line(self) -> Phrase:
        """The line every surface shows: `1 of 2 approvals: {person_a}`, with the declines
        when more than one is needed, and whether earlier votes were set aside."""
        people: dict[str, str] = {}
        keys = placeholders("person")

        def named(voters: Sequence[str]) -> str:
            names = []
            for voter in voters:
                key = next(keys)
                people[key] = voter
                names.append(f"{{{key}}}")
            return listed(names)

        noun = "approval" if self.required == 1 else "approvals"
        approvals = f"{len(self.approvers)} of {self.required} {noun}"
        parts = [approvals + (f": {named(self.approvers)}" if self.approvers else "")]
        if self.declines_required > 1:
            declines = f"{len(self.decliners)} of {self.declines_required} declines"
            parts.append(declines + (f": {named(self.decliners)}" if self.decliners else ""))
        if self.stale:
            parts.append("votes given before the request changed no longer count")
        return Phrase("; ".join(parts), people)


def tally(votes: Sequence[Vote], digest: str, rule: Rule) -> Tally:
    """The votes on a request whose arguments' digest is `digest`, counted under `rule`."""
    counted = [vote for vote in votes if vote.arguments_digest == digest]
    declines = [vote for vote in counted if not vote.approve]
    return Tally(
        approvers=tuple(vote.voter for vote in counted if vote.approve),
        decliners=tuple(vote.voter for vote in declines),
        required=rule.required,
        declines_required=rule.declines_required,
        reasons=tuple(vote.reason or "" for vote in declines),
        stale=len(votes) - len(counted),
    )


class VoteBox(Protocol):
    """Where votes are kept: bot.store.votes.VoteTables (rows, for every worker), or
    `MemoryVotes` (one process, without a store)."""

    async def cast(self, vote: Vote, detail: Mapping[str, Any] | None = None) -> bool:
        """Keep `vote` (and audit it, where there is an audit log); False if this person
        has voted on the request already, on the same arguments."""
        ...

    async def votes(self, request_id: str) -> list[Vote]:
        """The request's votes, oldest first."""
        ...


class MemoryVotes:
    """Votes kept in this process only (a router without a store): of the latest `keep`
    requests voted on."""

    def __init__(self, keep: int = 10_000) -> None:
        self.keep = keep
        self._votes: OrderedDict[str, dict[str, Vote]] = OrderedDict()

    async def cast(self, vote: Vote, detail: Mapping[str, Any] | None = None) -> bool:
        mine = self._votes.setdefault(vote.request_id, {})
        self._votes.move_to_end(vote.request_id)
        given = mine.get(vote.voter)
        if given is not None and given.arguments_digest == vote.arguments_digest:
            return False
        mine[vote.voter] = vote
        while len(self._votes) > self.keep:
            self._votes.popitem(last=False)
        return True

    async def votes(self, request_id: str) -> list[Vote]:
        return sorted(self._votes.get(request_id, {}).values(), key=lambda vote: vote.at)
