"""Block Kit's parts, each within Slack's limits: text objects, blocks, buttons, dialogs.

Pure. Text passed to `plain`/`mrkdwn` is already escaped (by `fit` or `SlackFormatter`); the
helpers here only cut what could still be too long, and never send an empty text object.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from adapters.surfaces.slack.scheme import action_id, actions_block_id
from adapters.surfaces.slack.text import (
    BUTTON_TEXT,
    CONFIRM_BUTTON,
    CONFIRM_TEXT,
    CONFIRM_TITLE,
    FIELD_TEXT,
    HEADER_TEXT,
    OPTION_TEXT,
    SECTION_FIELDS,
    SECTION_TEXT,
    fit,
    length,
    truncate,
)
from bot.human_tools.forms import Option
from bot.requests.kinds import Control, Fact, Style, Verb

Block = dict[str, Any]

_LABEL = 200  # a fact's label, before its value
_SHORT = 150  # a fact's value that fits a field (two columns); longer ones get a section


def _nonempty(text: str) -> str:
    # Slack refuses empty (and blank) text objects; a tolerant renderer shows a placeholder.
    return text if text.strip() else "(empty)"


def plain(text: str, limit: int = SECTION_TEXT) -> Block:
    return {"type": "plain_text", "text": _nonempty(truncate(text, limit)), "emoji": True}


def mrkdwn(text: str, limit: int = SECTION_TEXT) -> Block:
    return {"type": "mrkdwn", "text": _nonempty(truncate(text, limit))}


def section(text: str) -> Block:
    return {"type": "section", "text": mrkdwn(text)}


def header(text: str) -> Block:
    return {"type": "header", "text": plain(text, HEADER_TEXT)}


def context(text: str) -> Block:
    return {"type": "context", "elements": [mrkdwn(text)]}


def labelled(label: str, value: str, limit: int = SECTION_TEXT) -> str:
    """`*label*` over the value, both model-written (escaped here), within `limit`."""
    head = f"*{fit(label, min(_LABEL, limit // 2))}*\n"
    return head + fit(value, limit - length(head))


def fact_blocks(facts: Sequence[Fact], budget: int) -> list[Block]:
    """Facts as blocks, at most `budget` of them: an unlabelled fact is body text, a short one
    a cell of a two-column section, a long one a section of its own."""
    blocks: list[Block] = []
    cells: list[Block] = []
    if budget < 1:
        return blocks

    def flush() -> None:
        for i in range(0, len(cells), SECTION_FIELDS):
            blocks.append({"type": "section", "fields": cells[i : i + SECTION_FIELDS]})
        cells.clear()

    for shown, fact in enumerate(facts):
        cell = bool(fact.label) and len(fact.value) <= _SHORT and "\n" not in fact.value
        sections = -(-(len(cells) + cell) // SECTION_FIELDS)  # the cells' sections, rounded up
        after = len(blocks) + sections + (not cell)
        if after > budget - (shown < len(facts) - 1):  # keep room to say what is left out
            flush()
            blocks.append(context(f"…and {len(facts) - shown} more"))
            return blocks
        if cell:
            cells.append(mrkdwn(labelled(fact.label, fact.value, FIELD_TEXT)))
            continue
        flush()
        text = labelled(fact.label, fact.value) if fact.label else fit(fact.value, SECTION_TEXT)
        blocks.append(section(text))
    flush()
    return blocks


def confirm_dialog(title: str, text: str, style: Style) -> Block:
    """Slack's "are you sure?" before a control acts; `text` is mrkdwn, already escaped."""
    dialog: Block = {
        "title": plain(fit(title, CONFIRM_TITLE), CONFIRM_TITLE),
        "text": mrkdwn(text, CONFIRM_TEXT),
        "confirm": plain("Yes, go ahead", CONFIRM_BUTTON),
        "deny": plain("Go back", CONFIRM_BUTTON),
    }
    if style is Style.DANGER:
        dialog["style"] = "danger"
    return dialog


def button(
    text: str,
    verb: Verb,
    request_id: str,
    *,
    style: Style = Style.DEFAULT,
    option: str | None = None,
    confirm: Block | None = None,
) -> Block:
    """A button carrying the request id; `text` is escaped already."""
    element: Block = {
        "type": "button",
        "text": plain(text, BUTTON_TEXT),
        "action_id": action_id(verb, option),
        "value": request_id,
    }
    if style is not Style.DEFAULT:
        element["style"] = str(style)
    if confirm is not None:
        element["confirm"] = confirm
    return element


def section_button(text: str, label: str, action: str, value: str) -> Block:
    """A section (mrkdwn `text`, escaped already) with a button beside it sending `value`."""
    block = section(text)
    block["accessory"] = {
        "type": "button",
        "text": plain(label, BUTTON_TEXT),
        "action_id": action,
        "value": value,
    }
    return block


def control_button(control: Control, request_id: str, dialog: Block | None) -> Block:
    return button(
        fit(control.label, BUTTON_TEXT), control.verb, request_id, style=control.style,
        confirm=dialog,
    )  # fmt: skip


def select_option(option: Option) -> Block:
    """An option of a select or radio group: its numbered label shown, its value sent."""
    return {"text": plain(fit(option.label, OPTION_TEXT), OPTION_TEXT), "value": option.value}


def actions(request_id: str, elements: list[Block]) -> Block:
    block: Block = {"type": "actions", "elements": elements}
    block_id = actions_block_id(request_id)
    if block_id is not None:
        block["block_id"] = block_id
    return block
