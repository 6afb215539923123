"""Where a policy delivers a request: the conversation's thread, the approvers' direct
messages, a Slack channel (`slack:C…`) or a Teams conversation (`teams:<conversation id>`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from bot.doors.addresses import MAX_ADDRESS

DestinationKind = Literal["thread", "approvers_dm", "slack_channel", "teams_conversation"]

# C: a channel; G: a private channel made before 2021 (the Web API still returns such ids)
_SLACK_CHANNEL = re.compile(r"^[CG][A-Z0-9]{2,30}$")
_TEAMS_CONVERSATION = re.compile(rf"^\S{{1,{MAX_ADDRESS}}}$")  # `19:…@thread.tacv2`, `a:…`
_SHAPES = "thread, approvers_dm, slack:C… (a channel) or teams:<conversation id>"


@dataclass(frozen=True, slots=True)
class Destination:
    """A `deliver` entry, read; `id` is the channel's or conversation's ("" for the others)."""

    kind: DestinationKind
    id: str = ""

    def __str__(self) -> str:
        if self.kind == "slack_channel":
            return f"slack:{self.id}"
        if self.kind == "teams_conversation":
            return f"teams:{self.id}"
        return self.kind


THREAD = Destination("thread")
APPROVERS_DM = Destination("approvers_dm")


def parse_destination(text: str) -> Destination:
    """`text` read as a destination; ValueError (one line, naming the forms) if it is none."""
    if text in ("thread", "approvers_dm"):
        return THREAD if text == "thread" else APPROVERS_DM
    scheme, colon, rest = text.partition(":")
    if colon and scheme == "slack" and _SLACK_CHANNEL.match(rest):
        return Destination("slack_channel", rest)
    if colon and scheme == "teams" and _TEAMS_CONVERSATION.match(rest):
        return Destination("teams_conversation", rest)
    raise ValueError(f"{text!r} is not a destination: write {_SHAPES}")
