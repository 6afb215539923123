"""Who may answer a request, under its policy rule: checked by the router at click time.

A request's rule is the policy's for its subject: an approval gate's gated tool and arguments,
a human tool's own name and arguments. Someone may answer when they are an admin, or one of
the rule's approvers: a named user, a member of a named group (read through the Directory,
briefly cached), or the actor when the rule lists `actor` (a request without an actor is then
anyone's in its conversation, as it always was). Under `allow_self: false` the actor may not
answer their own request (four-eyes), whoever else they are. A group that cannot be read
lets nobody in through it, and the refusal says so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.policies.directory import Directory, GroupUnreadable
from bot.policies.escalation import Audience, Fired, approvers_after, audience
from bot.policies.policy_file import Rule
from bot.policies.principals import Principal
from bot.policies.rules import Policy
from bot.records import RequestRecord
from bot.words.phrases import Phrase
from bot.words.tool_names import GATE_TOOL

SHOWN = 3  # approvers a refusal names before "and others"


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether a person may answer; `notice` says privately why not."""

    allowed: bool
    notice: Phrase | None = None


ALLOWED = Verdict(True)


class Deciders:
    """Who may answer each request (see the module's docstring)."""

    def __init__(self, policy: Policy, directory: Directory | None = None) -> None:
        self.policy = policy
        self.directory = directory

    def rule(self, record: RequestRecord) -> Rule:
        return self.rule_of(record.tool_name, record.arguments)

    def rule_of(self, tool_name: str, arguments: Mapping[str, Any]) -> Rule:
        """The rule of a request about to be made with `tool_name` and `arguments`."""
        return self.policy.rule_for(*subject_of(tool_name, arguments))

    def lifetime(self, tool_name: str, arguments: dict[str, Any]) -> float | None:
        """The rule's `timeout_seconds` for such a request (None: the caller's own);
        `RequestRules.lifetime` (bot/human_input/rules.py)."""
        return self.rule_of(tool_name, arguments).timeout_seconds

    def expiry_answer(self, tool_name: str, arguments: dict[str, Any]) -> str | None:
        """The rule's `on_timeout` answer for such a request, as JSON (None: it expires
        unanswered); `RequestRules.expiry_answer`; the handler checks it against the tool."""
        answer = self.rule_of(tool_name, arguments).on_timeout.answer
        return None if answer is None else json.dumps(answer, ensure_ascii=False)

    async def check(self, record: RequestRecord, users: Sequence[str]) -> Verdict:
        """May the person known by `users` (their id, then its aliases) answer `record`?"""
        rule = self.rule(record)
        ids = [user for user in users if user]
        if record.actor_id is not None and record.actor_id in ids and not rule.allow_self:
            return Verdict(False, Phrase("This needs someone other than you to answer: you "
                                         "asked for it."))  # fmt: skip
        if any(user in self.policy.admins for user in ids):
            return ALLOWED
        unreadable: list[GroupUnreadable] = []
        approvers = approvers_after(rule, record.escalation_step)  # with those escalated to
        for principal in approvers:
            try:
                if await self._holds(principal, record, ids):
                    return ALLOWED
            except GroupUnreadable as err:
                unreadable.append(err)
        if unreadable:
            said = str(unreadable[0])
            why = Phrase("{why}: nobody can answer through it until it can be read.",
                         values={"why": said[:1].upper() + said[1:]})  # fmt: skip
            return Verdict(False, why)
        return Verdict(False, refusal(approvers, record, rule is self.policy.fallback))

    def escalation_start(self, tool_name: str, arguments: dict[str, Any]) -> float | None:
        """Seconds from creation to the first escalation step of such a request's rule (None:
        it has none); `RequestRules.escalation_start`."""
        steps = self.rule_of(tool_name, arguments).escalate
        return steps[0].after_seconds if steps else None

    def audience(self, record: RequestRecord, fired: Fired | None = None) -> Audience | None:
        """Who may answer `record` and how far its escalation went, as its message shows
        them (`fired`: the step just fired); None under today's rule (no policy says)."""
        rule = self.rule(record)
        if rule is self.policy.fallback:
            return None
        return audience(rule, record.escalation_step, fired)

    async def _holds(self, principal: Principal, record: RequestRecord, ids: list[str]) -> bool:
        if principal.kind == "actor":
            return record.actor_id is None or record.actor_id in ids
        if principal.kind == "user":
            return principal.id in ids
        if self.directory is None:
            raise GroupUnreadable(str(principal), "no directory of groups is configured")
        for user in ids:
            if await self.directory.is_member(user, str(principal)):
                return True
        return False


def subject(record: RequestRecord) -> tuple[str, Mapping[str, Any]]:
    """The call a request is about: the gated tool's, for an approval gate."""
    return subject_of(record.tool_name, record.arguments)


def subject_of(tool_name: str, arguments: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    if tool_name == GATE_TOOL:
        tool, gated = arguments.get("tool"), arguments.get("arguments")
        return (str(tool or ""), gated if isinstance(gated, Mapping) else {})
    return tool_name, arguments


def not_yours(record: RequestRecord) -> Phrase:
    """The private notice to someone who may not answer, under today's rule."""
    if record.actor_id is None:
        return Phrase("You may not answer this request.")
    return Phrase(
        "This request is for {actor}: only they, an approver or an admin can answer it.",
        {"actor": record.actor_id},
    )


def refusal(approvers: Sequence[Principal], record: RequestRecord, default: bool = False) -> Phrase:
    """The private notice to someone the rule's `approvers` (with those its escalation added)
    do not include: who may. Under today's rule (`default`), today's words."""
    if default or tuple(approvers) == (Principal("actor"),):
        return not_yours(record)
    people: dict[str, str] = {}
    names: list[str] = []
    for n, principal in enumerate(p for p in approvers if p.kind != "actor"):
        if n == SHOWN:
            names.append("others")
            break
        if principal.kind == "user":
            key = f"person_{'abc'[n]}"  # a placeholder is letters and underscores
            people[key] = principal.id
            names.append(f"{{{key}}}")
        else:
            names.append(f"the group {principal}")
    if any(p.kind == "actor" for p in approvers) and record.actor_id:
        people["actor"] = record.actor_id
        names.insert(0, "{actor}")
    listed = ", ".join(names[:-1]) + (" or " if len(names) > 1 else "") + names[-1]
    return Phrase(f"Only {listed} may answer this request.", people)
