"""The policy file (`HITL_POLICY_FILE`): which calls need whom, how many, for how long.

A YAML file validated by pydantic; every error is one line naming the file, the line and the
field (`policy.yaml:7: rules[0].approvers[1]: ...`), and a rule nobody could satisfy is an
error when the file is read, not when a request waits for approvals that cannot come.

```yaml
rules:                            # matched in order; the first match applies
  - match: {tool: "deploy*", arguments: {env: production}}   # a glob; each argument equal
    approvers: [slack:U0BOB00001, slack:S0OPSTEAM, teams:<aad object id>, entra:<group id>]
    required: 2                   # approvals needed (default 1)
    declines_required: 1          # declines that settle it as declined (default 1)
    allow_self: false             # may the turn's actor approve? (default true)
    timeout_seconds: 3600         # default: the bridge's own
    on_timeout: decline           # decline (default) | {answer: {...}}: recorded as expired
    escalate:
      - {after_seconds: 900, remind: true}
      - {after_seconds: 1800, approvers: [slack:S0SRELEADS]}   # added to the approvers
    deliver: [thread, approvers_dm, slack:C0APPROVALS]           # default: thread
  - match: {tool: "*"}
    approvers: [actor]
drivers:                          # who may drive the agent, by room (default: anyone anywhere)
  - room: "slack:C0OPS0001:*"     # a glob over room ids; the first match applies
    users: [slack:S0OPSTEAM, slack:U0BOB00001, entra:<group id>]
```

Principals are read in `principals`, `deliver` entries in `destinations`; which rule a call
gets is `rules.Policy`'s.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from itertools import pairwise
from typing import Annotated, Any, cast

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    PrivateAttr,
    StrictBool,
    ValidationInfo,
    field_validator,
    model_validator,
)

from bot.config.yaml_file import YamlLines, load_yaml_model, shown_path
from bot.errors import ConfigurationError
from bot.policies.destinations import THREAD, Destination, parse_destination
from bot.policies.principals import ACTOR, Principal, parse_principal

MAX_SECONDS = 7 * 24 * 3600  # as long as a door's request may wait


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _listed(value: Any) -> Any:
    """`approvers: actor` is `approvers: [actor]`."""
    return [value] if isinstance(value, str) else value


def _not_empty(value: tuple[Any, ...]) -> tuple[Any, ...]:
    """Checked after the items (pydantic's `min_length` also counts an item that failed)."""
    if not value:
        raise ValueError("list at least one")
    return value


def _principal(value: Any) -> Principal:
    if isinstance(value, Principal):
        return value
    if not isinstance(value, str):
        raise ValueError("a principal is a string such as actor or slack:U0123ABCD")
    return parse_principal(value)


def _destination(value: Any) -> Destination:
    if isinstance(value, Destination):
        return value
    if not isinstance(value, str):
        raise ValueError("a destination is a string such as thread or slack:C0123ABCD")
    return parse_destination(value)


PrincipalField = Annotated[Principal, PlainValidator(_principal), PlainSerializer(str)]
Principals = Annotated[tuple[PrincipalField, ...], BeforeValidator(_listed)]
DestinationField = Annotated[Destination, PlainValidator(_destination), PlainSerializer(str)]
# Whole seconds or not; never a boolean or a string ("1h" is no number of seconds)
Seconds = Annotated[float, Field(gt=0, le=MAX_SECONDS, strict=True, allow_inf_nan=False)]
Count = Annotated[int, Field(ge=1, strict=True)]

Scalar = str | int | float | bool | None


def _argument_value(value: Any) -> Scalar | tuple[Scalar, ...]:
    """A value an argument must equal, or a list of values it may equal (any of them)."""
    if isinstance(value, list | tuple):
        if not value:
            raise ValueError("an empty list matches nothing: list the values to match")
        if all(_is_scalar(item) for item in value):
            return tuple(value)
    elif _is_scalar(value):
        return cast(Scalar, value)
    raise ValueError("match a string, a number, true, false or null, or a list of them")


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


ArgumentValue = Annotated[Scalar | tuple[Scalar, ...], PlainValidator(_argument_value)]


class Match(_Strict):
    """Which calls a rule is for: the tool's name (a glob: `deploy*`) and, optionally, values
    of its arguments (each must equal the value given, or one of a list's)."""

    tool: Annotated[str, Field(min_length=1)]
    arguments: dict[str, ArgumentValue] = {}


class OnTimeout(_Strict):
    """What a request settles as at its deadline: declined, or this answer. Recorded as expired
    either way, never as a person's no."""

    answer: dict[str, Any] | None  # None: declined

    @property
    def declines(self) -> bool:
        return self.answer is None


def _on_timeout(value: Any) -> Any:
    if value == "decline":
        return {"answer": None}
    if isinstance(value, str):
        raise ValueError("must be decline or {answer: {...}}")
    return value


DECLINE = OnTimeout(answer=None)


class Escalation(_Strict):
    """`after_seconds` into the wait: remind the approvers, add approvers, or both."""

    after_seconds: Seconds
    remind: StrictBool = False
    approvers: Principals = ()  # added to the rule's from then on

    @model_validator(mode="after")
    def _does_something(self) -> Escalation:
        if not self.remind and not self.approvers:
            raise ValueError("an escalation reminds (remind: true), adds approvers, or both")
        return self


def most_people(principals: Sequence[Principal]) -> int | None:
    """How many people `principals` can be at most (the actor counted as one); None when a
    group is among them (its size is known only when it is asked)."""
    if any(principal.is_group for principal in principals):
        return None
    return len(set(principals))


class Rule(_Strict):
    """One rule: who may answer the calls it matches, how many must, for how long."""

    match: Match
    approvers: Annotated[Principals, AfterValidator(_not_empty)]
    required: Count = 1  # approvals that settle the request as approved
    declines_required: Count = 1  # declines that settle it as declined
    allow_self: StrictBool = True  # may the turn's actor approve?
    timeout_seconds: Seconds | None = None  # None: the bridge's own
    on_timeout: Annotated[OnTimeout, BeforeValidator(_on_timeout)] = DECLINE
    escalate: tuple[Escalation, ...] = ()
    deliver: Annotated[tuple[DestinationField, ...], AfterValidator(_not_empty)] = (THREAD,)
    drivers: None = None  # refused: who may drive the agent is said by room (`PolicyFile`)

    @field_validator("drivers", mode="before")
    @classmethod
    def _drivers_by_room(cls, value: Any) -> None:
        """Who may drive the agent is said per room: a turn starts before any tool is called."""
        raise ValueError(
            "who may drive the agent is said by room, not by rule: move it to "
            "the file's top-level `drivers:` ({room: <glob>, users: [...]})"
        )

    @field_validator("required", "declines_required")
    @classmethod
    def _can_be_given(cls, value: int, info: ValidationInfo) -> int:
        """Fields are validated in order: `approvers` is known here (unless it was wrong)."""
        most = most_people(info.data.get("approvers", ()))
        if "approvers" in info.data and most is not None and value > most:
            what = "approvals" if info.field_name == "required" else "declines"
            people = "1 person" if most == 1 else f"{most} people"
            raise ValueError(
                f"{value} {what} are required but the approvers name {people}: "
                "list more, or a group"
            )
        return value

    @field_validator("allow_self")
    @classmethod
    def _actor_not_excluded(cls, value: bool, info: ValidationInfo) -> bool:
        if not value and ACTOR in info.data.get("approvers", ()):
            raise ValueError("false, but `actor` is among the approvers: remove one of them")
        return value

    @field_validator("escalate")
    @classmethod
    def _in_order(
        cls, value: tuple[Escalation, ...], info: ValidationInfo
    ) -> tuple[Escalation, ...]:
        """In the order they happen, each before the deadline (else it would never happen)."""
        for earlier, later in pairwise(value):
            if later.after_seconds <= earlier.after_seconds:
                raise ValueError(
                    f"list escalations in the order they happen: {later.after_seconds:g} "
                    f"seconds comes after {earlier.after_seconds:g}"
                )
        if info.data.get("allow_self") is False:
            for step in value:
                if ACTOR in step.approvers:
                    raise ValueError(
                        "an escalation adds `actor`, but allow_self is false: remove one of them"
                    )
        timeout = info.data.get("timeout_seconds")
        if value and timeout is not None and value[-1].after_seconds >= timeout:
            raise ValueError(
                f"an escalation after {value[-1].after_seconds:g} seconds would never happen: "
                f"timeout_seconds is {timeout:g}"
            )
        return value


class Drivers(_Strict):
    """Who may start or continue the agent's turns in the rooms `room` matches (a glob over
    the core's room ids: `slack:<channel>:<thread ts>`, `teams:<conversation id>`)."""

    room: Annotated[str, Field(min_length=1)]
    users: Annotated[Principals, AfterValidator(_not_empty)]

    @field_validator("users")
    @classmethod
    def _named(cls, value: tuple[Principal, ...]) -> tuple[Principal, ...]:
        if ACTOR in value:
            raise ValueError("`actor` is whoever drives the agent: name people or groups")
        return value


class PolicyFile(_Strict):
    """The policy file, validated. `where(...)` names the line of a part of it."""

    rules: Annotated[tuple[Rule, ...], AfterValidator(_not_empty)]
    drivers: tuple[Drivers, ...] = ()  # matched in order by room; none matching: anyone

    _lines: YamlLines | None = PrivateAttr(default=None)  # None: a policy built in code

    def read_from(self, lines: YamlLines) -> None:
        """Remember the file and lines it was read from, for errors that name FILE:LINE."""
        self._lines = lines

    def where(self, *path: str | int) -> str:
        """`FILE:LINE` of the nearest written part of `path` (`"rules", 0, "approvers", 1`)."""
        return self._lines.where(*path) if self._lines is not None else "the policy"

    def error(self, path: Sequence[str | int], message: str) -> ConfigurationError:
        """A one-line error at `path`: `FILE:LINE: field: message`."""
        return ConfigurationError(f"{self.where(*path)}: {shown_path(path)}: {message}")


def load_policy_file(path: str | os.PathLike[str]) -> PolicyFile:
    """The policy file at `path`, validated; ConfigurationError (one line, FILE:LINE) if not."""
    policy, lines = load_yaml_model(path, PolicyFile, "the policy file")
    policy.read_from(lines)
    return policy
