"""Which rule a call asks under: the first match, by tool glob and argument values; else today's."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.errors import ConfigurationError
from bot.policies import Policy, Principal, Rule, load_policy_file

ROOT = Path(__file__).resolve().parents[3]
APPROVERS = frozenset({"U0ANN00002"})
ADMINS = frozenset({"U0ADM00009"})


def policy_of(tmp_path: Path, text: str) -> Policy:
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    return Policy.from_file(load_policy_file(path), APPROVERS, ADMINS)


def index_of(policy: Policy, rule: Rule) -> int | None:
    return next((i for i, mine in enumerate(policy.rules) if mine is rule), None)


RULES = """\
rules:
  - match: {tool: "deploy*", arguments: {env: production}}
    approvers: [slack:S0OPSTEAM]
  - match: {tool: "deploy*", arguments: {env: [staging, development], force: true}}
    approvers: [slack:U0BOB00001]
  - match: {tool: "deploy*"}
    approvers: [actor, slack:U0BOB00001]
  - match: {tool: "restart", arguments: {replicas: 3}}
    approvers: [slack:U0CAT00003]
  - match: {tool: "Ask*"}
    approvers: [actor]
"""


@pytest.mark.parametrize(
    ("tool", "arguments", "index"),
    [
        ("deploy", {"env": "production", "service": "ledger"}, 0),  # first match wins
        ("deploy_canary", {"env": "production"}, 0),  # the glob
        ("deploy", {"env": "staging", "force": True}, 1),  # one of a list, and both arguments
        ("deploy", {"env": "development", "force": True}, 1),
        ("deploy", {"env": "staging", "force": 1}, 2),  # 1 is no boolean
        ("deploy", {"env": "staging"}, 2),  # an argument not given matches nothing
        ("deploy", {"env": "qa", "force": True}, 2),
        ("deploy", {"env": ["production"]}, 2),  # a list given equals no one value
        ("restart", {"replicas": 3.0}, 3),  # numbers are numbers
        ("restart", {"replicas": "3"}, None),  # a string is no number
        ("AskUserQuestion", {}, 4),
        ("askUserQuestion", {}, None),  # case counts
        ("Deploy", {"env": "production"}, None),
        ("status", {"service": "ledger"}, None),  # no match: today's rule
    ],
)
def test_the_first_matching_rule(
    tmp_path: Path, tool: str, arguments: dict[str, object], index: int | None
) -> None:
    policy = policy_of(tmp_path, RULES)
    rule = policy.rule_for(tool, arguments)
    assert index_of(policy, rule) == index
    if index is None:
        assert rule is policy.fallback


def test_without_a_file_today_s_rule_for_every_call() -> None:
    policy = Policy.default(APPROVERS, ADMINS)
    rule = policy.rule_for("deploy", {"env": "production"})
    assert policy.rules == () and rule is policy.fallback
    assert [str(approver) for approver in rule.approvers] == ["actor", "U0ADM00009", "U0ANN00002"]
    assert rule.approvers[1] == Principal("user", None, "U0ADM00009")  # any surface, as today
    assert (rule.required, rule.declines_required, rule.allow_self) == (1, 1, True)
    assert rule.timeout_seconds is None and rule.on_timeout.declines and policy.drivers == ()
    assert [str(place) for place in rule.deliver] == ["thread"]
    assert policy.admins == ADMINS


def test_with_a_file_a_call_no_rule_matches_gets_today_s_rule(tmp_path: Path) -> None:
    policy = policy_of(tmp_path, RULES)
    assert policy.rule_for("status", {}) == Policy.default(APPROVERS, ADMINS).fallback
    assert policy.admins == ADMINS  # admins answer on top of any rule


def test_the_example_policy(tmp_path: Path) -> None:
    policy = Policy.load(ROOT / "examples" / "policy.yaml", APPROVERS, ADMINS)
    production = policy.rule_for(
        "deploy", {"service": "ledger", "version": "v2", "env": "production"}
    )
    assert not production.allow_self and str(production.approvers[0]) == "slack:S0OPSTEAM"
    assert [step.after_seconds for step in production.escalate] == [900, 1800]  # enforced
    assert policy.rule_for("deploy", {"env": "staging"}).approvers[0] == Principal("actor")
    assert len(policy.rule_for("rollback", {"service": "ledger"}).approvers) == 2
    anything = policy.rule_for("status", {"service": "ledger"})
    assert anything.approvers == (Principal("actor"),) and anything is not policy.fallback


VOTES = """\
rules:
  - match: {tool: deploy}
    approvers: [slack:S0OPSTEAM]
    required: 2
    declines_required: 2
"""


def test_votes_are_enforced_so_a_rule_may_ask_for_them(tmp_path: Path) -> None:
    rule = policy_of(tmp_path, VOTES).rule_for("deploy", {})
    assert (rule.required, rule.declines_required) == (2, 2)


def test_escalations_are_enforced_so_a_rule_may_ask_for_them(tmp_path: Path) -> None:
    rule = policy_of(
        tmp_path,
        """\
rules:
  - match: {tool: deploy}
    approvers: [slack:S0OPSTEAM]
    timeout_seconds: 3600
    escalate:
      - {after_seconds: 900, remind: true}
      - {after_seconds: 1800, approvers: [slack:S0SRELEADS]}
""",
    ).rule_for("deploy", {})
    assert [step.after_seconds for step in rule.escalate] == [900, 1800]


def test_load_without_a_file_and_with_a_wrong_one(tmp_path: Path) -> None:
    assert Policy.load(None, APPROVERS, ADMINS).rules == ()
    path = tmp_path / "policy.yaml"
    path.write_text("rules:\n  - match: {tool: deploy}\n")
    with pytest.raises(ConfigurationError, match=r"policy.yaml:2: rules\[0\].approvers: "):
        Policy.load(path, APPROVERS, ADMINS)


def test_an_on_timeout_answer_is_read_and_checked_against_the_tool_it_names(
    tmp_path: Path,
) -> None:
    policy = policy_of(
        tmp_path,
        """\
rules:
  - match: {tool: requestApproval}
    approvers: [slack:S0OPS0001]
    on_timeout: {answer: {approved: false, reason: nobody answered}}
  - match: {tool: "deploy*"}
    approvers: [slack:S0OPS0001]
    on_timeout: {answer: {approved: true}}
""",
    )
    assert policy.rules[0].on_timeout.answer == {"approved": False, "reason": "nobody answered"}
    # A glob names no one tool: its default is checked at the deadline, not here.
    assert policy.rules[1].on_timeout.answer == {"approved": True}


def test_an_on_timeout_answer_that_does_not_fit_the_built_in_tool_is_refused(
    tmp_path: Path,
) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("rules:\n  - match: {tool: confirmAction}\n    approvers: [actor]\n"
                    "    on_timeout: {answer: {approved: false}}\n")  # fmt: skip
    with pytest.raises(ConfigurationError) as refused:
        Policy.load(path, APPROVERS, ADMINS)
    message = str(refused.value)
    assert message.startswith(f"{path}:4: rules[0].on_timeout.answer: not an answer of "
                              "confirmAction: confirmed: Field required")  # fmt: skip


def test_deliver_is_enforced_so_a_rule_may_ask_for_copies(tmp_path: Path) -> None:
    policy = policy_of(tmp_path, """\
rules:
  - match: {tool: deploy}
    approvers: [slack:U0BOB00001, slack:S0OPSTEAM]
    deliver: [thread, approvers_dm, slack:C0APPROVALS, "teams:19:ops@thread.tacv2"]
""")  # fmt: skip
    rule = policy.rule_for("deploy", {})
    assert [str(place) for place in rule.deliver] == [
        "thread", "approvers_dm", "slack:C0APPROVALS", "teams:19:ops@thread.tacv2",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ("approvers: [slack:U0BOB00001]\n    deliver: [slack:C0APPROVALS]",
         "list thread: a request is always shown in the conversation that asked for it"),
        ("approvers: [slack:U0BOB00001, teams:7a1c3e5f-0b2d-4f6a-8c9e-1d3f5b7a9c0e]\n"
         "    deliver: [thread, approvers_dm]",
         "approvers_dm cannot reach Teams users (teams:7a1c3e5f-0b2d-4f6a-8c9e-1d3f5b7a9c0e): "
         "this version cannot open a personal Teams conversation; deliver to "
         "teams:<conversation id> instead"),
        ("approvers: [actor, slack:S0OPSTEAM]\n    deliver: [thread, approvers_dm]",
         "approvers_dm, but the approvers name no user (groups get no direct message)"),
    ],
)  # fmt: skip
def test_deliveries_this_version_cannot_make_are_refused(
    tmp_path: Path, lines: str, message: str
) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(f"rules:\n  - match: {{tool: deploy}}\n    {lines}\n")
    with pytest.raises(ConfigurationError) as refused:
        Policy.load(path, APPROVERS, ADMINS)
    assert str(refused.value) == f"{path}:4: rules[0].deliver: {message}"


def test_drivers_are_the_policy_s(tmp_path: Path) -> None:
    policy = policy_of(
        tmp_path, RULES + 'drivers:\n  - {room: "slack:C0OPS*", users: slack:S0OPSTEAM}\n'
    )
    (drivers,) = policy.drivers
    assert drivers.room == "slack:C0OPS*"
    assert Policy.default(APPROVERS, ADMINS).drivers == ()
