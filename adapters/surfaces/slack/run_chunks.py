"""What a running turn's streamed reply carries besides its text: the chunks of Slack's
`chat.startStream`/`appendStream`/`stopStream` (a task card per tool call and per request the
turn waits on, the Stop button) and the words that close it. Pure: drawn here, sent by
adapters/surfaces/slack/live_run.py.

Everything a model or a tool wrote (a tool's name, its one-line outcome, a reason) is escaped
as the model's text is (bot/words/model_text.py, adapters/surfaces/slack/text.py).
"""

from __future__ import annotations

import re
from typing import Any

from adapters.surfaces.slack.scheme import STOP_RUN_ACTION
from adapters.surfaces.slack.text import escape, truncate
from bot.agent.steps import ToolStep
from bot.human_input import RenderState, RequestUpdate
from bot.words.model_text import defused
from bot.words.tool_names import GATE_TOOL

JSON = dict[str, Any]

STREAM_TEXT = 12_000  # characters of `markdown_text` one stream call takes
TASK_TITLE = 100  # a task card's title: a glance
STOP_BLOCK_ID = "hitl_run"
INTERRUPTED = "\n_(interrupted: asked again)_\n\n"  # a reply cut short, its retry follows
# A reply whose worker shut down mid-turn: the worker that takes the run over posts the rest.
SUSPENDED = "This worker of the bridge stopped here: the rest of the reply follows below."
SETTLED_OK = frozenset({RenderState.COMPLETE})
STILL_OPEN = frozenset({RenderState.IN_PROGRESS, RenderState.EXECUTING})
_USER_ID = re.compile(r"[UW][A-Z0-9]{2,}")


def stop_chunk(room_id: str) -> JSON:
    """The Stop button at the top of a running turn's reply: its value names the turn."""
    button = {
        "type": "button",
        "action_id": STOP_RUN_ACTION,
        "text": {"type": "plain_text", "text": "Stop"},
        "value": room_id,
        "style": "danger",
    }
    return {"type": "blocks", "blocks": [
        {"type": "actions", "block_id": STOP_BLOCK_ID, "elements": [button]},
    ]}  # fmt: skip


def tool_chunk(step: ToolStep) -> JSON:
    """A tool call's card: running, then done (its outcome) or failed."""
    status = "in_progress" if step.ok is None else "complete" if step.ok else "error"
    chunk: JSON = {
        "type": "task_update",
        "id": step.call_id,
        "title": truncate(escape(step.name), TASK_TITLE),
        "status": status,
    }
    if step.ok is not None and step.outcome:
        chunk["output"] = escape(defused(step.outcome))
    return chunk


def request_chunk(update: RequestUpdate) -> JSON:
    """A request the turn waits on: an approval of a gated call, or a person's answer."""
    waiting = "Waiting for approval" if update.tool_name == GATE_TOOL else "Waiting for an answer"
    state = update.state
    if state is RenderState.IN_PROGRESS:
        status = "pending"
    elif state in STILL_OPEN:
        status = "in_progress"
    else:
        status = "complete" if state in SETTLED_OK else "error"
    chunk: JSON = {
        "type": "task_update",
        "id": f"request:{update.pending_id}",
        "title": waiting,
        "status": status,
    }
    if status in ("complete", "error"):
        chunk["output"] = truncate(escape(defused(_settled_line(update))), TASK_TITLE)
    return chunk


def _settled_line(update: RequestUpdate) -> str:
    words = {
        RenderState.COMPLETE: "answered",
        RenderState.REJECTED: "declined",
        RenderState.EXPIRED: "timed out",
        RenderState.CANCELLED: "withdrawn",
        RenderState.UNDELIVERABLE: "could not be delivered",
    }
    line = words.get(update.state, str(update.state))
    return f"{line}: {update.reason}" if update.reason else line


def stopped_text(by: str | None) -> str:
    """The words that close a stopped turn's reply: who stopped it, as a mention."""
    if by is not None and _USER_ID.fullmatch(by):
        return f"Stopped by <@{by}>"
    return "Stopped"


def text_pieces(markdown: str) -> list[str]:
    """Escaped reply text cut to what one stream call takes (never an entity cut in half)."""
    pieces = []
    while len(markdown) > STREAM_TEXT:
        cut = STREAM_TEXT
        amp = markdown.rfind("&", cut - 5, cut)
        if amp != -1 and ";" not in markdown[amp:cut]:
            cut = amp
        pieces.append(markdown[:cut])
        markdown = markdown[cut:]
    return [*pieces, markdown] if markdown else pieces
