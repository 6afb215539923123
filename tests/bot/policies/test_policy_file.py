"""The policy file: what it may say, and every error one line naming its file, line and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.errors import ConfigurationError
from bot.policies import (
    Destination,
    Escalation,
    Principal,
    load_policy_file,
    parse_destination,
    parse_principal,
)
from bot.policies.policy_file import DECLINE

ROOT = Path(__file__).resolve().parents[3]
AAD_USER = "7a1c3e5f-0b2d-4f6a-8c9e-1d3f5b7a9c0e"
ENTRA_GROUP = "3f2c9a4e-6b1d-4e8a-9c7f-2d5b8e1a0c64"


def written(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    return path


def a_rule(tmp_path: Path, *lines: str, match: str = "{tool: deploy}") -> Path:
    """A file of one rule: `match` on line 2, then `lines` from line 3."""
    return written(tmp_path, f"rules:\n  - match: {match}\n" + "".join(f"    {x}\n" for x in lines))


def error_of(path: Path) -> str:
    with pytest.raises(ConfigurationError) as failed:
        load_policy_file(path)
    message = str(failed.value)
    assert "\n" not in message
    return message


def test_the_contract_s_example_reads(tmp_path: Path) -> None:
    path = written(tmp_path, f"""\
rules:
  - match: {{tool: "deploy*", arguments: {{env: production}}}}
    approvers: [slack:U0BOB00001, slack:S0OPSTEAM, teams:{AAD_USER}, entra:{ENTRA_GROUP}]
    required: 2                 # approvals needed (default 1)
    allow_self: false           # may the turn's actor approve? (default true)
    timeout_seconds: 3600
    on_timeout: decline
    escalate:
      - {{after_seconds: 900, remind: true}}
      - {{after_seconds: 1800, approvers: [slack:S0SRELEADS]}}
    deliver: [thread, approvers_dm, slack:C0APPROVALS]
  - match: {{tool: "*"}}
    approvers: [actor]
""")  # fmt: skip
    policy = load_policy_file(path)
    deploys, rest = policy.rules
    assert deploys.match.tool == "deploy*" and deploys.match.arguments == {"env": "production"}
    assert deploys.approvers == (
        Principal("user", "slack", "U0BOB00001"),
        Principal("slack_group", "slack", "S0OPSTEAM"),
        Principal("user", "teams", AAD_USER),
        Principal("entra_group", "teams", ENTRA_GROUP),
    )
    assert (deploys.required, deploys.declines_required, deploys.allow_self) == (2, 1, False)
    assert deploys.timeout_seconds == 3600 and deploys.on_timeout.declines
    assert deploys.escalate == (
        Escalation(after_seconds=900, remind=True),
        Escalation(
            after_seconds=1800, approvers=(Principal("slack_group", "slack", "S0SRELEADS"),)
        ),
    )
    assert [str(place) for place in deploys.deliver] == [
        "thread",
        "approvers_dm",
        "slack:C0APPROVALS",
    ]
    assert rest.approvers == (parse_principal("actor"),)
    assert (rest.required, rest.allow_self, rest.timeout_seconds) == (1, True, None)
    assert policy.drivers == ()  # anyone may drive the agent
    assert rest.on_timeout == DECLINE and rest.deliver == (Destination("thread"),)
    assert policy.where("rules", 0, "escalate", 1) == f"{path}:10"


def test_an_answer_at_timeout_and_declines(tmp_path: Path) -> None:
    path = written(tmp_path, """\
rules:
  - match: {tool: confirm_restart, arguments: {service: [ledger, payments-api], dry_run: false}}
    approvers: [slack:U0BOB00001, slack:U0ANN00002, slack:U0CAT00003]
    required: 2
    declines_required: 2
    timeout_seconds: 90.5
    on_timeout: {answer: {confirmed: false, reason: nobody answered}}
    deliver: [thread, "teams:19:abc123@thread.tacv2"]
""")  # fmt: skip
    (rule,) = load_policy_file(path).rules
    assert rule.match.arguments == {"service": ("ledger", "payments-api"), "dry_run": False}
    assert rule.declines_required == 2 and rule.timeout_seconds == 90.5
    assert rule.on_timeout.answer == {"confirmed": False, "reason": "nobody answered"}
    assert not rule.on_timeout.declines
    assert rule.deliver[1] == Destination("teams_conversation", "19:abc123@thread.tacv2")


def test_the_example_policy_reads() -> None:
    policy = load_policy_file(ROOT / "examples" / "policy.yaml")
    production = policy.rules[0]
    assert not production.allow_self
    assert all(approver.is_group for approver in production.approvers)
    assert policy.rules[-1].match.tool == "*"


def test_a_missing_key(tmp_path: Path) -> None:
    path = a_rule(tmp_path, "required: 1")
    assert error_of(path) == f"{path}:2: rules[0].approvers: a required key is missing"


def test_a_wrong_type(tmp_path: Path) -> None:
    path = a_rule(tmp_path, "approvers: [actor]", "required: two")
    assert error_of(path) == f"{path}:4: rules[0].required: Input should be a valid integer"


def test_a_boolean_is_no_number(tmp_path: Path) -> None:
    path = a_rule(tmp_path, "approvers: [actor]", "timeout_seconds: true")
    assert error_of(path) == f"{path}:4: rules[0].timeout_seconds: Input should be a valid number"


def test_a_bad_principal(tmp_path: Path) -> None:
    path = written(tmp_path, """\
rules:
  - match: {tool: deploy}
    approvers:
      - slack:U0BOB00001
      - slack:C0APPROVALS
""")  # fmt: skip
    assert error_of(path).startswith(
        f"{path}:5: rules[0].approvers[1]: 'slack:C0APPROVALS' is not a principal: write actor, "
    )


@pytest.mark.parametrize(
    "text",
    ["slack:u0bob00001", "teams:not-a-guid", "entra:S0OPSTEAM", "bob", "slack:", "actor:x", 5],
)
def test_what_is_no_principal(tmp_path: Path, text: object) -> None:
    path = a_rule(tmp_path, f"approvers: [{text}]")
    assert error_of(path).startswith(f"{path}:3: rules[0].approvers[0]: ")


def test_a_bad_destination(tmp_path: Path) -> None:
    path = a_rule(tmp_path, "approvers: [actor]", "deliver: [thread, slack:U0BOB00001]")
    assert error_of(path) == (
        f"{path}:4: rules[0].deliver[1]: 'slack:U0BOB00001' is not a destination: write thread, "
        "approvers_dm, slack:C… (a channel) or teams:<conversation id>"
    )


def test_more_approvals_required_than_the_approvers_can_give(tmp_path: Path) -> None:
    path = written(tmp_path, """\
rules:
  - match: {tool: deploy}
    approvers: [actor, slack:U0BOB00001, slack:U0BOB00001]
    required: 3
""")  # fmt: skip
    assert error_of(path) == (
        f"{path}:4: rules[0].required: 3 approvals are required but the approvers name "
        "2 people: list more, or a group"
    )


def test_more_declines_required_than_the_approvers_can_give(tmp_path: Path) -> None:
    path = a_rule(tmp_path, "approvers: slack:U0BOB00001", "declines_required: 2")
    assert error_of(path) == (
        f"{path}:4: rules[0].declines_required: 2 declines are required but the approvers name "
        "1 person: list more, or a group"
    )


def test_a_group_can_give_any_number_of_approvals(tmp_path: Path) -> None:
    path = a_rule(tmp_path, "approvers: [slack:S0OPSTEAM]", "required: 5")
    assert load_policy_file(path).rules[0].required == 5


def test_an_unknown_key(tmp_path: Path) -> None:
    path = a_rule(tmp_path, "approvers: [actor]", "requierd: 2")
    assert error_of(path) == f"{path}:4: rules[0].requierd: unknown key"


def test_the_actor_excluded_but_listed(tmp_path: Path) -> None:
    path = a_rule(tmp_path, "approvers: [actor, slack:S0OPS]", "allow_self: false")
    assert error_of(path) == (
        f"{path}:4: rules[0].allow_self: false, but `actor` is among the approvers: "
        "remove one of them"
    )


@pytest.mark.parametrize(
    ("escalate", "message"),
    [
        ("[{after_seconds: 60}]", "rules[0].escalate[0]: an escalation reminds (remind: true), "
         "adds approvers, or both"),
        ("[{after_seconds: 0, remind: true}]", "rules[0].escalate[0].after_seconds: "
         "Input should be greater than 0"),
        ("[{after_seconds: 600, remind: true}, {after_seconds: 300, remind: true}]",
         "rules[0].escalate: list escalations in the order they happen: 300 seconds comes "
         "after 600"),
        ("[{after_seconds: 3600, remind: true}]", "rules[0].escalate: an escalation after 3600 "
         "seconds would never happen: timeout_seconds is 3600"),
    ],
)  # fmt: skip
def test_escalations_that_cannot_be(tmp_path: Path, escalate: str, message: str) -> None:
    path = a_rule(tmp_path, "approvers: [actor]", "timeout_seconds: 3600", f"escalate: {escalate}")
    assert error_of(path) == f"{path}:5: {message}"


def test_an_escalation_to_the_actor_under_four_eyes(tmp_path: Path) -> None:
    path = a_rule(
        tmp_path, "approvers: [slack:S0OPSTEAM]", "allow_self: false",
        "escalate:", "  - {after_seconds: 60, remind: true}",
        "  - {after_seconds: 90, approvers: [actor]}",
    )  # fmt: skip
    assert error_of(path) == (
        f"{path}:5: rules[0].escalate: an escalation adds `actor`, but allow_self is false: "
        "remove one of them"
    )


def test_escalations_in_order_without_a_timeout(tmp_path: Path) -> None:
    """Without timeout_seconds any increasing offsets are read (the bridge's own deadline
    cuts off the steps after it, request by request)."""
    path = a_rule(
        tmp_path, "approvers: [slack:S0OPSTEAM]",
        "escalate: [{after_seconds: 0.25, remind: true}, {after_seconds: 86400, approvers: "
        "[slack:U0BOB00001], remind: true}]",
    )  # fmt: skip
    (rule,) = load_policy_file(path).rules
    assert [step.after_seconds for step in rule.escalate] == [0.25, 86400]
    assert [str(p) for p in rule.escalate[1].approvers] == ["slack:U0BOB00001"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("on_timeout: expire", "rules[0].on_timeout: must be decline or {answer: {...}}"),
        ("on_timeout: {}", "rules[0].on_timeout.answer: a required key is missing"),
        ("drivers: [slack:S0OPSTEAM]", "rules[0].drivers: who may drive the agent is said by "
         "room, not by rule: move it to the file's top-level `drivers:` ({room: <glob>, "
         "users: [...]})"),
        ("approvers: []", "rules[0].approvers: list at least one"),
        ("timeout_seconds: 1000000", "rules[0].timeout_seconds: Input should be less than or "
         "equal to 604800"),
    ],
)  # fmt: skip
def test_other_settings_that_cannot_be(tmp_path: Path, line: str, message: str) -> None:
    if line.startswith("approvers"):
        path = a_rule(tmp_path, line)
        assert error_of(path) == f"{path}:3: {message}"
    else:
        path = a_rule(tmp_path, "approvers: [actor]", line)
        assert error_of(path) == f"{path}:4: {message}"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ("{env: {name: production}}", "match a string, a number, true, false or null, "
         "or a list of them"),
        ("{env: []}", "an empty list matches nothing: list the values to match"),
    ],
)  # fmt: skip
def test_argument_values_that_cannot_be_matched(
    tmp_path: Path, arguments: str, message: str
) -> None:
    path = a_rule(tmp_path, "approvers: [actor]", match=f"{{tool: deploy, arguments: {arguments}}}")
    assert error_of(path) == f"{path}:2: rules[0].match.arguments.env: {message}"


def test_no_rules(tmp_path: Path) -> None:
    path = written(tmp_path, "rules: []\n")
    assert error_of(path) == f"{path}:1: rules: list at least one"


def test_invalid_yaml_and_a_missing_file(tmp_path: Path) -> None:
    path = written(tmp_path, "rules:\n  - match: {tool: *}\n")
    assert error_of(path).startswith(f"{path}:2: not valid YAML: ")
    assert error_of(tmp_path / "nowhere.yaml") == (
        f"{tmp_path / 'nowhere.yaml'}: the policy file does not exist"
    )


def test_principals_and_destinations_read_back_as_written() -> None:
    principals = ["actor", "slack:U0BOB00001", "slack:W0BOB00001", "slack:S0OPSTEAM"]
    for text in [*principals, f"teams:{AAD_USER}", f"entra:{ENTRA_GROUP}"]:
        assert str(parse_principal(text)) == text
    assert parse_principal(f"teams:{AAD_USER.upper()}").id == AAD_USER  # as Teams sends it
    for text in ["thread", "approvers_dm", "slack:C0APPROVALS", "teams:19:x@thread.tacv2"]:
        assert str(parse_destination(text)) == text


def test_drivers_by_room(tmp_path: Path) -> None:
    path = written(tmp_path, f"""\
rules:
  - match: {{tool: "*"}}
    approvers: [actor]
drivers:
  - room: "slack:C0OPS0001:*"
    users: [slack:S0OPSTEAM, slack:U0BOB00001, entra:{ENTRA_GROUP}]
  - {{room: "teams:*", users: teams:{AAD_USER}}}
""")  # fmt: skip
    first, teams = load_policy_file(path).drivers
    assert first.room == "slack:C0OPS0001:*"
    assert [str(user) for user in first.users] == [
        "slack:S0OPSTEAM", "slack:U0BOB00001", f"entra:{ENTRA_GROUP}",
    ]  # fmt: skip
    assert teams.users == (Principal("user", "teams", AAD_USER),)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("{room: 'slack:*', users: [actor]}", "drivers[0].users: `actor` is whoever drives the "
         "agent: name people or groups"),
        ("{room: 'slack:*', users: []}", "drivers[0].users: list at least one"),
        ("{room: '', users: [slack:U0BOB00001]}", "drivers[0].room: String should have at least "
         "1 character"),
        ("{users: [slack:U0BOB00001]}", "drivers[0].room: a required key is missing"),
    ],
)  # fmt: skip
def test_drivers_that_cannot_be(tmp_path: Path, entry: str, message: str) -> None:
    path = written(tmp_path, f"rules:\n  - match: {{tool: '*'}}\n    approvers: [actor]\n"
                             f"drivers:\n  - {entry}\n")  # fmt: skip
    assert error_of(path) == f"{path}:5: {message}"
