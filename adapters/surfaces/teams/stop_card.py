"""The Stop button of a running turn: a small Adaptive Card, and its click read back.

Teams' streamed message cannot carry it: its informative and streaming pieces are `typing`
activities, which take no attachments, and a card is allowed only on the final message. So a
turn that runs tools (what may take a while, or wait for a person) gets this card beside its
reply: "Working on it" with Stop (an `Action.Execute`, so the click is an
`adaptiveCard/action` invoke like the request cards'), updated to how the turn ended, without
the button. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapters.surfaces.teams.cards import SCHEMA_URL
from adapters.surfaces.teams.text import MAX_REQUEST_ID, NOTE, teams_text

STOP_VERB = "hitl_turn_stop"  # not `hitl_stop`: that is a request's Verb.STOP
ROOM_KEY = "room_id"
TURN_LINE = "turn_status"  # the id of the card's one line (what tells this card apart)
WORKING = "Working on it."
MAX_ROOM_ID = 4 * MAX_REQUEST_ID  # a Teams conversation id with its reply chain fits


def stop_card(room_id: str, line: str = WORKING, *, live: bool = True) -> dict[str, Any]:
    """The card: `line` (how the turn stands), with Stop while it runs (`live`)."""
    card: dict[str, Any] = {
        "type": "AdaptiveCard",
        "$schema": SCHEMA_URL,
        "version": "1.5",
        "fallbackText": teams_text(line, NOTE),  # for a client that cannot draw the card
        "body": [
            {"type": "TextBlock", "id": TURN_LINE, "text": teams_text(line, NOTE), "wrap": True}
        ],
    }
    if live:
        card["actions"] = [
            {
                "type": "Action.Execute",
                "title": "Stop",
                "verb": STOP_VERB,
                "data": {ROOM_KEY: room_id},
                "style": "destructive",
            }
        ]
    return card


def stop_clicked(value: Mapping[str, Any] | None) -> str | None:
    """The room whose turn a click on Stop stops (from an invoke's `activity.value`), or None
    when the invoke is not a Stop click."""
    action = value.get("action") if isinstance(value, Mapping) else None
    if not isinstance(action, Mapping) or action.get("verb") != STOP_VERB:
        return None
    data = action.get("data")
    room_id = data.get(ROOM_KEY) if isinstance(data, Mapping) else None
    if isinstance(room_id, str) and 0 < len(room_id) <= MAX_ROOM_ID:
        return room_id
    return None
