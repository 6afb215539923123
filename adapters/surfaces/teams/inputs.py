"""A core form (bot/human_tools/forms.py) drawn as Adaptive Card 1.5 inputs, one or two per field.

Input ids are `<form name>.<field name>` (a field drawn as two inputs adds `.<part>`): Teams
merges input values into an action's `data` by id, and a dotted id can never be our own
`request_id` key, nor the id of another form's field (a decline's `decline.reason` beside a
form field named `reason`). `actions.form_inputs` reads them back by the same ids.

What a card cannot do, and what it does instead:
- a datetime is an Input.Date and an Input.Time (in UTC): the parser joins them;
- a file cannot travel in a card (Adaptive Cards have no file input; a Teams bot receives files
  only in a personal chat): a link to the file (shared in OneDrive or SharePoint) and its name;
- a person: the AC 1.5 schema has no people picker (`choices.data` is a Teams extension the
  schema refuses), so the people we know as a choice, or an id or email address typed in.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from adapters.surfaces.teams.text import (
    DESCRIPTION,
    FIELDS,
    FILE_NAME_MAX,
    LABEL,
    LABELS_TEXT,
    MAX_CHOICES,
    NOTE,
    OPTION,
    OPTIONS_TEXT,
    PREFILL_TEXT,
    URL_MAX,
    byte_length,
    clean,
    plain_text,
    teams_text,
)
from bot.human_tools.forms import (
    EMAIL,
    LONG_TEXT_MAX,
    TEXT_MAX,
    URL,
    FieldKind,
    Form,
    FormField,
    Option,
    expects,
)

Element = dict[str, Any]
Pick = tuple[str, str]  # (user id as the core knows it, display name)

DATE, TIME, LINK, NAME, OTHER = "date", "time", "url", "name", "other"  # the parts of a field
OPTIONS_EACH = 100  # a choice shows at most this many options (the core's maximum)
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TIME = re.compile(r"^\d{2}:\d{2}(:\d{2})?$")


def input_id(form: Form, spec: FormField, part: str = "") -> str:
    """The id of a field's input (`part` for a field drawn as two inputs)."""
    return f"{form.name}.{spec.name}" + (f".{part}" if part else "")


@dataclass(frozen=True, slots=True)
class Filled:
    """A form as the person left it: their values by input id (what Teams sent), the core's
    errors by field name ("" for the form as a whole)."""

    values: Mapping[str, Any] = field(default_factory=dict)
    errors: Mapping[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Space:
    """What the inputs of one card may take together: choices and their titles, labels, and
    the person's values put back (a value that does not fit is left out, never cut: a cut value
    would be sent back as if typed)."""

    choices: int = OPTIONS_EACH  # of one choice input
    choice_title: int = OPTION
    label: int = LABEL
    prefill: int = PREFILL_TEXT

    @classmethod
    def for_forms(cls, forms: Sequence[Form], people: Sequence[Pick]) -> Space:
        fields = [f for form in forms for f in form.fields[:FIELDS]]
        sets = [n for n in (_choice_count(f, people) for f in fields) if n]
        each = OPTIONS_EACH  # the most options of one input that lets all fit MAX_CHOICES
        while each > 1 and sum(min(n, each) for n in sets) > MAX_CHOICES:
            each -= 1
        shown = sum(min(n, each) for n in sets)
        return cls(
            choices=each,
            choice_title=min(OPTION, OPTIONS_TEXT // max(1, shown)),
            label=min(LABEL, LABELS_TEXT // max(1, len(fields))),
        )


def _choice_count(spec: FormField, people: Sequence[Pick]) -> int:
    if spec.kind in (FieldKind.CHOICE, FieldKind.CHOICES):
        return len(spec.options)
    return len(people) if spec.kind is FieldKind.USER else 0


# -- a form ----------------------------------------------------------------------------------


def form_elements(
    form: Form,
    *,
    filled: Filled,
    room: Space,
    people: Sequence[Pick] = (),
    required: bool = True,
) -> list[Element]:
    """The inputs of `form`, each field's error under it and the form's own above them.

    `required=False` leaves `isRequired` out: Teams checks every input of a card (and of its
    parents) before an action runs, so required inputs in the card's body would hold back
    every other control; there the core's own check (`Invalid`) says what is missing."""
    elements: list[Element] = []
    if filled.errors.get(""):
        elements.append(_error(filled.errors[""]))
    for spec in form.fields[:FIELDS]:
        elements += _field(form, spec, filled, room, people, required)
    if len(form.fields) > FIELDS:
        elements.append(_note(f"Showing the first {FIELDS} of {len(form.fields)} fields."))
    return elements


def _field(
    form: Form,
    spec: FormField,
    filled: Filled,
    room: Space,
    people: Sequence[Pick],
    required: bool,
) -> list[Element]:
    label = plain_text(spec.label, room.label) or spec.name
    base: Element = {"id": input_id(form, spec), "label": label}
    if required and spec.required and spec.kind is not FieldKind.BOOLEAN:
        base.update(isRequired=True, errorMessage=expects(spec))
    elif spec.kind in _CHECKED:  # the client checks the format: say what it wants
        base["errorMessage"] = expects(spec)
    drawn = _DRAW[spec.kind](spec, base, room, people)
    elements = [_put_back(e, spec, form, filled, room, people) for e in drawn]
    if spec.description:
        elements.append(_note(teams_text(spec.description, DESCRIPTION)))
    if filled.errors.get(spec.name):
        elements.append(_error(filled.errors[spec.name]))
    return elements


_CHECKED = {FieldKind.NUMBER, FieldKind.INTEGER, FieldKind.EMAIL, FieldKind.URL}


def _note(text: str) -> Element:
    return {"type": "TextBlock", "text": text, "wrap": True, "isSubtle": True, "size": "small",
            "spacing": "none"}  # fmt: skip


def _error(message: str) -> Element:
    text = "⚠️ " + teams_text(message, NOTE)
    return {"type": "TextBlock", "text": text, "wrap": True, "color": "attention",
            "size": "small", "spacing": "none"}  # fmt: skip


# -- each kind ---------------------------------------------------------------------------------


def _text(spec: FormField, base: Element, room: Space, people: Sequence[Pick]) -> list[Element]:
    multiline = spec.kind is FieldKind.LONG_TEXT
    limit = spec.max_length or (LONG_TEXT_MAX if multiline else TEXT_MAX)
    element = {"type": "Input.Text", **base, "maxLength": limit}
    return [{**element, "isMultiline": True} if multiline else element]


def _number(spec: FormField, base: Element, room: Space, people: Sequence[Pick]) -> list[Element]:
    element: Element = {"type": "Input.Number", **base}
    for key, bound in (("min", spec.minimum), ("max", spec.maximum)):
        number = _json_number(bound)
        if number is not None:
            element[key] = number
    return [element]


def _email(spec: FormField, base: Element, room: Space, people: Sequence[Pick]) -> list[Element]:
    return [{"type": "Input.Text", **base, "style": "email", "regex": EMAIL.pattern,
             "maxLength": 254}]  # fmt: skip


def _url(spec: FormField, base: Element, room: Space, people: Sequence[Pick]) -> list[Element]:
    return [{"type": "Input.Text", **base, "style": "url", "regex": URL.pattern,
             "maxLength": URL_MAX, "placeholder": "https://…"}]  # fmt: skip


def _date(spec: FormField, base: Element, room: Space, people: Sequence[Pick]) -> list[Element]:
    return [{"type": "Input.Date", **base}]


def _time(spec: FormField, base: Element, room: Space, people: Sequence[Pick]) -> list[Element]:
    return [{"type": "Input.Time", **base}]


def _datetime(spec: FormField, base: Element, room: Space, people: Sequence[Pick]) -> list[Element]:
    date = {"type": "Input.Date", **base, "id": f"{base['id']}.{DATE}"}
    rest = {k: v for k, v in base.items() if k not in ("id", "label")}
    time = {"type": "Input.Time", **rest, "id": f"{base['id']}.{TIME}", "label": "Time (UTC)"}
    return [date, time]


def _boolean(spec: FormField, base: Element, room: Space, people: Sequence[Pick]) -> list[Element]:
    rest = {k: v for k, v in base.items() if k != "label"}
    return [{"type": "Input.Toggle", **rest, "title": base["label"], "valueOn": "true",
             "valueOff": "false", "value": "false", "wrap": True}]  # fmt: skip


def _choice(spec: FormField, base: Element, room: Space, people: Sequence[Pick]) -> list[Element]:
    element = _choice_set(base, spec.options, room)
    if spec.kind is FieldKind.CHOICES:
        element["isMultiSelect"] = True
    shown = len(element["choices"])
    if shown < len(spec.options):
        return [element, _note(f"Showing the first {shown} of {len(spec.options)} options.")]
    return [element]


def _choice_set(base: Element, options: Sequence[Option], room: Space) -> Element:
    """A compact ChoiceSet: each option by its numbered label (two long options sharing the
    start the title keeps are told apart by number), its value the option's value."""
    shown = options[: room.choices]
    choices = [{"title": plain_text(o.label, room.choice_title), "value": o.value} for o in shown]
    return {"type": "Input.ChoiceSet", **base, "style": "compact", "choices": choices,
            "placeholder": "Choose…", "wrap": True}  # fmt: skip


def _user(spec: FormField, base: Element, room: Space, people: Sequence[Pick]) -> list[Element]:
    typed = {"type": "Input.Text", **base, "maxLength": 100, "placeholder": "Email or user id"}
    if not people:
        return [typed]
    known = [Option(user_id, name, user_id) for user_id, name in people]
    rest = {k: v for k, v in base.items() if k not in ("isRequired", "errorMessage")}
    picked = _choice_set(rest, known, room)
    other = {**typed, "id": f"{base['id']}.{OTHER}", "label": "Or someone else (email or id)"}
    other.pop("isRequired", None)
    return [picked, other]


def _file(spec: FormField, base: Element, room: Space, people: Sequence[Pick]) -> list[Element]:
    hint = _note("Share the file in OneDrive or SharePoint and paste its link here.")
    link = {"type": "Input.Text", **base, "id": f"{base['id']}.{LINK}", "style": "url",
            "maxLength": URL_MAX, "placeholder": "https://…",
            "label": f"{base['label']} (link)"}  # fmt: skip
    name = {"type": "Input.Text", "id": f"{base['id']}.{NAME}", "label": "File name (optional)",
            "maxLength": FILE_NAME_MAX, "placeholder": "report.pdf"}  # fmt: skip
    return [hint, link, name]


_DRAW = {
    FieldKind.TEXT: _text,
    FieldKind.LONG_TEXT: _text,
    FieldKind.NUMBER: _number,
    FieldKind.INTEGER: _number,
    FieldKind.EMAIL: _email,
    FieldKind.URL: _url,
    FieldKind.DATE: _date,
    FieldKind.TIME: _time,
    FieldKind.DATETIME: _datetime,
    FieldKind.BOOLEAN: _boolean,
    FieldKind.CHOICE: _choice,
    FieldKind.CHOICES: _choice,
    FieldKind.USER: _user,
    FieldKind.FILE: _file,
}


# -- values: the person's, else the field's own -------------------------------------------------


def _put_back(
    element: Element,
    spec: FormField,
    form: Form,
    filled: Filled,
    room: Space,
    people: Sequence[Pick],
) -> Element:
    if not str(element.get("type", "")).startswith("Input."):
        return element
    entered = filled.values.get(element["id"])
    value = _fit(element, entered) if _given(entered) else None
    if value is None and not filled.values:  # a fresh form: the field's own value, if any
        value = _fit(element, _own(element["id"], spec, form, people))
    if value is None:
        return element
    cost = byte_length(str(value))
    if cost > room.prefill:
        return element
    room.prefill -= cost
    return {**element, "value": value}


def _given(value: Any) -> bool:
    return value is not None and value != ""


def _own(element_id: str, spec: FormField, form: Form, people: Sequence[Pick]) -> Any:
    """The field's pre-filled value (as `read_form` returns it) for one of its inputs."""
    value = spec.value
    if value is None:
        return None
    if spec.kind is FieldKind.DATETIME:
        try:
            moment = datetime.fromisoformat(str(value))
        except ValueError:
            return None
        part = element_id.rsplit(".", 1)[-1]
        return moment.date().isoformat() if part == DATE else moment.strftime("%H:%M")
    if spec.kind is FieldKind.BOOLEAN:
        return "true" if value is True else "false" if value is False else None
    if spec.kind is FieldKind.CHOICES and isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    if spec.kind is FieldKind.USER and people:
        known = any(user_id == value for user_id, _ in people)
        return value if known == (element_id == input_id(form, spec)) else None
    return value if isinstance(value, str | int | float) else None


def _fit(element: Element, value: Any) -> str | int | float | None:
    """`value` as this input takes it, or None if it does not fit the input."""
    if value is None or isinstance(value, bool):
        return None
    kind = element["type"]
    if kind == "Input.Number":
        return _json_number(value)
    text = clean(value if isinstance(value, str) else str(value))
    if kind == "Input.ChoiceSet":
        offered = {c["value"] for c in element["choices"]}
        picked = [v for v in text.split(",") if v] if element.get("isMultiSelect") else [text]
        return text if picked and all(v in offered for v in picked) else None
    if kind == "Input.Toggle":
        return text if text in ("true", "false") else None
    if kind == "Input.Date":
        return text if _DATE.match(text) else None
    if kind == "Input.Time":
        return text[:5] if _TIME.match(text) else None
    return text if len(text) <= element.get("maxLength", TEXT_MAX) else None


def _json_number(value: Any) -> int | float | None:
    """Input.Number's value (and min, max) must be a JSON number: finite, an int when whole."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(number):
        return None
    return int(number) if number.is_integer() and abs(number) < 2**53 else number
