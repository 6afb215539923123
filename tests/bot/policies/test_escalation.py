"""bot/policies/escalation.py: who may answer once steps fired, when the next is due (never at or
after the deadline), and the words of the status line and of a step's one extra message."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.policies import Escalation, Match, Rule, parse_principal
from bot.policies.escalation import approvers_after, audience, fired_step, step_at
from bot.words.phrases import duration

BOB = "U0BOB00001"
CAROL = "U0CAROL001"
RULE = Rule(
    match=Match(tool="deploy"),
    approvers=(parse_principal(f"slack:{BOB}"), parse_principal("slack:S0OPSTEAM")),
    required=2,
    escalate=(
        Escalation(after_seconds=900, remind=True),
        Escalation(after_seconds=1800, approvers=(parse_principal(f"slack:{CAROL}"),)),
        Escalation(after_seconds=2700, approvers=(parse_principal(f"slack:{BOB}"),), remind=True),
    ),
)
ACTOR_ONLY = Rule(
    match=Match(tool="*"),
    approvers=(parse_principal("actor"),),
    escalate=(Escalation(after_seconds=30, remind=True),),
)
T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def test_approvers_grow_with_the_steps_fired_each_named_once() -> None:
    assert [str(p) for p in approvers_after(RULE, 0)] == [f"slack:{BOB}", "slack:S0OPSTEAM"]
    assert approvers_after(RULE, 1) == approvers_after(RULE, 0)  # a reminder adds nobody
    assert [str(p) for p in approvers_after(RULE, 3)] == [
        f"slack:{BOB}", "slack:S0OPSTEAM", f"slack:{CAROL}",
    ]  # fmt: skip
    assert fired_step(RULE, 1).added == (parse_principal(f"slack:{CAROL}"),)
    assert fired_step(RULE, 2).added == ()  # Bob could answer already


def test_a_step_is_due_at_its_offset_unless_the_deadline_comes_first() -> None:
    assert step_at(RULE, 0, T0, None) == T0 + timedelta(minutes=15)
    assert step_at(RULE, 1, T0, T0 + timedelta(hours=1)) == T0 + timedelta(minutes=30)
    assert step_at(RULE, 1, T0, T0 + timedelta(minutes=30)) is None  # at the deadline: never
    assert step_at(RULE, 3, T0, None) is None  # no fourth step


def test_the_status_line_names_the_approvers_and_what_the_escalation_did() -> None:
    before = audience(RULE, 0)
    who = before.who("U0ALICE001")
    assert who is not None
    assert who.plain == f"Approvers: {BOB}, slack:S0OPSTEAM."
    assert before.notes() is None
    after = audience(RULE, 2)
    notes = after.notes()
    assert notes is not None
    assert notes.plain == (
        f"Escalated after 30 min to {CAROL}. Reminder: waiting 15 min for an answer."
    )
    assert audience(ACTOR_ONLY, 0).who("U0ALICE001") is None  # addressed to the actor already


def test_a_step_s_one_message() -> None:
    reminded = audience(RULE, 1, fired_step(RULE, 0)).ping("U0ALICE001", voted=[BOB])
    assert reminded is not None and reminded.plain == (
        "Reminder: slack:S0OPSTEAM: this request has waited 15 min for an answer."
    )
    added = audience(RULE, 2, fired_step(RULE, 1)).ping("U0ALICE001")
    assert added is not None
    assert added.plain == f"Escalated after 30 min: {CAROL} may now answer this request."
    assert added.people == {"added_a": CAROL}  # a placeholder: each surface mentions natively
    actor = audience(ACTOR_ONLY, 1, fired_step(ACTOR_ONLY, 0)).ping("U0ALICE001")
    assert actor is not None
    assert actor.plain == "Reminder: U0ALICE001: this request has waited 30 s for an answer."
    assert audience(RULE, 1).ping("U0ALICE001") is None  # nothing just fired


@pytest.mark.parametrize(
    ("seconds", "said"),
    [(0.3, "0.3 s"), (45, "45 s"), (900, "15 min"), (90, "2 min"), (3600, "1 h"),
     (5400, "1 h 30 min")],
)  # fmt: skip
def test_durations(seconds: float, said: str) -> None:
    assert duration(seconds) == said
