"""Which rule a call asks under: the policy file's first match, else today's rule."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any

from pydantic import ValidationError

from bot.human_tools import BUILTIN_TOOLS
from bot.policies.destinations import THREAD
from bot.policies.policy_file import Match, PolicyFile, Rule, load_policy_file
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
        self, rules: Sequence[Rule], fallback: Rule, admins: frozenset[str] = frozenset()
    ) -> None:
        self.rules = tuple(rules)
        self.fallback = fallback
        self.admins = admins

    @classmethod
    def default(cls, approvers: frozenset[str], admins: frozenset[str]) -> Policy:
        """No policy file: today's rule for every call."""
        return cls((), default_rule(approvers, admins), admins)

    @classmethod
    def from_file(
        cls, file: PolicyFile, approvers: frozenset[str], admins: frozenset[str]
    ) -> Policy:
        """The file's rules, then today's rule for calls none of them matches.
        ConfigurationError (file:line) for a part this version reads but does not enforce yet:
        a rule that sets a deadline must never wait without one."""
        for index, rule in enumerate(file.rules):
            unenforced = not_enforced(rule)
            if unenforced is not None:
                raise file.error(("rules", index, unenforced),
                                 "not enforced by this version yet: remove it")  # fmt: skip
            unfit = default_answer_error(rule)
            if unfit is not None:
                raise file.error(("rules", index, "on_timeout", "answer"), unfit)
        return cls(file.rules, default_rule(approvers, admins), admins)

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


def not_enforced(rule: Rule) -> str | None:
    """The first field of `rule` set to what this version does not enforce yet (who may
    answer, `allow_self`, `timeout_seconds`, `required`, `declines_required`, `on_timeout`
    and `escalate` are; delivery and drivers are to come)."""
    unset = {
        "deliver": rule.deliver == (THREAD,),
        "drivers": rule.drivers is None,
    }
    return next((name for name, default in unset.items() if not default), None)


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
