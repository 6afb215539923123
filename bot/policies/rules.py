"""Which rule a call asks under: the policy file's first match, else today's rule."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any

from pydantic import ValidationError

from bot.human_tools.tool import BUILTIN_TOOLS
from bot.policies.destinations import APPROVERS_DM, THREAD
from bot.policies.policy_file import Drivers, Match, PolicyFile, Rule, load_policy_file
from bot.policies.principals import ACTOR, configured_user


class Policy:
    """The rules, in order, and the rule of a call no rule matches: today's rule (the actor,
    HITL_APPROVERS and HITL_ADMINS; one approval; the actor may approve). Without a policy file
    every call gets it, so a bridge without one behaves as it always has; with one, a call its
    rules do not match gets it too (end the file with `match: {tool: "*"}` to say otherwise).

    Admins (HITL_ADMINS) may answer any request on top of whatever its rule says: a request
    whose approvers are away can always be settled by someone. Checking who answers is the
    router's, at click time; this only says which rule applies.
    """

    def __init__(
        self,
        rules: Sequence[Rule],
        fallback: Rule,
        admins: frozenset[str] = frozenset(),
        drivers: Sequence[Drivers] = (),
    ) -> None:
        self.rules = tuple(rules)
        self.fallback = fallback
        self.admins = admins
        self.drivers = tuple(drivers)  # who may drive the agent, by room (none: anyone)

    @classmethod
    def default(cls, approvers: frozenset[str], admins: frozenset[str]) -> Policy:
        """No policy file: today's rule for every call."""
        return cls((), default_rule(approvers, admins), admins)

    @classmethod
    def from_file(
        cls, file: PolicyFile, approvers: frozenset[str], admins: frozenset[str]
    ) -> Policy:
        """The file's rules, then today's rule for calls none of them matches.
        ConfigurationError (file:line) for a default answer or a delivery that cannot work."""
        for index, rule in enumerate(file.rules):
            unfit = default_answer_error(rule)
            if unfit is not None:
                raise file.error(("rules", index, "on_timeout", "answer"), unfit)
            undeliverable = delivery_error(rule)
            if undeliverable is not None:
                raise file.error(("rules", index, "deliver"), undeliverable)
        return cls(file.rules, default_rule(approvers, admins), admins, file.drivers)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str] | None,
        approvers: frozenset[str],
        admins: frozenset[str],
    ) -> Policy:
        """The policy of HITL_POLICY_FILE (None: unset); ConfigurationError if it is wrong."""
        if path is None:
            return cls.default(approvers, admins)
        return cls.from_file(load_policy_file(path), approvers, admins)

    def rule_for(self, tool_name: str, arguments: Mapping[str, Any]) -> Rule:
        """The first rule matching the call (for an approval gate, the gated tool's name and
        arguments; for a human tool, its own), else the fallback."""
        for rule in self.rules:
            if matches(rule.match, tool_name, arguments):
                return rule
        return self.fallback


def delivery_error(rule: Rule) -> str | None:
    """What this version cannot deliver of the rule's `deliver`: the request is always shown
    in its own conversation (where it was asked; a failure there is what makes it
    undeliverable), and a Teams user's direct message needs a personal conversation the bot
    cannot open yet. (Groups get no direct messages: `approvers_dm` is for the users named.)"""
    if THREAD not in rule.deliver:
        return "list thread: a request is always shown in the conversation that asked for it"
    if APPROVERS_DM not in rule.deliver:
        return None
    users = [p for p in rule.approvers if p.kind == "user"]
    if not users:
        return "approvers_dm, but the approvers name no user (groups get no direct message)"
    teams = [str(p) for p in users if p.surface == "teams"]
    if teams:
        return (f"approvers_dm cannot reach Teams users ({', '.join(teams)}): this version "
                "cannot open a personal Teams conversation; deliver to teams:<conversation "
                "id> instead")  # fmt: skip
    return None


def default_answer_error(rule: Rule) -> str | None:
    """What is wrong with the rule's `on_timeout` answer, when its match names one built-in
    human tool (exactly, no glob) whose answer model is known without the call's arguments.
    Any other default is checked at the deadline, and one that does not fit expires the
    request unanswered (with a warning): a gated tool's rule cannot tell it is gated here."""
    answer = rule.on_timeout.answer
    tool = BUILTIN_TOOLS.get(rule.match.tool)
    if answer is None or tool is None or tool.answer is None:
        return None
    try:
        tool.answer.model_validate(answer)
    except ValidationError as err:
        wrong = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'answer'}: {e['msg']}"
                          for e in err.errors())  # fmt: skip
        return f"not an answer of {tool.name}: {wrong}"
    return None


def default_rule(approvers: frozenset[str], admins: frozenset[str]) -> Rule:
    """Today's rule: the actor, HITL_APPROVERS and HITL_ADMINS (bare ids, any surface)."""
    users = tuple(configured_user(user_id) for user_id in sorted(approvers | admins))
    return Rule(match=Match(tool="*"), approvers=(ACTOR, *users))


def matches(match: Match, tool_name: str, arguments: Mapping[str, Any]) -> bool:
    """The tool's name fits the glob (case counts) and each listed argument has the value
    given, or one of a list's; an argument the call does not give matches nothing."""
    if not fnmatchcase(tool_name, match.tool):
        return False
    for name, wanted in match.arguments.items():
        if name not in arguments:
            return False
        options = wanted if isinstance(wanted, tuple) else (wanted,)
        if not any(_same(arguments[name], option) for option in options):
            return False
    return True


def _same(given: Any, wanted: Any) -> bool:
    """Equal, a boolean only to a boolean: `True == 1` in Python, but not in a policy."""
    if isinstance(given, bool) or isinstance(wanted, bool):
        return isinstance(given, bool) and isinstance(wanted, bool) and given == wanted
    return bool(given == wanted)
