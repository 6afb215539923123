"""Adaptive Cards 1.5 for human-input requests: a card per tool and render state.

Pure functions of a `RequestUpdate` (DESIGN.md §1 rule 4) that return plain JSON dicts valid
under the Adaptive Card 1.5 schema. Model-written text goes through `teams_text` (made inert,
cut to a byte budget) and arguments are read tolerantly, so any request, however odd its
arguments, renders a card Teams accepts, well under its ~28 KB message limit (`CARD_BUDGET`).

Only the live `executing` card has inputs and buttons. The card posted in the conversation is
the read-only one; its `refresh.userIds` makes Teams fetch the live card for the people who may
answer (DESIGN.md §5).

Action scheme (what `actions.parse_action` reads back):
- every `Action.Execute` has a verb `hitl_<verb>` (`Verb`) and data `{"request_id": <id>}`,
  nothing else: never the payload. The refresh action is `hitl_refresh` with the same data.
- Teams merges the card's input values into `data` by input id: `reason` (a rejection's or a
  decline's reason), `answer`, `choice` (the chosen option's index), `url` and `file_name`
  (uploadFile), and each form field's name (see `field_input_id` for the exception).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ValidationError

from bot.arguments import FormField, answer_of, form_fields, text_of, texts_of
from bot.human_input import RenderState, RequestUpdate
from bot.human_tools import EMAIL, HumanTool

Card = dict[str, Any]
Element = dict[str, Any]
Args = Mapping[str, Any]

# -- the action scheme -----------------------------------------------------------------------


class Verb(StrEnum):
    """An `Action.Execute` verb, as sent and received (a str: `Verb.REFRESH == "hitl_refresh"`)."""

    APPROVE = "hitl_approve"
    REJECT = "hitl_reject"
    SELECT = "hitl_select"
    SUBMIT = "hitl_submit"
    UPLOAD = "hitl_upload"
    CONFIRM = "hitl_confirm"
    CANCEL = "hitl_cancel"
    ANSWER = "hitl_answer"
    DECLINE = "hitl_decline"
    REFRESH = "hitl_refresh"


VERB_PREFIX = "hitl_"
REQUEST_ID_KEY = "request_id"
REASON_INPUT = "reason"
ANSWER_INPUT = "answer"
CHOICE_INPUT = "choice"
URL_INPUT = "url"
FILE_NAME_INPUT = "file_name"
OWN_KEYS = frozenset(
    {REQUEST_ID_KEY, REASON_INPUT, ANSWER_INPUT, CHOICE_INPUT, URL_INPUT, FILE_NAME_INPUT}
)
FIELD_PREFIX = "field."
MAX_REQUEST_ID = 200  # ours are 24 hex characters; anything longer is not one of ours


def field_input_id(name: str) -> str:
    """A form field's input id: its name, unless that is one of our own keys.

    Teams merges input values into the action's data by id, the input winning: a field named
    `request_id` would overwrite the request id, one named `reason` would collide with the
    decline reason. A field name cannot contain a dot (DataField's pattern), so `field.<name>`
    can never be another field's id.
    """
    return FIELD_PREFIX + name if name in OWN_KEYS else name


# -- limits (bytes of UTF-8 JSON, as httpx sends a card: compact, not ASCII-escaped) -----------

MESSAGE_LIMIT = 28_000  # Teams refuses a message over ~28 KB, the whole activity included
CARD_BUDGET = MESSAGE_LIMIT - 4_000  # what a card may take: room for the activity around it
TITLE = 200
TEXT = 3_000  # a question, a message, an action, a reason
NAME = 100  # a person's name or id
NOTE = 1_000  # an error or notice shown on the card
OPTION = 500  # one option (the core allows 500 characters)
OPTIONS_TEXT = 8_000  # all the options of a card together
MAX_OPTIONS = 100  # the core's maximum; more are cut, and the card says so
LISTED_OPTIONS = 20  # options listed on a card without the choice input
FIELD_LABEL = 200
FIELDS_TEXT = 5_000  # all the labels of a form together
MAX_FIELDS = 30  # the core allows 20; a form beyond this is shown cut (and cannot be sent)
FACTS = 20  # facts (a custom tool's arguments, an answer's fields) shown at most
FACT_TITLE = 100
FACT_VALUE = 500
FACTS_TEXT = 5_000  # all the values of one FactSet together
PREFILL_TEXT = 6_000  # the person's own values put back into the inputs after an error
FALLBACK_TEXT = 300
MAX_REFRESH_USERS = 60  # Teams refreshes automatically for at most 60 users
ANSWER_MAX = 10_000  # maxLength hints of the inputs (Teams's controls enforce them)
REASON_MAX = 2_000
FORM_TEXT_MAX = 4_000
URL_MAX = 2_048
FILE_NAME_MAX = 255

SCHEMA_URL = "http://adaptivecards.io/schemas/adaptive-card.json"
ELLIPSIS = "…"
EXPANDED_CHOICES = 5  # up to this many options show as radio buttons, more as a dropdown

# -- text ------------------------------------------------------------------------------------

_WJ = "\u2060"  # WORD JOINER: invisible, and breaks any syntax that needs two adjacent chars
_LT, _GT = "\u2039", "\u203a"  # what `<` and `>` are shown as: look alike, mean nothing
_SURROGATES = re.compile("[\ud800-\udfff]")  # lone ones (JSON `\ud800`): UTF-8 cannot encode them
_INVISIBLE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f]"  # control characters but tab and newline
    "|[\u202a-\u202e\u2066-\u2069]"  # bidi overrides and isolates: they reorder what is seen
)
_ENTITY = re.compile(r"&(?=#?[A-Za-z0-9]+;)")
_INLINE = re.compile(r"[\\*_~`]")
_LINE_MARK = re.compile(r"^([ \t]*)([-+#]|[0-9]{1,9}[.)])", re.MULTILINE)
# What `teams_text` writes is atomic when cut: `\x` escapes and `x` + WORD JOINER pairs.
_TOKEN = re.compile(rf"\\.|.{_WJ}|.", re.DOTALL)


def byte_length(text: str) -> int:
    """What `text` adds to a card: its UTF-8 bytes inside a JSON string (escapes counted)."""
    return sum(_char_bytes(char) for char in text)


def _char_bytes(char: str) -> int:
    if char in '"\\\n\t\r\b\f':
        return 2
    if char < " ":
        return 6  # \u00XX
    return len(char.encode("utf-8", "surrogatepass"))


def _inert(text: str) -> str:
    """Text no renderer reads as markup: no tags, entities or card functions.

    `<` and `>` become the single angle quotation marks U+2039 and U+203A (which, unlike the
    fullwidth forms, no Unicode normalisation turns back into `<`): no `<at>` mention, no HTML
    (iOS has rendered a TextBlock holding `<`, `&` or `>` as HTML), no `<https://…>` autolink.
    An `&` that starts an entity and a `{{` that starts a DATE()/TIME() function get a WORD
    JOINER.
    """
    text = _INVISIBLE.sub("", _SURROGATES.sub("\ufffd", text))
    text = text.replace("<", _LT).replace(">", _GT)
    return _ENTITY.sub("&" + _WJ, text).replace("{{", "{" + _WJ + "{")


def _markdown_inert(text: str) -> str:
    """Text a TextBlock or Fact shows as written: the Adaptive Cards markdown subset defused.

    Links: a WORD JOINER after every `]` breaks `[x](url)`, `[x][ref]` and `[ref]: url` on any
    parser, whether or not it honours backslash escapes (some Teams clients have not). Emphasis,
    strikethrough, code and list markers are cosmetic, so CommonMark backslash escapes do; the
    backslash itself is escaped first so model text cannot cancel one of ours.
    """
    text = _INLINE.sub(lambda m: "\\" + m.group(), _inert(text))
    text = _LINE_MARK.sub(_escape_mark, text)
    return text.replace("]", "]" + _WJ)


def _escape_mark(match: re.Match[str]) -> str:
    indent, mark = match.groups()
    if mark[-1] in ".)":  # `1.` or `1)`: escape the punctuation, the digits are text
        return f"{indent}{mark[:-1]}\\{mark[-1]}"
    return f"{indent}\\{mark}"


def cut(text: str, limit: int) -> str:
    """`text` if it takes `limit` bytes or fewer (`byte_length`), else cut with "…" to fit.

    Never cuts inside an escape or a WORD JOINER pair that `teams_text` wrote.
    """
    if byte_length(text) <= limit:
        return text
    budget = limit - byte_length(ELLIPSIS)
    if budget < 0:
        return ""
    kept: list[str] = []
    used = 0
    for token in _TOKEN.findall(text):
        used += byte_length(token)
        if used > budget:
            break
        kept.append(token)
    return "".join(kept).rstrip() + ELLIPSIS


def teams_text(text: str, limit: int) -> str:
    """Model-written text for a field Teams renders as markdown (TextBlock, Fact, fallbackText):
    inert, and cut to `limit` bytes with "…".

    The model must not ping anyone, hide a link or fake our own lines:
    - `<at>…</at>` mentions, HTML-ish tags and `<https://…>` autolinks lose their `<` `>`
      (shown as U+2039 and U+203A); entities and `{{DATE()}}` functions are broken by an
      invisible joiner;
    - links `[x](url)` are broken by an invisible joiner after `]`, on every client;
    - `*`, `_`, `~`, `` ` ``, `\\` and line-start list markers are backslash-escaped;
    - lone surrogates become U+FFFD, control characters and bidi overrides are dropped.
    A bare URL stays as written: it shows its own target, so nothing is hidden.
    """
    return cut(_markdown_inert(text), limit)


def plain_text(text: str, limit: int) -> str:
    """Text for a field Teams shows without markdown (input labels and placeholders, choice
    titles, action titles): the tag and entity defusing of `teams_text`, no backslashes."""
    return cut(_inert(text), limit)


def teams_date(when: datetime) -> str:
    """A date and time each reader sees in their own time zone (the card's DATE/TIME functions);
    only valid inside a TextBlock's text."""
    if when.tzinfo is None:  # the core writes aware UTC; a naive one is taken as UTC too
        when = when.replace(tzinfo=UTC)
    iso = when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"{{{{DATE({iso}, SHORT)}}}} {{{{TIME({iso})}}}}"


def card_size(card: Mapping[str, Any]) -> int:
    """The card's size as sent: compact UTF-8 JSON, which `CARD_BUDGET` bounds."""
    return len(json.dumps(card, ensure_ascii=False, separators=(",", ":")).encode())


# -- elements --------------------------------------------------------------------------------


def _block(text: str, **props: Any) -> Element:
    """A TextBlock of safe text (already escaped, or ours)."""
    return {"type": "TextBlock", "text": text if text.strip() else "(empty)", "wrap": True, **props}


def _header(raw: str) -> Element:
    return _block(teams_text(raw, TITLE), size="medium", weight="bolder", style="heading")


def _note(text: str) -> Element:
    return _block(text, isSubtle=True, size="small")


def _attention(text: str) -> Element:
    return _block("⚠️ " + teams_text(text, NOTE), color="attention", weight="bolder")


def _labelled(label: str, raw: str, limit: int = TEXT) -> list[Element]:
    """A bold label (ours) over model-written text."""
    return [_block(label, weight="bolder"), _block(teams_text(raw, limit), spacing="none")]


def _facts(pairs: Sequence[tuple[str, str]], budget: int = FACTS_TEXT) -> list[Element]:
    """Title/value pairs (model-written) as a FactSet of at most FACTS, sharing `budget`."""
    shown = pairs[:FACTS]
    if not shown:
        return []
    each = min(FACT_VALUE, budget // len(shown))
    facts = [
        {"title": teams_text(k, FACT_TITLE) or "(empty)", "value": teams_text(v, each)}
        for k, v in shown
    ]
    elements: list[Element] = [{"type": "FactSet", "facts": facts}]
    if len(pairs) > FACTS:
        elements.append(_note(f"…and {len(pairs) - FACTS} more"))
    return elements


def _execute(title: str, verb: Verb, request_id: str, style: str | None = None) -> Element:
    action: Element = {
        "type": "Action.Execute",
        "title": title,
        "verb": verb.value,
        "data": {REQUEST_ID_KEY: request_id},
    }
    if style is not None:
        action["style"] = style
    return action


def _text_input(input_id: str, max_length: int, **props: Any) -> Element:
    return {"type": "Input.Text", "id": input_id, "maxLength": max_length, **props}


def _display(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


# -- the person's values, put back after an error ----------------------------------------------


class _Prefill:
    """What the person entered, returned to the inputs so an error costs them nothing.

    A value that does not fit its input (too long, not a number, not an option) or the card's
    budget is left out rather than cut: a cut value would be sent back as if typed.
    """

    def __init__(self, values: Mapping[str, str] | None) -> None:
        self._values = values or {}
        self._left = PREFILL_TEXT

    def __call__(self, element: Element) -> Element:
        value = self._values.get(element["id"])
        if not isinstance(value, str) or not value.strip():
            return element
        typed = self._typed(element, _SURROGATES.sub("\ufffd", value))
        cost = byte_length(str(typed))
        if typed is None or cost > self._left:
            return element
        self._left -= cost
        return {**element, "value": typed}

    @staticmethod
    def _typed(element: Element, value: str) -> str | int | float | None:
        if element["type"] == "Input.Number":
            return _number(value)
        if element["type"] == "Input.ChoiceSet":
            return value if any(c["value"] == value for c in element["choices"]) else None
        return value if len(value) <= element.get("maxLength", ANSWER_MAX) else None


def _number(value: str) -> int | float | None:
    """Input.Number's value must be a JSON number: a finite one, an int when it is whole."""
    try:
        number = float(value)
    except ValueError:
        return None
    if not math.isfinite(number):
        return None
    return int(number) if number.is_integer() and abs(number) < 2**53 else number


# -- tool views --------------------------------------------------------------------------------

Controls = tuple[list[Element], list[Element]]
"""A live card's inputs (body elements) and its buttons (card actions)."""


@dataclass(frozen=True, slots=True)
class _ToolView:
    """How one kind of tool shows. `describe` gets `live`: the live card shows the options and
    fields as inputs, the others list them."""

    header: Callable[[Args], str]  # raw text: escaped where it is used
    describe: Callable[[Args, bool], list[Element]]
    controls: Callable[[Args, str, _Prefill], Controls]
    summarize: Callable[[Args, Any], list[Element]]
    gist: Callable[[Args], str]  # raw text for fallbackText
    # False for tools with their own no (Reject, Cancel): a second way to refuse confuses.
    declinable: bool = True


def _ask_controls(args: Args, request_id: str, prefill: _Prefill) -> Controls:
    answer = _text_input(ANSWER_INPUT, ANSWER_MAX, label="Your answer", isMultiline=True)
    return [prefill(answer)], [_execute("Send", Verb.ANSWER, request_id, "positive")]


def _answer_summary(args: Args, answer: Any) -> list[Element]:
    if isinstance(answer, dict) and isinstance(answer.get("answer"), str):
        return _labelled("Answer", answer["answer"])
    return _raw_summary(args, answer)


ASK = _ToolView(
    header=lambda a: "Question",
    describe=lambda a, live: [_block(teams_text(text_of(a, "question"), TEXT))],
    controls=_ask_controls,
    summarize=_answer_summary,
    gist=lambda a: text_of(a, "question"),
)


def _approval_describe(args: Args, live: bool) -> list[Element]:
    action, reason = text_of(args, "action"), text_of(args, "reason")
    return _labelled("Action", action) + _labelled("Reason", reason)


def _approval_controls(args: Args, request_id: str, prefill: _Prefill) -> Controls:
    reason = _text_input(
        REASON_INPUT, REASON_MAX, isMultiline=True, placeholder="Reason (optional, for a rejection)"
    )
    approve = _execute("Approve", Verb.APPROVE, request_id, "positive")
    return [prefill(reason)], [approve, _execute("Reject", Verb.REJECT, request_id, "destructive")]


def _approval_summary(args: Args, answer: Any) -> list[Element]:
    if not isinstance(answer, dict) or not isinstance(answer.get("approved"), bool):
        return _raw_summary(args, answer)
    verdict = [_block("Approved" if answer["approved"] else "Rejected", weight="bolder")]
    reason = answer.get("reason")
    return verdict + (_labelled("Reason", reason) if isinstance(reason, str) and reason else [])


APPROVAL = _ToolView(
    header=lambda a: "Approval needed",
    describe=_approval_describe,
    controls=_approval_controls,
    summarize=_approval_summary,
    gist=lambda a: text_of(a, "action"),
    declinable=False,
)


def _select_describe(args: Args, live: bool) -> list[Element]:
    blocks = [_block(teams_text(text_of(args, "question"), TEXT))]
    if live:  # the choice input shows them
        return blocks
    options = texts_of(args, "options")
    listed = _facts([(str(i + 1), o) for i, o in enumerate(options[:LISTED_OPTIONS])])
    more = len(options) - LISTED_OPTIONS
    return blocks + listed + ([_note(f"…and {more} more options")] if more > 0 else [])


def _select_controls(args: Args, request_id: str, prefill: _Prefill) -> Controls:
    options = texts_of(args, "options")
    shown = options[:MAX_OPTIONS]
    if not shown:  # nothing to choose: only a decline can answer it
        return [], []
    each = min(OPTION, OPTIONS_TEXT // len(shown))
    choices = [{"title": plain_text(o, each), "value": str(i)} for i, o in enumerate(shown)]
    expanded = len(shown) <= EXPANDED_CHOICES
    choice: Element = {
        "type": "Input.ChoiceSet",
        "id": CHOICE_INPUT,
        "label": "Your choice",
        "style": "expanded" if expanded else "compact",
        "choices": choices,
        "wrap": True,
        "errorMessage": "Choose one of the options",
    }
    if not expanded:
        choice["placeholder"] = "Choose…"
    inputs = [prefill(choice)]
    if len(options) > MAX_OPTIONS:
        inputs.append(_note(f"Showing the first {MAX_OPTIONS} of {len(options)} options."))
    return inputs, [_execute("Submit", Verb.SELECT, request_id, "positive")]


def _select_summary(args: Args, answer: Any) -> list[Element]:
    if isinstance(answer, dict) and isinstance(answer.get("selectedValue"), str):
        return _labelled("Selected", answer["selectedValue"], OPTION)
    return _raw_summary(args, answer)


SELECT = _ToolView(
    header=lambda a: "Choose an option",
    describe=_select_describe,
    controls=_select_controls,
    summarize=_select_summary,
    gist=lambda a: text_of(a, "question"),
)

_KIND_NAMES = {"text": "Text", "number": "Number", "email": "Email address"}


def _form_describe(args: Args, live: bool) -> list[Element]:
    fields = form_fields(args)
    if live:
        return [_block("Please fill in the form below.")]
    return [_block("Please fill in:"), *_facts([(f.label, _KIND_NAMES[f.type]) for f in fields])]


def _field_input(field: FormField, label_limit: int) -> Element:
    label = plain_text(field.label, label_limit)
    element: Element = {"id": field_input_id(field.name), "label": label}
    if field.type == "number":
        return {"type": "Input.Number", **element, "errorMessage": "Enter a number"}
    if field.type == "email":
        return _text_input(
            field_input_id(field.name),
            254,
            **element,
            style="Email",
            regex=EMAIL.pattern,
            errorMessage="Enter a valid email address",
        )
    return _text_input(
        field_input_id(field.name),
        FORM_TEXT_MAX,
        **element,
        errorMessage=f"Enter at most {FORM_TEXT_MAX:,} characters",
    )


def _form_controls(args: Args, request_id: str, prefill: _Prefill) -> Controls:
    fields = form_fields(args)
    shown = fields[:MAX_FIELDS]
    if not shown:
        return [], []
    each = min(FIELD_LABEL, FIELDS_TEXT // len(shown))
    inputs = [prefill(_field_input(f, each)) for f in shown]
    if len(fields) > MAX_FIELDS:
        inputs.append(_note(f"Showing the first {MAX_FIELDS} of {len(fields)} fields."))
    return inputs, [_execute("Submit", Verb.SUBMIT, request_id, "positive")]


def _form_summary(args: Args, answer: Any) -> list[Element]:
    if not isinstance(answer, dict):
        return _raw_summary(args, answer)
    labels = {f.name: f.label for f in form_fields(args)}
    return _facts([(labels.get(str(k), str(k)), _display(v)) for k, v in answer.items()])


FORM = _ToolView(
    header=lambda a: "Information needed",
    describe=_form_describe,
    controls=_form_controls,
    summarize=_form_summary,
    gist=lambda a: f"{len(form_fields(a))} fields",
)


def _upload_describe(args: Args, live: bool) -> list[Element]:
    blocks = _labelled("Purpose", text_of(args, "purpose"))
    types = texts_of(args, "acceptedTypes")
    if types:
        blocks.append(_note("Accepted: " + teams_text(", ".join(types), NOTE)))
    return blocks


# A card cannot carry a file: Adaptive Cards have no file input, and a Teams bot receives files
# only as attachments of a message in a 1:1 chat (or sends them through a file consent card,
# also 1:1 only). A link works in every conversation, channels included, and leaves the file
# where it is, with its sharing permissions; so the card asks for one (a SharePoint or
# OneDrive sharing link in practice), plus an optional name for links that show none.
def _upload_controls(args: Args, request_id: str, prefill: _Prefill) -> Controls:
    hint = _note("Share the file in OneDrive or SharePoint and paste its link here.")
    url = _text_input(
        URL_INPUT,
        URL_MAX,
        label="Link to the file",
        style="Url",
        placeholder="https://…",
        errorMessage="Enter an https:// link",
    )
    name = _text_input(
        FILE_NAME_INPUT, FILE_NAME_MAX, label="File name (optional)", placeholder="report.pdf"
    )
    return [hint, prefill(url), prefill(name)], [
        _execute("Send link", Verb.UPLOAD, request_id, "positive")
    ]


def _upload_summary(args: Args, answer: Any) -> list[Element]:
    if not isinstance(answer, dict) or not isinstance(answer.get("fileName"), str):
        return _raw_summary(args, answer)
    pairs = [("File", answer["fileName"])]
    size = answer.get("fileSize")
    if isinstance(size, int) and not isinstance(size, bool) and size > 0:
        pairs.append(("Size", f"{size:,} bytes"))
    url = answer.get("url")
    if isinstance(url, str):  # shown as text: a person's link, its target in plain sight
        pairs.append(("Link", url))
    return _facts(pairs)


UPLOAD = _ToolView(
    header=lambda a: "File requested",
    describe=_upload_describe,
    controls=_upload_controls,
    summarize=_upload_summary,
    gist=lambda a: text_of(a, "purpose"),
)

_SEVERITY_COLOR = {"warning": "warning", "danger": "attention"}


def _confirm_describe(args: Args, live: bool) -> list[Element]:
    severity = args.get("severity")
    text = teams_text(text_of(args, "message"), TEXT)
    if severity in _SEVERITY_COLOR:
        return [_block("⚠️ " + text, color=_SEVERITY_COLOR[severity])]
    return [_block(text)]


def _confirm_controls(args: Args, request_id: str, prefill: _Prefill) -> Controls:
    style = "destructive" if args.get("severity") == "danger" else "positive"
    confirm = _execute("Confirm", Verb.CONFIRM, request_id, style)
    return [], [confirm, _execute("Cancel", Verb.CANCEL, request_id)]


def _confirm_summary(args: Args, answer: Any) -> list[Element]:
    if not isinstance(answer, dict) or not isinstance(answer.get("confirmed"), bool):
        return _raw_summary(args, answer)
    return [_block("Confirmed" if answer["confirmed"] else "Cancelled", weight="bolder")]


CONFIRM = _ToolView(
    header=lambda a: text_of(a, "title") or "Please confirm",
    describe=_confirm_describe,
    controls=_confirm_controls,
    summarize=_confirm_summary,
    gist=lambda a: text_of(a, "message"),
    declinable=False,
)


def _raw_summary(args: Args, answer: Any) -> list[Element]:
    """Any answer: a JSON object as facts, anything else as text."""
    if isinstance(answer, dict):
        return _facts([(str(k), _display(v)) for k, v in answer.items()])
    return _labelled("Answer", "" if answer is None else _display(answer))


def _generic_view(name: str, tool: HumanTool | None) -> _ToolView:
    """A custom tool: its description and arguments shown, answered with free text."""

    def describe(args: Args, live: bool) -> list[Element]:
        blocks = [_block(teams_text(tool.description, TEXT))] if tool is not None else []
        return blocks + _facts([(str(k), text_of(args, k)) for k in args])

    def controls(args: Args, request_id: str, prefill: _Prefill) -> Controls:
        inputs, actions = _ask_controls(args, request_id, prefill)
        if needs_json(tool, args):  # an answer of several fields
            inputs[0]["placeholder"] = "Answer with a JSON object"
        return inputs, actions

    return _ToolView(
        header=lambda a: name,
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


# -- custom tools' answers ---------------------------------------------------------------------


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


def needs_json(tool: HumanTool | None, arguments: Args) -> bool:
    """Whether the free-text answer must be a JSON object (an answer of several fields)."""
    return answer_model(tool, arguments) is not None and text_answer_key(tool, arguments) is None


# -- cards per state ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Context:
    live: bool
    actor_name: str | None
    answered_by_name: str | None
    error: str | Mapping[str, str] | None
    values: Mapping[str, str] | None


Body = tuple[list[Element], list[Element]]  # the card's body and its actions


def _person(name: str | None, user_id: str | None) -> str:
    return teams_text(name or user_id or "someone", NAME)


def _who(update: RequestUpdate, ctx: _Context) -> str:
    name = _person(ctx.actor_name, update.actor_id)
    if ctx.live:
        line = f"{name}, this is for you." if update.actor_id else "Anyone here can answer."
    else:
        line = f"Waiting for {name} to answer." if update.actor_id else "Waiting for an answer."
    if update.expires_at is not None:
        line += f" Expires {teams_date(update.expires_at)}."
    return line


def _error_text(error: str | Mapping[str, str], update: RequestUpdate) -> str:
    """An error string as is; an errors dict (input id -> message) as "Label: message" lines."""
    if isinstance(error, str):
        return error
    labels = {field_input_id(f.name): f.label for f in form_fields(update.arguments)}
    labels = {**_INPUT_LABELS, **labels}
    lines = [(labels.get(k, k), v) for k, v in error.items()]
    return "\n\n".join(f"{label}: {message}" if label else message for label, message in lines)


_INPUT_LABELS = {
    REASON_INPUT: "Reason",
    ANSWER_INPUT: "Your answer",
    CHOICE_INPUT: "Your choice",
    URL_INPUT: "Link to the file",
    FILE_NAME_INPUT: "File name",
}


def _errors(update: RequestUpdate, ctx: _Context) -> list[Element]:
    return [_attention(_error_text(ctx.error, update))] if ctx.error else []


def _in_progress(update: RequestUpdate, view: _ToolView, ctx: _Context) -> Body:
    # The arguments may still be streaming in: show none of them.
    return [_block("⏳ Preparing request…")], []


def _executing(update: RequestUpdate, view: _ToolView, ctx: _Context) -> Body:
    args = update.arguments
    top = [_header(view.header(args)), *view.describe(args, ctx.live), _note(_who(update, ctx))]
    if not ctx.live:
        return top + _errors(update, ctx), []
    prefill = _Prefill(ctx.values)
    inputs, actions = view.controls(args, update.pending_id, prefill)
    if view.declinable:
        reason = _text_input(
            REASON_INPUT,
            REASON_MAX,
            isMultiline=True,
            placeholder="Reason (optional, if you decline)",
        )
        inputs.append(prefill(reason))
        actions.append(_execute("Decline", Verb.DECLINE, update.pending_id))
    return top + _errors(update, ctx) + inputs, actions


def _settled_line(icon: str, verb: str, update: RequestUpdate, ctx: _Context) -> str:
    line = f"{icon} {verb}"
    if update.settled_by or ctx.answered_by_name:
        line += " by " + _person(ctx.answered_by_name, update.settled_by)
    if update.settled_at is not None:
        line += " " + teams_date(update.settled_at)
    return line


def _complete(update: RequestUpdate, view: _ToolView, ctx: _Context) -> Body:
    args = update.arguments
    done = _note(_settled_line("✅", "Answered", update, ctx))
    answer = view.summarize(args, answer_of(update.result))
    body = [_header(view.header(args)), *view.describe(args, False), done, *answer]
    return body + _errors(update, ctx), []


def _rejected(update: RequestUpdate, view: _ToolView, ctx: _Context) -> Body:
    args = update.arguments
    body = [_header(view.header(args)), *view.describe(args, False)]
    body.append(_block(_settled_line("🚫", "Rejected", update, ctx), weight="bolder"))
    if update.reason:
        body += _labelled("Reason", update.reason)
    return body + _errors(update, ctx), []


def _closed(update: RequestUpdate, view: _ToolView, ctx: _Context, note: str) -> Body:
    args = update.arguments
    body = [_header(view.header(args)), *view.describe(args, False), _note(note)]
    return body + _errors(update, ctx), []


def _expired(update: RequestUpdate, view: _ToolView, ctx: _Context) -> Body:
    when = f" {teams_date(update.expires_at)}" if update.expires_at is not None else ""
    return _closed(update, view, ctx, f"⌛ Expired{when}: no answer was given in time.")


def _cancelled(update: RequestUpdate, view: _ToolView, ctx: _Context) -> Body:
    return _closed(update, view, ctx, f"{_MINUS} Withdrawn: no answer is needed any more.")


_MINUS = "\u2796"  # heavy minus sign, the "withdrawn" mark

_STATES: dict[RenderState, Callable[[RequestUpdate, _ToolView, _Context], Body]] = {
    RenderState.IN_PROGRESS: _in_progress,
    RenderState.EXECUTING: _executing,
    RenderState.COMPLETE: _complete,
    RenderState.REJECTED: _rejected,
    RenderState.EXPIRED: _expired,
    RenderState.CANCELLED: _cancelled,
}

_FALLBACK_PREFIX = {
    RenderState.EXECUTING: "",
    RenderState.COMPLETE: "Answered: ",
    RenderState.REJECTED: "Rejected: ",
    RenderState.EXPIRED: "Expired: ",
    RenderState.CANCELLED: "Withdrawn: ",
}


def _fallback_text(update: RequestUpdate, view: _ToolView) -> str:
    """What a client without Adaptive Cards 1.5 shows instead of the card."""
    if update.state is RenderState.IN_PROGRESS:
        return "Preparing request…"
    args = update.arguments
    text = f"{_FALLBACK_PREFIX[update.state]}{view.header(args)}: {view.gist(args)}"
    return teams_text(text, FALLBACK_TEXT)


# -- the card ----------------------------------------------------------------------------------


def check_request_id(request_id: str) -> None:
    """Refuse an id no action could carry back (it is not model-written, so never cut)."""
    if not 0 < len(request_id) <= MAX_REQUEST_ID or request_id != request_id.strip():
        raise ValueError(f"unusable request id for Teams: {request_id[:40]!r}")


def refresh_clause(request_id: str, user_ids: Sequence[str]) -> Element | None:
    """`refresh`: Teams runs `hitl_refresh` for these users when they see the card and shows
    them the card we answer with (the live one, for those who may answer)."""
    unique = list(dict.fromkeys(u for u in user_ids if isinstance(u, str) and u))
    if not unique:
        return None
    return {
        "action": {
            "type": "Action.Execute",
            "verb": Verb.REFRESH.value,
            "data": {REQUEST_ID_KEY: request_id},
        },
        "userIds": unique[:MAX_REFRESH_USERS],
    }


def render_card(
    update: RequestUpdate,
    tool: HumanTool | None = None,
    *,
    live: bool,
    refresh_user_ids: Sequence[str] = (),
    actor_name: str | None = None,
    answered_by_name: str | None = None,
    error: str | Mapping[str, str] | None = None,
    values: Mapping[str, str] | None = None,
) -> Card:
    """The Adaptive Card for `update`: a tool's own "teams" renderer if it has one, else ours.

    `live` (executing only): the card with inputs and buttons, for someone who may answer;
    else the read-only card. `refresh_user_ids` (executing only) adds the refresh clause.
    `error`, a message or `answer_from_action`'s errors (input id -> message), is shown in
    attention colour (above the inputs of a live card); `values` (input id -> what the person
    entered, e.g. `CardAction.inputs`) are put back into a live card's inputs.
    """
    executing = update.state is RenderState.EXECUTING
    if executing:  # the only state whose actions carry the id
        check_request_id(update.pending_id)
    view = _view_of(update.tool_name, tool)
    custom = tool.renderers.get("teams") if tool is not None else None
    if custom is not None:  # the developer's renderer; the refresh clause is still ours
        card: Card = dict(custom(update, live=live and executing))
    else:
        ctx = _Context(live and executing, actor_name, answered_by_name, error, values)
        body, actions = _STATES[update.state](update, view, ctx)
        card = _card(body, actions, _fallback_text(update, view))
    refresh = refresh_clause(update.pending_id, refresh_user_ids) if executing else None
    if refresh is not None:
        card["refresh"] = refresh
    return card if custom is not None else _within_budget(card)


def _card(body: list[Element], actions: list[Element], fallback: str) -> Card:
    card: Card = {
        "type": "AdaptiveCard",
        "$schema": SCHEMA_URL,
        "version": "1.5",
        "fallbackText": fallback,
        "body": body,
    }
    if actions:
        card["actions"] = actions
    return card


# -- the size safety net -------------------------------------------------------------------------

# Every text above has its own budget, and the sum of them fits CARD_BUDGET for the largest
# requests the core accepts. Requests it does not (arguments read tolerantly) and long refresh
# lists are what this is for: texts are cut further, structure and ids untouched.
_SHRINK_CAPS = (1_500, 750, 300)


def _within_budget(card: Card) -> Card:
    for cap in _SHRINK_CAPS:
        if card_size(card) <= CARD_BUDGET:
            break
        for node, key in _cuttable(card["body"]):
            if "{{" not in node[key]:  # never cut one of our DATE()/TIME() lines
                node[key] = cut(node[key], cap)
    return card


def _cuttable(body: list[Element]) -> Iterator[tuple[dict[str, Any], str]]:
    """Each text the safety net may cut: TextBlock texts, facts, choice titles (not values)."""
    for element in body:
        kind = element.get("type")
        if kind == "TextBlock":
            yield element, "text"
        elif kind == "FactSet":
            for fact in element["facts"]:
                yield fact, "title"
                yield fact, "value"
        elif kind == "Input.ChoiceSet":
            for choice in element["choices"]:
                yield choice, "title"
