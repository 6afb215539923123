"""How our messages and modals name what a person acts on, so `parse` can read it back.

- a button's `action_id` is `hitl_<verb>` (bot/requests/kinds.py's `Verb`), its `value` the
  request id; an option of a choice shown as buttons is `hitl_choose_<option value>`;
- a choice shown as a `static_select` is `hitl_choose`: its option's `value` is the option's
  and the request id travels in its actions block's `block_id`, `hitl_actions:<request id>`;
- a modal's `callback_id` is `hitl_modal:<verb>`, its `private_metadata` the request id, and
  each input's `block_id` (and `action_id`) the form field's name;
- a chooser's button (a message that could answer several requests: which one?) is
  `hitl_reply_<n>`, its `value` the JSON `{"request", "by", "text"}`: the request it answers,
  who wrote the message and what they wrote (`reply_value`);
- a running turn's Stop button (in its streamed reply) is `hitl_stop_run`, its `value` the
  turn's room id (not `hitl_stop`: that is a request's Verb.STOP).
"""

from __future__ import annotations

import json

from adapters.surfaces.slack.text import BLOCK_ID, BUTTON_VALUE, PRIVATE_METADATA, length
from bot.requests.kinds import Verb

SURFACE = "slack"  # the surface's name in audit lines and message references
ACTION_PREFIX = "hitl_"
ACTIONS_BLOCK_PREFIX = "hitl_actions:"
MODAL_CALLBACK_PREFIX = "hitl_modal:"
CHOICE_FORM = "choice"  # the form of a choice control (bot/requests/kinds.py `choice_form`)
MAX_OPTION_BUTTONS = 5  # more options than this become a static_select
REPLY_ACTION = "reply"  # a chooser's buttons: `hitl_reply_<n>`
STOP_RUN_ACTION = f"{ACTION_PREFIX}stop_run"  # a running turn's Stop button

# Action ids and modal names of messages posted before the verbs were the core's, still read
# back: a request posted by an older version of the bridge can be answered after an upgrade.
LEGACY_VERBS = {
    "reject": Verb.DECLINE,
    "reject_reason": Verb.DECLINE,
    "option": Verb.CHOOSE,
    "select": Verb.CHOOSE,
    "open_form": Verb.SUBMIT,
    "form": Verb.SUBMIT,
    "upload": Verb.SUBMIT,
}


def action_id(verb: Verb, option: str | None = None) -> str:
    return f"{ACTION_PREFIX}{verb}" if option is None else f"{ACTION_PREFIX}{verb}_{option}"


def actions_block_id(request_id: str) -> str | None:
    """The actions block's id, carrying the request id when it fits Slack's 255."""
    block_id = ACTIONS_BLOCK_PREFIX + request_id
    return block_id if len(block_id) <= BLOCK_ID else None


def modal_callback_id(verb: Verb) -> str:
    return MODAL_CALLBACK_PREFIX + verb


def check_request_id(request_id: str) -> None:
    """Refuse an id a button or a modal cannot carry whole (never cut: it would point at
    nothing)."""
    if (
        not 0 < len(request_id) <= min(BUTTON_VALUE, PRIVATE_METADATA)
        or request_id != request_id.strip()
    ):
        raise ValueError(f"unusable request id for Slack: {request_id[:40]!r}")


def reply_action_id(n: int) -> str:
    return f"{ACTION_PREFIX}{REPLY_ACTION}_{n}"


def reply_value(request_id: str, author: str, text: str) -> str | None:
    """A chooser button's value: the request, the writer and their words; None when it would
    not fit a button's value (Slack's 2,000 characters: a chooser cannot carry the words)."""
    value = json.dumps(
        {"request": request_id, "by": author, "text": text},
        ensure_ascii=False, separators=(",", ":"),
    )  # fmt: skip
    return value if length(value) <= BUTTON_VALUE else None
