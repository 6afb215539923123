"""Who a policy names: the turn's actor, a user, a Slack user group or an Entra group.

Written as strings in the policy file: `actor`, `slack:U…` or `slack:W…` (a Slack user),
`slack:S…` (a Slack user group), `teams:<AAD object id>` (a Teams user) and
`entra:<group id>` (an Entra ID group, whose members are Teams users).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

PrincipalKind = Literal["actor", "user", "slack_group", "entra_group"]
Platform = Literal["slack", "teams"]

_SLACK_USER = re.compile(r"^[UW][A-Z0-9]{2,30}$")
_SLACK_GROUP = re.compile(r"^S[A-Z0-9]{2,30}$")
# AAD object ids (users and groups) are GUIDs
_GUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_SHAPES = (
    "actor, slack:U… or slack:W… (a user), slack:S… (a user group), "
    "teams:<AAD object id> (a user) or entra:<group id> (a group)"
)


@dataclass(frozen=True, slots=True)
class Principal:
    """A principal, read. `id` is what the surface authenticates: a Slack user id, a Teams
    user's AAD object id (the core's user ids), or a group's id; "" for the actor.

    `surface` None: the actor, or a user configured without one (HITL_APPROVERS, HITL_ADMINS:
    bare ids, matched on any surface as they are today)."""

    kind: PrincipalKind
    surface: Platform | None = None
    id: str = ""

    @property
    def is_group(self) -> bool:
        """A group: how many people it holds is known only when it is asked."""
        return self.kind in ("slack_group", "entra_group")

    def __str__(self) -> str:
        if self.kind == "actor":
            return "actor"
        if self.kind == "entra_group":
            return f"entra:{self.id}"
        return f"{self.surface}:{self.id}" if self.surface is not None else self.id


ACTOR = Principal("actor")


def parse_principal(text: str) -> Principal:
    """`text` read as a principal; ValueError (one line, naming the forms) if it is none.

    AAD object ids are kept in lower case, as Teams sends them."""
    if text == "actor":
        return ACTOR
    scheme, colon, rest = text.partition(":")
    if colon:
        if scheme == "slack" and _SLACK_USER.match(rest):
            return Principal("user", "slack", rest)
        if scheme == "slack" and _SLACK_GROUP.match(rest):
            return Principal("slack_group", "slack", rest)
        if scheme == "teams" and _GUID.match(rest.lower()):
            return Principal("user", "teams", rest.lower())
        if scheme == "entra" and _GUID.match(rest.lower()):
            return Principal("entra_group", "teams", rest.lower())
    raise ValueError(f"{text!r} is not a principal: write {_SHAPES}")


def configured_user(user_id: str) -> Principal:
    """A user id from HITL_APPROVERS or HITL_ADMINS: a bare id, matched on any surface."""
    return Principal("user", None, user_id)
