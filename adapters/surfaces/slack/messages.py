"""A request's message: the core's `RequestView` drawn as Block Kit.

Pure (no I/O, no await). What a request says, its controls and every sentence come from the
view; this module only decides how Slack shows them: the title as a header, facts as sections
and two-column fields, the status line as context, controls as buttons (a choice of up to five
options as one button each, more as a `static_select`). Controls exist only while the request
is live, and carry nothing but the request id (adapters/surfaces/slack/scheme.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from adapters.surfaces.slack.blocks import (
    Block,
    actions,
    button,
    confirm_dialog,
    context,
    control_button,
    fact_blocks,
    header,
    plain,
    section,
    section_button,
    select_option,
)
from adapters.surfaces.slack.scheme import (
    CHOICE_FORM,
    MAX_OPTION_BUTTONS,
    action_id,
    actions_block_id,
    check_request_id,
    reply_action_id,
    reply_value,
)
from adapters.surfaces.slack.text import (
    BUTTON_TEXT,
    HEADER_TEXT,
    PLACEHOLDER,
    SELECT_OPTIONS,
    SLACK,
    fit,
    length,
    truncate,
)
from bot.human_input import RenderState, RequestUpdate
from bot.human_tools.forms import FieldKind, Option
from bot.human_tools.tool import HumanTool
from bot.requests.kinds import Control, Verb
from bot.requests.view import RequestView, build_view


@dataclass(frozen=True, slots=True)
class SlackMessage:
    """A message payload: `text` is the notification fallback, `blocks` what Slack shows."""

    text: str
    blocks: list[Block] = field(default_factory=list)


_ICONS = {
    RenderState.IN_PROGRESS: ":hourglass_flowing_sand:",
    RenderState.COMPLETE: ":white_check_mark:",
    RenderState.REJECTED: ":no_entry_sign:",
    RenderState.EXPIRED: ":hourglass:",
    RenderState.CANCELLED: ":heavy_minus_sign:",
    RenderState.UNDELIVERABLE: ":warning:",
}
_SEVERITY = {"warning": ":warning: ", "danger": ":rotating_light: "}
# Of a message's 50 blocks: header, status line, controls (hint, actions, note) and these.
_FACT_BLOCKS = 26
_OUTCOME_BLOCKS = 16
_NOTIFICATION_TEXT = 300  # a push notification shows a line or two; the blocks hold the rest


def render_message(update: RequestUpdate, tool: HumanTool | None = None) -> SlackMessage:
    """The message for `update`: a tool's own "slack" renderer if it has one, else its view."""
    if update.state is RenderState.EXECUTING:  # the only state whose controls carry the id
        check_request_id(update.pending_id)
    view = build_view(update, tool)
    text = fallback_text(view)
    custom = tool.renderers.get("slack") if tool is not None else None
    if custom is not None:  # the developer's renderer: a SlackMessage or just its blocks
        rendered = custom(update)
        return (
            rendered if isinstance(rendered, SlackMessage) else SlackMessage(text, list(rendered))
        )
    return SlackMessage(text, draw(view))


def draw(view: RequestView) -> list[Block]:
    """The blocks of a view: header, facts, status line, outcome, then the live controls."""
    status = view.status.render(SLACK)
    icon = _ICONS.get(view.state)
    line = f"{icon} {status}" if icon else status
    title = _SEVERITY.get(view.severity, "") + fit(view.title, HEADER_TEXT)
    if view.state is RenderState.IN_PROGRESS:  # the view shows no arguments yet
        return [header(title), section(line)]
    blocks = [header(title), *fact_blocks(view.facts, _FACT_BLOCKS), context(line)]
    blocks += fact_blocks(view.outcome, _OUTCOME_BLOCKS)
    if view.controls:
        blocks += _controls(view)
    return blocks


def fallback_text(view: RequestView) -> str:
    """The notification text: the status line, then what the request is about."""
    status = view.status.render(SLACK)
    if view.state is RenderState.IN_PROGRESS:
        return truncate(status, _NOTIFICATION_TEXT)
    head = f"{status} — {fit(view.title, 100)}"
    room = _NOTIFICATION_TEXT - length(head) - 2
    return head + (f": {fit(view.gist, room)}" if view.gist and room > 10 else "")


# -- controls --------------------------------------------------------------------------------------


def _controls(view: RequestView) -> list[Block]:
    request_id = view.request_id
    elements: list[Block] = []
    notes: list[Block] = []
    for control in view.controls:
        options = _choice_options(control)
        if options is None:
            dialog = None
            if control.confirm is not None:
                dialog = confirm_dialog(view.title, control.confirm.render(SLACK), control.style)
            elements.append(control_button(control, request_id, dialog))
        elif len(options) <= MAX_OPTION_BUTTONS:
            elements += [option_button(control.verb, o, request_id) for o in options]
        else:
            elements.append(_select(control, options, request_id))
            if len(options) > SELECT_OPTIONS:
                notes.append(context(f"Showing the first {SELECT_OPTIONS} of {len(options)}."))
    hint = [context("You can also answer by replying here.")] if view.replies else []
    return [*hint, actions(request_id, elements), *notes] if elements else hint


def _choice_options(control: Control) -> Sequence[Option] | None:
    """The options of a choice control (drawn as the options themselves), else None."""
    form = control.form
    if form is None or form.name != CHOICE_FORM or len(form.fields) != 1:
        return None
    field_ = form.fields[0]
    return field_.options if field_.kind is FieldKind.CHOICE else None


def option_button(verb: Verb, option: Option, request_id: str) -> Block:
    """One option of a choice, numbered as the core lists it (`1. …`)."""
    return button(fit(option.label, BUTTON_TEXT), verb, request_id, option=option.value)


def _select(control: Control, options: Sequence[Option], request_id: str) -> Block:
    if actions_block_id(request_id) is None:  # the select's request id travels there only
        raise ValueError(f"request id too long for a block_id: {request_id[:40]}…")
    return {
        "type": "static_select",
        "action_id": action_id(control.verb),
        "placeholder": plain(fit(control.label, PLACEHOLDER - 1) + "…", PLACEHOLDER),
        "options": [select_option(o) for o in options[:SELECT_OPTIONS]],
    }


# -- a chooser: which request a message answers (bot/requests/replies.py) ----------------------

CHOOSER_SHOWN = 20  # requests a chooser lists, each a section of a message's 50 blocks
_QUESTION = 300  # a request's question, as a chooser shows it
_WORDS = 200  # the writer's words, shown above the choices
_ASK_WHICH = "Which question does your message answer?"
TOO_LONG_TO_CHOOSE = (
    "Your message could answer more than one open question here, and it is too long to be "
    "held while you choose. Reply in the thread of the question it answers instead."
)


def question_of(update: RequestUpdate, tool: HumanTool | None = None) -> str:
    """What a request asks, in a line: its gist (a question's text), else its title."""
    view = build_view(update, tool)
    return view.gist or view.title


def render_chooser(author: str, text: str, asked: Sequence[tuple[str, str]]) -> SlackMessage | None:
    """A message asking `author` which of the requests `asked` (id, question) their words
    `text` answer: one button each, carrying the words (None when they are too long for a
    button's value). The first CHOOSER_SHOWN are listed; the rest can be answered in their
    own threads."""
    rows = []
    for n, (request_id, question) in enumerate(asked[:CHOOSER_SHOWN], 1):
        value = reply_value(request_id, author, text)
        if value is None:
            return None
        rows.append(section_button(fit(question, _QUESTION), "Answer this", reply_action_id(n),
                                   value))  # fmt: skip
    more = len(asked) - len(rows)
    rest = f"…and {more} more: to answer one of those, reply in the thread of its message."
    blocks = [section(f"*{_ASK_WHICH}*"), context(f"You wrote: {fit(text, _WORDS)}"), *rows]
    return SlackMessage(_ASK_WHICH, blocks + ([context(rest)] if more > 0 else []))


def render_chosen(question: str) -> SlackMessage:
    """The chooser once a choice answered a request: which one, and no buttons."""
    said = f":white_check_mark: Your message answered: {fit(question, _QUESTION)}"
    return SlackMessage(truncate(said, _NOTIFICATION_TEXT), [section(said)])
