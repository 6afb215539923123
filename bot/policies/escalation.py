"""A rule's escalation steps, read for one request: who may answer it once
some of its steps have fired, when its next step is due, and what its message says.

```yaml
escalate:
  - {after_seconds: 900, remind: true}                      # remind whoever has not answered
  - {after_seconds: 1800, approvers: [slack:S0SRELEADS]}    # and let more people answer
```

Each step fires once, at its offset from the request's creation, while the request is open
and before its deadline (bot/durable/escalations.py fires them; the request's row counts them, so
every worker and a restart agree). Pure: nothing here reads a store or talks to a surface.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.policies.policy_file import Rule
from bot.policies.principals import ACTOR, Principal
from bot.words.phrases import Phrase, duration, listed, placeholders


def approvers_after(rule: Rule, fired: int) -> tuple[Principal, ...]:
    """The rule's approvers, then those its first `fired` steps added (each once)."""
    added = (principal for step in rule.escalate[:fired] for principal in step.approvers)
    return tuple(dict.fromkeys((*rule.approvers, *added)))


def step_at(
    rule: Rule, index: int, created_at: datetime, expires_at: datetime | None
) -> datetime | None:
    """When step `index` is due; None when there is no such step, or it would fall at or
    after the request's deadline (the request has expired by then: it never fires)."""
    if index >= len(rule.escalate):
        return None
    at = created_at + timedelta(seconds=rule.escalate[index].after_seconds)
    return at if expires_at is None or at < expires_at else None


@dataclass(frozen=True, slots=True)
class Fired:
    """A step that has just fired: what its one extra message announces."""

    index: int
    after_seconds: float
    remind: bool
    added: tuple[Principal, ...]  # approvers it added that were not approvers already


def fired_step(rule: Rule, index: int) -> Fired:
    step = rule.escalate[index]
    before = approvers_after(rule, index)
    added = tuple(p for p in dict.fromkeys(step.approvers) if p not in before)
    return Fired(index, step.after_seconds, step.remind, added)


@dataclass(frozen=True, slots=True)
class Audience:
    """Who may answer an open request under a policy rule (with the approvers its fired
    steps added) and how far its escalation went: drawn in its message's status line."""

    approvers: tuple[Principal, ...]
    escalated: tuple[Fired, ...] = ()  # the approvers steps fired so far, in order
    waited: float | None = None  # the offset of the latest reminder fired
    fired: Fired | None = None  # the step this update announces (one extra message)

    @property
    def named(self) -> bool:
        """Whether the message names the approvers: not when only the actor may answer
        (the message is addressed to them already)."""
        return self.approvers != (ACTOR,)

    def who(self, actor_id: str | None) -> Phrase | None:
        """`Approvers: @bob, @ops-team.`, or None when the message need not name them."""
        if not self.named:
            return None
        names, people = _named(self.approvers, actor_id, placeholders("approver"))
        return Phrase(f"Approvers: {', '.join(names)}.", people)

    def notes(self) -> Phrase | None:
        """What the escalation did so far: approvers added, the latest reminder."""
        parts: list[str] = []
        people: dict[str, str] = {}
        keys = placeholders("added")
        for step in self.escalated:
            names, named = _named(step.added, None, keys)
            people.update(named)
            parts.append(f"Escalated after {duration(step.after_seconds)} to {listed(names)}.")
        if self.waited is not None:
            parts.append(f"Reminder: waiting {duration(self.waited)} for an answer.")
        return Phrase(" ".join(parts), people) if parts else None

    def ping(self, actor_id: str | None, voted: Sequence[str] = ()) -> Phrase | None:
        """The one extra message of the step just fired: the approvers it added told they
        may answer; on a reminder, the approvers who have not voted named again."""
        fired = self.fired
        if fired is None:
            return None
        parts: list[str] = []
        people: dict[str, str] = {}
        if fired.added:
            names, people = _named(fired.added, actor_id, placeholders("added"))
            parts.append(f"Escalated after {duration(fired.after_seconds)}: {listed(names)} "
                         "may now answer this request.")  # fmt: skip
        if fired.remind:
            waiting = [p for p in self.approvers if _id(p, actor_id) not in voted]
            names, named = _named(waiting, actor_id, placeholders("waiting"))
            people.update(named)
            whom = f"{listed(names)}: " if names else ""
            parts.append(f"Reminder: {whom}this request has waited "
                         f"{duration(fired.after_seconds)} for an answer.")  # fmt: skip
        return Phrase(" ".join(parts), people) if parts else None


def audience(rule: Rule, fired: int, just_fired: Fired | None = None) -> Audience:
    """The audience of a request under `rule` once its first `fired` steps have fired."""
    steps = [fired_step(rule, n) for n in range(min(fired, len(rule.escalate)))]
    reminders = [step.after_seconds for step in steps if step.remind]
    return Audience(
        approvers=approvers_after(rule, fired),
        escalated=tuple(step for step in steps if step.added),
        waited=reminders[-1] if reminders else None,
        fired=just_fired,
    )


def _id(principal: Principal, actor_id: str | None) -> str:
    """Who a principal is in a phrase: a user's id, the actor's, or a group's `scheme:id`
    (which surfaces write natively where they can: a Slack user group's mention)."""
    if principal.kind == "actor":
        return actor_id or ""
    return principal.id if principal.kind == "user" else str(principal)


def _named(
    principals: Sequence[Principal], actor_id: str | None, keys: Iterator[str]
) -> tuple[list[str], dict[str, str]]:
    """Placeholders for `principals` (the actor as themselves, or as "anyone here" when the
    request has no actor), and the people they stand for."""
    names: list[str] = []
    people: dict[str, str] = {}
    for principal in principals:
        who = _id(principal, actor_id)
        if not who:
            names.append("anyone here")
            continue
        key = next(keys)
        people[key] = who
        names.append(f"{{{key}}}")
    return names, people
