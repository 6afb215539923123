"""Block Kit for human-input requests: messages per tool and render state, and the modals.

Pure functions of a `RequestUpdate` (DESIGN.md §1 rule 4). Model-written text goes through
`fit` (escaped, cut to the field's limit) and arguments are read tolerantly, so any request,
however odd its arguments, renders a payload Slack accepts. Only the `executing` state carries
interactive elements; buttons carry the request id and nothing else (DESIGN.md §5).

Interaction scheme (what `parse` reads back):
- button `action_id`: `hitl_<verb>` (`hitl_option_<i>` for the i-th option); `value`: request id.
- the `static_select` (`hitl_select`) sits in an actions block whose `block_id` is
  `hitl_actions:<request id>`; an option's `value` is its index.
- modal `callback_id`: `hitl_modal:<kind>`; `private_metadata`: request id; an input's
  block_id is `reason`, `answer`, `file` or the form field's name, its action_id `value`
  (a form field's: its name again, so no two inputs of a view share one).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ValidationError

from adapters.slack.text import (
    BLOCK_ID,
    BUTTON_TEXT,
    BUTTON_VALUE,
    CONFIRM_BUTTON,
    CONFIRM_TEXT,
    CONFIRM_TITLE,
    FIELD_TEXT,
    HEADER_TEXT,
    INPUT_HINT,
    INPUT_LABEL,
    MODAL_BLOCKS,
    MODAL_BUTTON,
    MODAL_TITLE,
    OPTION_TEXT,
    PRIVATE_METADATA,
    SECTION_FIELDS,
    SECTION_TEXT,
    SELECT_OPTIONS,
    escape,
    fit,
    length,
    truncate,
)
from bot.arguments import answer_of, form_fields, text_of, texts_of
from bot.human_input import RenderState, RequestUpdate
from bot.human_tools import HumanTool
from bot.records import RequestRecord

Block = dict[str, Any]
Args = Mapping[str, Any]

# -- the interaction scheme ------------------------------------------------------------------

ACTION_PREFIX = "hitl_"
ACTIONS_BLOCK_PREFIX = "hitl_actions:"
MODAL_CALLBACK_PREFIX = "hitl_modal:"
INPUT_ACTION = "value"  # the action_id of a modal's single input
REASON_BLOCK = "reason"
ANSWER_BLOCK = "answer"
FILE_BLOCK = "file"
MAX_OPTION_BUTTONS = 5  # more options than this become a static_select


class Verb(StrEnum):
    """What a click means; the action_id is `hitl_<verb>` (`hitl_option_<i>` for OPTION)."""

    APPROVE = "approve"
    REJECT = "reject"
    ANSWER = "answer"
    OPTION = "option"
    SELECT = "select"
    OPEN_FORM = "open_form"
    UPLOAD = "upload"
    CONFIRM = "confirm"
    CANCEL = "cancel"


class ModalKind(StrEnum):
    REJECT_REASON = "reject_reason"
    ANSWER = "answer"
    FORM = "form"
    UPLOAD = "upload"


MODAL_OF_VERB: dict[Verb, ModalKind] = {
    Verb.REJECT: ModalKind.REJECT_REASON,
    Verb.ANSWER: ModalKind.ANSWER,
    Verb.OPEN_FORM: ModalKind.FORM,
    Verb.UPLOAD: ModalKind.UPLOAD,
}
"""Clicks that open a modal (answer_from_click returns None for them), and which one."""


def action_id(verb: Verb, index: int | None = None) -> str:
    return f"{ACTION_PREFIX}{verb}" if index is None else f"{ACTION_PREFIX}{verb}_{index}"


def actions_block_id(request_id: str) -> str | None:
    """The actions block's id, carrying the request id when it fits Slack's 255."""
    block_id = ACTIONS_BLOCK_PREFIX + request_id
    return block_id if len(block_id) <= BLOCK_ID else None


@dataclass(frozen=True, slots=True)
class SlackMessage:
    """A message payload: `text` is the notification fallback, `blocks` what Slack shows."""

    text: str
    blocks: list[Block] = field(default_factory=list)


# -- text objects and blocks -----------------------------------------------------------------


_LABEL = 200  # a field's label, before its value


def _nonempty(text: str) -> str:
    # Slack refuses empty (and blank) text objects; a tolerant renderer shows a placeholder.
    return text if text.strip() else "(empty)"


def plain(text: str) -> Block:
    return {"type": "plain_text", "text": _nonempty(text), "emoji": True}


def mrkdwn(text: str) -> Block:
    return {"type": "mrkdwn", "text": _nonempty(text)}


def _section(text: str) -> Block:
    return {"type": "section", "text": mrkdwn(truncate(text, SECTION_TEXT))}


def _labelled(label: str, value: str, limit: int = SECTION_TEXT) -> str:
    """`*label*` over the value, both possibly model-written, the whole within `limit`."""
    head = f"*{fit(label, min(_LABEL, limit // 2))}*\n"
    return head + fit(value, limit - length(head))


def _header(text: str) -> Block:
    return {"type": "header", "text": plain(truncate(text, HEADER_TEXT))}


def _context(text: str) -> Block:
    return {"type": "context", "elements": [mrkdwn(truncate(text, SECTION_TEXT))]}


def _fields(pairs: list[tuple[str, str]], limit: int = 40) -> list[Block]:
    """Label/value pairs as sections of two-column fields (10 a section), at most `limit`."""
    cells = [mrkdwn(_labelled(k, v, FIELD_TEXT)) for k, v in pairs[:limit]]
    blocks = [
        {"type": "section", "fields": cells[i : i + SECTION_FIELDS]}
        for i in range(0, len(cells), SECTION_FIELDS)
    ]
    if len(pairs) > limit:
        blocks.append(_context(f"…and {len(pairs) - limit} more"))
    return blocks


def _button(
    text: str,
    verb: Verb,
    request_id: str,
    *,
    style: str | None = None,
    index: int | None = None,
    confirm: Block | None = None,
) -> Block:
    button: Block = {
        "type": "button",
        "text": plain(truncate(text, BUTTON_TEXT)),
        "action_id": action_id(verb, index),
        "value": request_id,
    }
    if style is not None:
        button["style"] = style
    if confirm is not None:
        button["confirm"] = confirm
    return button


def _actions(request_id: str, elements: list[Block]) -> Block:
    block: Block = {"type": "actions", "elements": elements}
    block_id = actions_block_id(request_id)
    if block_id is not None:
        block["block_id"] = block_id
    return block


def slack_date(when: datetime) -> str:
    """A date each reader sees in their own time zone; the fallback is UTC."""
    if when.tzinfo is None:  # the core writes aware UTC; a naive one is taken as UTC too
        when = when.replace(tzinfo=UTC)
    fallback = when.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"<!date^{int(when.timestamp())}^{{date_short_pretty}} {{time}}|{fallback}>"


_SLACK_USER = re.compile(r"^[UWB][A-Z0-9]{2,}$")


def mention(user_id: str) -> str:
    """`<@U…>` for a Slack user; an id from another surface (Teams, console) as plain text."""
    return f"<@{user_id}>" if _SLACK_USER.match(user_id) else fit(user_id, 100)


# -- accepted file types -----------------------------------------------------------------------

_MIME_EXTENSIONS: dict[str, tuple[str, ...]] = {
    "application/pdf": ("pdf",),
    "application/json": ("json",),
    "application/zip": ("zip",),
    "application/gzip": ("gz",),
    "application/msword": ("doc",),
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ("docx",),
    "application/vnd.ms-excel": ("xls",),
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": ("xlsx",),
    "application/vnd.ms-powerpoint": ("ppt",),
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": ("pptx",),
    "text/plain": ("txt",),
    "text/csv": ("csv",),
    "text/markdown": ("md",),
    "text/html": ("html", "htm"),
    "image/png": ("png",),
    "image/jpeg": ("jpg", "jpeg"),
    "image/gif": ("gif",),
    "image/webp": ("webp",),
    "image/svg+xml": ("svg",),
    "image/heic": ("heic",),
    "video/mp4": ("mp4",),
    "audio/mpeg": ("mp3",),
}
_EXTENSION = re.compile(r"^[a-z0-9][a-z0-9+_-]{0,15}$")


@dataclass(frozen=True, slots=True)
class AcceptedTypes:
    """uploadFile's acceptedTypes, normalised: extensions Slack can filter on, MIME patterns."""

    extensions: tuple[str, ...] = ()
    mimetypes: tuple[str, ...] = ()
    any: bool = True
    # An entry we could not turn into extensions (an unknown MIME type): Slack's own filter
    # would then refuse files we accept, so we leave it off and check on submission only.
    unmapped: bool = False

    def slack_filetypes(self) -> list[str] | None:
        """`file_input.filetypes`, or None when Slack should not pre-filter."""
        return None if self.any or self.unmapped else list(self.extensions)

    def accepts(self, file_name: str, mimetype: str | None) -> bool:
        if self.any:
            return True
        extension = file_name.rpartition(".")[2].lower() if "." in file_name else ""
        if extension in self.extensions:
            return True
        mime = (mimetype or "").lower()
        return any(_mime_match(pattern, mime) for pattern in self.mimetypes)


def accepted_types(entries: Iterable[str]) -> AcceptedTypes:
    """Normalise ".pdf", "pdf", "*.PDF", "application/pdf", "image/*" and "*" alike."""
    extensions: dict[str, None] = {}  # ordered set
    mimetypes: list[str] = []
    unmapped = False
    for raw in entries:
        entry = raw.strip().lower()
        if entry in ("*", "*/*", "*.*"):
            return AcceptedTypes()
        if "/" in entry:
            mimetypes.append(entry)
            known = [
                e for m, exts in _MIME_EXTENSIONS.items() if _mime_match(entry, m) for e in exts
            ]
            unmapped = unmapped or not known
            extensions.update(dict.fromkeys(known))
        elif _EXTENSION.match(bare := entry.removeprefix("*").removeprefix(".")):
            extensions[bare] = None
        else:
            unmapped = True
    if not extensions and not mimetypes:
        return AcceptedTypes(any=not unmapped, unmapped=unmapped)
    return AcceptedTypes(tuple(extensions), tuple(mimetypes), any=False, unmapped=unmapped)


def _mime_match(pattern: str, mime: str) -> bool:
    return pattern == mime or (pattern.endswith("/*") and mime.startswith(pattern[:-1]))


# -- the tools ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _ToolView:
    """How one kind of tool looks. Each part gets the (unvalidated) arguments."""

    header: Callable[[Args], str]  # mrkdwn-safe header text
    describe: Callable[[Args], list[Block]]  # what was asked: shown in every settled state too
    controls: Callable[[Args, str], list[Block]]  # executing only: (arguments, request id)
    summarize: Callable[[Args, Any], list[Block]]  # complete: (arguments, the answer)
    gist: Callable[[Args], str]  # a line for the notification text (raw, escaped later)


def _ask_controls(args: Args, request_id: str) -> list[Block]:
    answer = _button("Answer", Verb.ANSWER, request_id, style="primary")
    hint = _context("Reply in this thread, or press *Answer*.")
    return [hint, _actions(request_id, [answer])]


def _ask_summary(args: Args, answer: Any) -> list[Block]:
    if isinstance(answer, dict) and isinstance(answer.get("answer"), str):
        return [_section(_labelled("Answer", answer["answer"]))]
    return _raw_summary(args, answer)


ASK = _ToolView(
    header=lambda a: "Question",
    describe=lambda a: [_section(fit(text_of(a, "question"), SECTION_TEXT))],
    controls=_ask_controls,
    summarize=_ask_summary,
    gist=lambda a: text_of(a, "question"),
)


def _approval_controls(args: Args, request_id: str) -> list[Block]:
    approve = _button("Approve", Verb.APPROVE, request_id, style="primary")
    reject = _button("Reject", Verb.REJECT, request_id, style="danger")
    return [_actions(request_id, [approve, reject])]


def _approval_summary(args: Args, answer: Any) -> list[Block]:
    if not isinstance(answer, dict) or not isinstance(answer.get("approved"), bool):
        return _raw_summary(args, answer)
    verdict = ":white_check_mark: *Approved*" if answer["approved"] else ":no_entry: *Declined*"
    reason = answer.get("reason")
    if isinstance(reason, str) and reason.strip():
        return [_section(verdict + "\n" + _labelled("Reason", reason))]
    return [_section(verdict)]


APPROVAL = _ToolView(
    header=lambda a: "Approval needed",
    describe=lambda a: [
        _section(_labelled("Action", text_of(a, "action"))),
        _section(_labelled("Reason", text_of(a, "reason"))),
    ],
    controls=_approval_controls,
    summarize=_approval_summary,
    gist=lambda a: text_of(a, "action"),
)


def _select_describe(args: Args) -> list[Block]:
    blocks = [_section(fit(text_of(args, "question"), SECTION_TEXT))]
    options = texts_of(args, "options")
    # Buttons and menu items show 75 characters: list the options in full when that cuts any.
    if any(length(escape(o)) > OPTION_TEXT for o in options):
        lines = [f"{i + 1}. {fit(o, 500)}" for i, o in enumerate(options[:SELECT_OPTIONS])]
        blocks.append(_section("\n".join(lines)))
    return blocks


def _select_controls(args: Args, request_id: str) -> list[Block]:
    options = texts_of(args, "options")
    if len(options) <= MAX_OPTION_BUTTONS:
        buttons = [
            _button(fit(o, BUTTON_TEXT), Verb.OPTION, request_id, index=i)
            for i, o in enumerate(options)
        ]
        return [_actions(request_id, buttons)] if buttons else []
    block_id = actions_block_id(request_id)
    if block_id is None:  # the select's request id travels in the block_id only
        raise ValueError(f"request id too long for a block_id: {request_id[:40]}…")
    select = {
        "type": "static_select",
        "action_id": action_id(Verb.SELECT),
        "placeholder": plain("Choose…"),
        "options": [
            {"text": plain(fit(o, OPTION_TEXT)), "value": str(i)}
            for i, o in enumerate(options[:SELECT_OPTIONS])
        ],
    }
    blocks: list[Block] = [{"type": "actions", "block_id": block_id, "elements": [select]}]
    if len(options) > SELECT_OPTIONS:
        blocks.append(_context(f"Showing the first {SELECT_OPTIONS} of {len(options)} options."))
    return blocks


def _select_summary(args: Args, answer: Any) -> list[Block]:
    if isinstance(answer, dict) and isinstance(answer.get("selectedValue"), str):
        return [_section(_labelled("Selected", answer["selectedValue"]))]
    return _raw_summary(args, answer)


SELECT = _ToolView(
    header=lambda a: "Choose an option",
    describe=_select_describe,
    controls=_select_controls,
    summarize=_select_summary,
    gist=lambda a: text_of(a, "question"),
)


def _form_describe(args: Args) -> list[Block]:
    fields = form_fields(args)
    lines = [f"• {escape(f.label)}" + ("" if f.type == "text" else f" ({f.type})") for f in fields]
    return [_section("*Please fill in:*\n" + "\n".join(lines))]


def _form_controls(args: Args, request_id: str) -> list[Block]:
    button = _button("Open form", Verb.OPEN_FORM, request_id, style="primary")
    return [_actions(request_id, [button])]


def _form_summary(args: Args, answer: Any) -> list[Block]:
    if not isinstance(answer, dict):
        return _raw_summary(args, answer)
    labels = {f.name: f.label for f in form_fields(args)}
    pairs = [
        (labels.get(str(k), str(k)), v if isinstance(v, str) else json.dumps(v))
        for k, v in answer.items()
    ]
    return _fields(pairs)


FORM = _ToolView(
    header=lambda a: "Information needed",
    describe=_form_describe,
    controls=_form_controls,
    summarize=_form_summary,
    gist=lambda a: f"{len(form_fields(a))} fields",
)


def _upload_describe(args: Args) -> list[Block]:
    blocks = [_section(_labelled("Purpose", text_of(args, "purpose")))]
    types = texts_of(args, "acceptedTypes")
    if types:
        blocks.append(_context("Accepted: " + escape(", ".join(types))))
    return blocks


def _upload_controls(args: Args, request_id: str) -> list[Block]:
    button = _button("Upload file", Verb.UPLOAD, request_id, style="primary")
    return [_actions(request_id, [button])]


_SAFE_URL = re.compile(r"^https://[^\s<>|]+$")


def _upload_summary(args: Args, answer: Any) -> list[Block]:
    if not isinstance(answer, dict) or not isinstance(answer.get("fileName"), str):
        return _raw_summary(args, answer)
    name, url, size = answer["fileName"], answer.get("url"), answer.get("fileSize")
    label = fit(name, 500)
    if isinstance(url, str) and _SAFE_URL.match(url) and len(url) <= 2000:
        label = f"<{escape(url)}|{label}>"  # Slack's own file URL; escaped `&` stays a link
    if isinstance(size, int):
        label += f" ({size:,} bytes)"
    return [_section("*File*\n" + label)]


UPLOAD = _ToolView(
    header=lambda a: "File requested",
    describe=_upload_describe,
    controls=_upload_controls,
    summarize=_upload_summary,
    gist=lambda a: text_of(a, "purpose"),
)


def _confirm_describe(args: Args) -> list[Block]:
    warning = ":warning: " if args.get("severity") == "warning" else ""
    return [_section(warning + fit(text_of(args, "message"), SECTION_TEXT - len(warning)))]


def _confirm_controls(args: Args, request_id: str) -> list[Block]:
    if args.get("severity") == "danger":
        dialog = {
            "title": plain(fit(text_of(args, "title"), CONFIRM_TITLE)),
            "text": plain(fit(text_of(args, "message"), CONFIRM_TEXT)),
            "confirm": plain(truncate("Yes, go ahead", CONFIRM_BUTTON)),
            "deny": plain(truncate("Go back", CONFIRM_BUTTON)),
            "style": "danger",
        }
        confirm = _button("Confirm", Verb.CONFIRM, request_id, style="danger", confirm=dialog)
    else:
        confirm = _button("Confirm", Verb.CONFIRM, request_id, style="primary")
    cancel = _button("Cancel", Verb.CANCEL, request_id)
    return [_actions(request_id, [confirm, cancel])]


def _confirm_summary(args: Args, answer: Any) -> list[Block]:
    if not isinstance(answer, dict) or not isinstance(answer.get("confirmed"), bool):
        return _raw_summary(args, answer)
    return [_section("*Confirmed*" if answer["confirmed"] else "*Cancelled*")]


CONFIRM = _ToolView(
    header=lambda a: fit(text_of(a, "title"), HEADER_TEXT),
    describe=_confirm_describe,
    controls=_confirm_controls,
    summarize=_confirm_summary,
    gist=lambda a: text_of(a, "message"),
)


def _raw_summary(args: Args, answer: Any) -> list[Block]:
    """Any answer: a JSON object as fields, anything else as text."""
    if isinstance(answer, dict):
        pairs = [(str(k), v if isinstance(v, str) else json.dumps(v)) for k, v in answer.items()]
        return _fields(pairs)
    text = answer if isinstance(answer, str) else json.dumps(answer)
    return [_section(_labelled("Answer", text))]


def _generic_view(name: str, tool: HumanTool | None) -> _ToolView:
    """A custom tool: its description and arguments shown, answered in a free-text modal."""

    def describe(args: Args) -> list[Block]:
        blocks = [_section(fit(tool.description, SECTION_TEXT))] if tool is not None else []
        return blocks + _fields([(str(k), text_of(args, k)) for k in args])

    def controls(args: Args, request_id: str) -> list[Block]:
        answer = _button("Answer", Verb.ANSWER, request_id, style="primary")
        return [_actions(request_id, [answer])]

    return _ToolView(
        header=lambda a: fit(name, HEADER_TEXT),
        describe=describe,
        controls=controls,
        summarize=_raw_summary,
        gist=lambda a: tool.description if tool is not None else "your answer is needed",
    )


BUILTIN_VIEWS: dict[str, _ToolView] = {
    "AskUserQuestion": ASK,
    "requestApproval": APPROVAL,
    "selectOption": SELECT,
    "collectUserData": FORM,
    "uploadFile": UPLOAD,
    "confirmAction": CONFIRM,
}


def _view_of(name: str, tool: HumanTool | None) -> _ToolView:
    return BUILTIN_VIEWS.get(name) or _generic_view(name, tool)


def _check_request_id(request_id: str) -> None:
    # Not model-written, so never cut: a cut id would point at nothing.
    if (
        not 0 < len(request_id) <= min(BUTTON_VALUE, PRIVATE_METADATA)
        or request_id != request_id.strip()
    ):
        raise ValueError(f"unusable request id for Slack: {request_id[:40]!r}")


# -- messages per state --------------------------------------------------------------------------


def _in_progress(update: RequestUpdate, view: _ToolView) -> list[Block]:
    # The arguments may still be streaming in: show none of them.
    return [_section(":hourglass_flowing_sand: Preparing request…")]


def _executing(update: RequestUpdate, view: _ToolView) -> list[Block]:
    who = (
        f"{mention(update.actor_id)}, this is for you."
        if update.actor_id
        else "Anyone here can answer."
    )
    if update.expires_at is not None:
        who += f" Expires {slack_date(update.expires_at)}."
    args = update.arguments
    blocks = [_header(view.header(args)), *view.describe(args), _context(who)]
    return blocks + view.controls(args, update.pending_id)


def _settled_line(icon: str, verb: str, update: RequestUpdate) -> str:
    line = f"{icon} {verb}"
    if update.settled_by:
        line += f" by {mention(update.settled_by)}"
    if update.settled_at is not None:
        line += f" {slack_date(update.settled_at)}"
    return line


def _complete(update: RequestUpdate, view: _ToolView) -> list[Block]:
    args = update.arguments
    done = _context(_settled_line(":white_check_mark:", "Answered", update))
    answer = view.summarize(args, answer_of(update.result))
    return [_header(view.header(args)), *view.describe(args), done, *answer]


def _rejected(update: RequestUpdate, view: _ToolView) -> list[Block]:
    args = update.arguments
    text = _settled_line(":no_entry_sign:", "*Rejected*", update)
    if update.reason:
        text += "\n" + _labelled("Reason", update.reason, SECTION_TEXT - length(text) - 1)
    return [_header(view.header(args)), *view.describe(args), _section(text)]


def _expired(update: RequestUpdate, view: _ToolView) -> list[Block]:
    args = update.arguments
    when = f" {slack_date(update.expires_at)}" if update.expires_at is not None else ""
    note = _context(f":hourglass: Expired{when}: no answer was given in time.")
    return [_header(view.header(args)), *view.describe(args), note]


def _cancelled(update: RequestUpdate, view: _ToolView) -> list[Block]:
    args = update.arguments
    note = _context(":heavy_minus_sign: Withdrawn: no answer is needed any more.")
    return [_header(view.header(args)), *view.describe(args), note]


_STATES: dict[RenderState, Callable[[RequestUpdate, _ToolView], list[Block]]] = {
    RenderState.IN_PROGRESS: _in_progress,
    RenderState.EXECUTING: _executing,
    RenderState.COMPLETE: _complete,
    RenderState.REJECTED: _rejected,
    RenderState.EXPIRED: _expired,
    RenderState.CANCELLED: _cancelled,
}

_TEXT_PREFIX = {
    RenderState.IN_PROGRESS: "Preparing request…",
    RenderState.EXECUTING: "",
    RenderState.COMPLETE: "Answered — ",
    RenderState.REJECTED: "Rejected — ",
    RenderState.EXPIRED: "Expired — ",
    RenderState.CANCELLED: "Withdrawn — ",
}
_NOTIFICATION_TEXT = 300  # a push notification shows a line or two; the blocks hold the rest


def _fallback_text(update: RequestUpdate, view: _ToolView) -> str:
    text = mention(update.actor_id) + " " if update.actor_id else ""
    text += _TEXT_PREFIX[update.state]
    if update.state is not RenderState.IN_PROGRESS:
        header = view.header(update.arguments)
        text += f"{header}: {fit(view.gist(update.arguments), _NOTIFICATION_TEXT)}"
    return truncate(text, _NOTIFICATION_TEXT)


def render_message(update: RequestUpdate, tool: HumanTool | None = None) -> SlackMessage:
    """The message for `update`: a tool's own "slack" renderer if it has one, else ours."""
    if update.state is RenderState.EXECUTING:  # the only state whose buttons carry the id
        _check_request_id(update.pending_id)
    view = _view_of(update.tool_name, tool)
    text = _fallback_text(update, view)
    custom = tool.renderers.get("slack") if tool is not None else None
    if custom is not None:  # the developer's renderer: a SlackMessage or just its blocks
        rendered = custom(update)
        return (
            rendered if isinstance(rendered, SlackMessage) else SlackMessage(text, list(rendered))
        )
    return SlackMessage(text, _STATES[update.state](update, view))


# -- modals ------------------------------------------------------------------------------------

_TEXT_INPUT_MAX = 3_000  # plain_text_input's max_length ceiling


def answer_model(tool: HumanTool | None, arguments: Args) -> type[BaseModel] | None:
    """The tool's answer model for these arguments; None without one (or with bad arguments)."""
    try:
        return tool.answer_model(dict(arguments)) if tool is not None else None
    except ValidationError:  # collectUserData builds its model from the arguments
        return None


def text_answer_key(tool: HumanTool | None, arguments: Args) -> str | None:
    """The answer model's one string field, which free text fills; None if there is none."""
    model = answer_model(tool, arguments)
    if model is None or len(model.model_fields) != 1:
        return None
    ((name, info),) = model.model_fields.items()
    return name if info.annotation is str else None


def _needs_json(tool: HumanTool | None, arguments: Args) -> bool:
    return answer_model(tool, arguments) is not None and text_answer_key(tool, arguments) is None


def _input(
    block_id: str, label: str, element: Block, *, optional: bool = False, action: str = INPUT_ACTION
) -> Block:
    block: Block = {
        "type": "input",
        "block_id": block_id,
        "label": plain(truncate(label, INPUT_LABEL)),
        "element": {**element, "action_id": action},
    }
    if optional:
        block["optional"] = True
    return block


def _text_input(*, multiline: bool = True) -> Block:
    return {"type": "plain_text_input", "multiline": multiline, "max_length": _TEXT_INPUT_MAX}


_Modal = tuple[str, str, list[Block]]  # (title, submit text, blocks); the title is safe text


def _reject_modal(update: RequestUpdate, tool: HumanTool | None) -> _Modal:
    action = _section(_labelled("Action", text_of(update.arguments, "action")))
    reason = _input(REASON_BLOCK, "Reason (optional)", _text_input(), optional=True)
    return "Reject request", "Reject", [action, reason]


def _answer_modal(update: RequestUpdate, tool: HumanTool | None) -> _Modal:
    args = update.arguments
    view = _view_of(update.tool_name, tool)
    blocks = view.describe(args)[: MODAL_BLOCKS - 2]
    answer = _input(ANSWER_BLOCK, "Your answer", _text_input())
    if _needs_json(tool, args):  # a custom tool whose answer has several fields
        answer["hint"] = plain(truncate("Answer with a JSON object.", INPUT_HINT))
    title = "Answer" if update.tool_name in BUILTIN_VIEWS else fit(update.tool_name, MODAL_TITLE)
    return title, "Send", [*blocks, answer]


_FORM_ELEMENTS: dict[str, Block] = {
    # Slack sends every value as a string; is_decimal_allowed because the answer model takes
    # int or float for a number field.
    "number": {"type": "number_input", "is_decimal_allowed": True},
    "email": {"type": "email_text_input"},
    "text": {"type": "plain_text_input", "max_length": _TEXT_INPUT_MAX},
}


def _form_modal(update: RequestUpdate, tool: HumanTool | None) -> _Modal:
    fields = form_fields(update.arguments)[: MODAL_BLOCKS - 1]  # one block kept for errors_hint
    # action_id = the name too: Slack only asks for unique action_ids within a block, but
    # unique within the view is valid under any reading, and `parse` keys on the block_id.
    inputs = [
        _input(f.name, escape(f.label), _FORM_ELEMENTS[f.type], action=f.name) for f in fields
    ]
    return "Fill in the form", "Submit", inputs


def _upload_modal(update: RequestUpdate, tool: HumanTool | None) -> _Modal:
    args = update.arguments
    purpose = _section(_labelled("Purpose", text_of(args, "purpose")))
    element: Block = {"type": "file_input", "max_files": 1}
    types = accepted_types(texts_of(args, "acceptedTypes"))
    filetypes = types.slack_filetypes()
    if filetypes:
        element["filetypes"] = filetypes
    file = _input(FILE_BLOCK, "File", element)
    if not types.any:
        accepted = "Accepted: " + escape(", ".join(texts_of(args, "acceptedTypes")))
        file["hint"] = plain(truncate(accepted, INPUT_HINT))
    return "Upload a file", "Upload", [purpose, file]


_MODALS: dict[ModalKind, Callable[[RequestUpdate, HumanTool | None], _Modal]] = {
    ModalKind.REJECT_REASON: _reject_modal,
    ModalKind.ANSWER: _answer_modal,
    ModalKind.FORM: _form_modal,
    ModalKind.UPLOAD: _upload_modal,
}


def render_modal(
    kind: str,
    update: RequestUpdate,
    tool: HumanTool | None = None,
    *,
    errors_hint: str | None = None,
) -> Block:
    """The modal (`views.open` / `views.update` payload) of `kind` for the request.

    `errors_hint` is shown above the inputs (e.g. "This request was already answered").
    """
    _check_request_id(update.pending_id)
    modal_kind = ModalKind(kind)
    title, submit, blocks = _MODALS[modal_kind](update, tool)
    if errors_hint:
        blocks = [_context(":warning: " + fit(errors_hint, SECTION_TEXT - 20)), *blocks]
    view: Block = {
        "type": "modal",
        "callback_id": MODAL_CALLBACK_PREFIX + modal_kind,
        "private_metadata": update.pending_id,
        "title": plain(truncate(title, MODAL_TITLE)),
        "blocks": blocks[:MODAL_BLOCKS],
        "close": plain(truncate("Cancel", MODAL_BUTTON)),
    }
    if any(block["type"] == "input" for block in view["blocks"]):
        view["submit"] = plain(truncate(submit, MODAL_BUTTON))
    return view


def pending_summary(requests: Sequence[RequestRecord]) -> str:
    """The /hitl reply: one line per open request (who must answer, what, until when)."""
    if not requests:
        return "Nothing is waiting for an answer in this channel."
    lines = [f"{len(requests)} request(s) waiting for an answer:"]
    for request in requests[:20]:
        who = mention(request.actor_id) if request.actor_id else "anyone"
        until = f", until {slack_date(request.expires_at)}" if request.expires_at else ""
        lines.append(f"• {fit(request.tool_name, 100)} for {who}{until}")
    if len(requests) > 20:
        lines.append(f"… and {len(requests) - 20} more")
    return truncate("\n".join(lines), SECTION_TEXT)
