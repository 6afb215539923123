"""Requests to draw in tests: `make_update`, adversarial text, a custom tool, every field kind."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel

from bot.human_input import RenderState, RequestUpdate
from bot.human_tools.tool import HumanTool
from tests.adapters.surfaces.slack.blockkit_rules import strings

REQUEST_ID = "0123456789abcdef01234567"
ACTOR = "U123ACTOR"
ANSWERER = "U777ANSWER"
CREATED = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
# Everything a model could slip in to ping, mention or hide a link; plus the `<x&y>` marker.
MARK = "<x&y> <!channel> <!here|here> @here @channel <@U999> <https://evil.example|click>"
FORBIDDEN = ["<x&y>", "<!channel>", "<!here", "<@U999>", "<https://evil"]
BROADCAST = re.compile(r"@(here|channel|everyone)\b", re.IGNORECASE)


def make_update(
    tool_name: str,
    arguments: dict[str, Any],
    state: RenderState = RenderState.EXECUTING,
    **changes: Any,
) -> RequestUpdate:
    fields: dict[str, Any] = {
        "state": state,
        "pending_id": REQUEST_ID,
        "tool_name": tool_name,
        "arguments": arguments,
        "room_id": "slack:C1:1700000000.000100",
        "tool_call_id": "toolu_1",
        "channel_id": "slack",
        "channel_type": "ai",
        "actor_id": ACTOR,
        "created_at": CREATED,
        "expires_at": CREATED + timedelta(minutes=5),
    }
    if state in (RenderState.COMPLETE, RenderState.REJECTED):
        fields.update(settled_by=ANSWERER, settled_at=CREATED + timedelta(minutes=1))
    if state is RenderState.REJECTED:
        fields.update(reason="Not now " + MARK)
    fields.update(changes)
    return RequestUpdate(**fields)


def assert_inert(payload: Any) -> None:
    """No model-written text reaches Slack unescaped, in any string of the payload."""
    for text in strings(payload):
        for bad in FORBIDDEN:
            assert bad not in text, f"{bad!r} unescaped in {text[:200]!r}"
        assert not BROADCAST.search(text), f"bare broadcast in {text[:200]!r}"


class TicketAnswer(BaseModel):
    status: str
    priority: int


CUSTOM_TOOL = HumanTool(
    "lookupTicket", "Ask for a ticket's status " + MARK, BaseModel, TicketAnswer
)

# collectUserData with one field of each of its 13 kinds (every FieldKind but file).
EVERY_KIND_FIELDS: list[dict[str, Any]] = [
    {"name": "name", "label": "Name", "type": "text"},
    {"name": "notes", "label": "Notes", "type": "long_text", "required": False},
    {"name": "height", "label": "Height", "type": "number", "min": 0.5, "max": 2.5},
    {"name": "age", "label": "Age", "type": "integer", "min": 18, "max": 120},
    {"name": "email", "label": "Email", "type": "email"},
    {"name": "site", "label": "Web site", "type": "url", "description": "Your home page"},
    {"name": "day", "label": "Day", "type": "date"},
    {"name": "at", "label": "Time", "type": "time"},
    {"name": "when", "label": "Start", "type": "datetime"},
    {"name": "agree", "label": "Agree?", "type": "boolean"},
    {"name": "size", "label": "Size", "type": "choice", "options": ["S", "M", "L"]},
    {"name": "tags", "label": "Tags", "type": "choices", "options": ["red", "green", "blue"]},
    {"name": "owner", "label": "Owner", "type": "user"},
]
