"""Modals: a core `Form` drawn with Slack's native inputs, one per field.

Pure. Each field kind (bot/human_tools/forms.py) gets the input Slack has for it; what each input
submits is read back by `parse`, in the form `read_form` takes. A modal's `callback_id` names the
control's verb, its `private_metadata` the request, and each input block's `block_id` its field.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from datetime import date, datetime, time
from typing import Any

from adapters.surfaces.slack.blocks import Block, fact_blocks, plain, section, select_option
from adapters.surfaces.slack.filetypes import accepted_types
from adapters.surfaces.slack.scheme import check_request_id, modal_callback_id
from adapters.surfaces.slack.text import (
    INPUT_HINT,
    INPUT_LABEL,
    MODAL_BLOCKS,
    MODAL_BUTTON,
    MODAL_TITLE,
    PLACEHOLDER,
    SELECT_OPTIONS,
    fit,
)
from bot.human_tools.forms import TEXT_MAX, FieldKind, Form, FormField, Option
from bot.requests.kinds import Fact, Verb

_INTRO_BLOCKS = 6  # what the request is about, above the inputs (the inputs come first)


def render_modal(form: Form, verb: Verb, request_id: str, *, intro: Sequence[Fact] = ()) -> Block:
    """The modal (`views.open` payload) asking for `form`, for the control `verb` of the
    request; `intro` is shown above the inputs."""
    check_request_id(request_id)
    inputs = [field_input(f) for f in form.fields][:MODAL_BLOCKS]
    above = fact_blocks(intro, min(_INTRO_BLOCKS, MODAL_BLOCKS - len(inputs)))
    view: Block = {
        "type": "modal",
        "callback_id": modal_callback_id(verb),
        "private_metadata": request_id,
        "title": plain(fit(form.title, MODAL_TITLE), MODAL_TITLE),
        "blocks": [*above, *inputs],
        "close": plain("Cancel", MODAL_BUTTON),
    }
    if inputs:
        view["submit"] = plain(fit(form.submit, MODAL_BUTTON), MODAL_BUTTON)
    return view


def notice_view(text: str) -> Block:
    """What a modal becomes when its answer was not taken; `text` is mrkdwn, escaped."""
    return {
        "type": "modal",
        "title": plain("Answer not taken", MODAL_TITLE),
        "close": plain("Close", MODAL_BUTTON),
        "blocks": [section(text)],
    }


def field_input(spec: FormField) -> Block:
    """The input block of one field: its label, its hint, and the element of its kind."""
    element = _ELEMENTS[spec.kind](spec)
    block: Block = {
        "type": "input",
        "block_id": spec.name,
        "label": plain(fit(spec.label or spec.name, INPUT_LABEL), INPUT_LABEL),
        # The field's name again: unique within the view (Slack asks for it within a block).
        "element": {**element, "action_id": spec.name},
    }
    hint = spec.description or _file_hint(spec)
    if hint:
        block["hint"] = plain(fit(hint, INPUT_HINT), INPUT_HINT)
    if not spec.required:
        block["optional"] = True
    return block


def _file_hint(spec: FormField) -> str:
    if spec.kind is not FieldKind.FILE or accepted_types(spec.accept).any:
        return ""
    return "Accepted: " + ", ".join(spec.accept)


# -- the elements, per field kind ---------------------------------------------------------------


def _initial(element: Block, key: str, value: Any) -> Block:
    return {**element, key: value} if value is not None else element


def _text(spec: FormField) -> Block:
    limit = min(spec.max_length or TEXT_MAX, TEXT_MAX)
    multiline = spec.kind is FieldKind.LONG_TEXT or spec.json_value
    element = {"type": "plain_text_input", "multiline": multiline, "max_length": limit}
    value = spec.value if isinstance(spec.value, str) and len(spec.value) <= limit else None
    return _initial(element, "initial_value", value)


def _typed_text(kind: str) -> Callable[[FormField], Block]:
    def element(spec: FormField) -> Block:
        value = spec.value if isinstance(spec.value, str) and spec.value else None
        return _initial({"type": kind}, "initial_value", value)

    return element


def _number_text(number: float, whole: bool, up: bool) -> str:
    if whole:
        return str(math.ceil(number) if up else math.floor(number))
    return str(int(number)) if float(number).is_integer() else repr(float(number))


def _number(spec: FormField) -> Block:
    whole = spec.kind is FieldKind.INTEGER
    element: Block = {"type": "number_input", "is_decimal_allowed": not whole}
    if spec.minimum is not None:
        element["min_value"] = _number_text(spec.minimum, whole, up=True)
    if spec.maximum is not None:
        element["max_value"] = _number_text(spec.maximum, whole, up=False)
    value = spec.value
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        inside = (spec.minimum is None or value >= spec.minimum) and (
            spec.maximum is None or value <= spec.maximum
        )
        if inside and (not whole or float(value).is_integer()):
            element["initial_value"] = _number_text(value, whole, up=False)
    return element


def _parsed(read: Callable[[str], Any], value: Any) -> Any:
    try:
        return read(str(value).strip()) if value is not None else None
    except ValueError:
        return None


def _date(spec: FormField) -> Block:
    day = _parsed(date.fromisoformat, spec.value)
    return _initial({"type": "datepicker"}, "initial_date", day and day.isoformat())


def _time(spec: FormField) -> Block:
    moment = _parsed(time.fromisoformat, spec.value)
    return _initial({"type": "timepicker"}, "initial_time", moment and moment.strftime("%H:%M"))


def _datetime(spec: FormField) -> Block:
    moment = _parsed(datetime.fromisoformat, spec.value)
    epoch = int(moment.timestamp()) if moment is not None and moment.tzinfo else None
    return _initial({"type": "datetimepicker"}, "initial_date_time", epoch)


_YES_NO = (Option("true", "Yes", "Yes"), Option("false", "No", "No"))


def _boolean(spec: FormField) -> Block:
    """Yes / No: a required boolean must be answered either way (a lone checkbox could only
    say yes), and an optional one may be left unanswered."""
    options = [select_option(o) for o in _YES_NO]
    chosen = None
    if isinstance(spec.value, bool):
        chosen = options[0] if spec.value else options[1]
    return _initial({"type": "radio_buttons", "options": options}, "initial_option", chosen)


def _chosen(spec: FormField) -> list[Block]:
    """The options pre-filled, given as option values (or as their text)."""
    wanted = spec.value if isinstance(spec.value, list | tuple) else [spec.value]
    keys = {str(v) for v in wanted if v is not None}
    return [
        select_option(o) for o in spec.options[:SELECT_OPTIONS] if o.value in keys or o.text in keys
    ]


def _select(kind: str) -> Callable[[FormField], Block]:
    def element(spec: FormField) -> Block:
        if not spec.options:  # nothing to choose from (a tolerant form): Slack needs one
            return _text(spec)
        drawn: Block = {
            "type": kind,
            "placeholder": plain("Choose…", PLACEHOLDER),
            "options": [select_option(o) for o in spec.options[:SELECT_OPTIONS]],
        }
        chosen = _chosen(spec)
        if kind == "static_select":
            return _initial(drawn, "initial_option", chosen[0] if chosen else None)
        return _initial(drawn, "initial_options", chosen or None)

    return element


def _user(spec: FormField) -> Block:
    value = spec.value if isinstance(spec.value, str) and spec.value else None
    return _initial({"type": "users_select"}, "initial_user", value)


def _file(spec: FormField) -> Block:
    element: Block = {"type": "file_input", "max_files": 1}
    filetypes = accepted_types(spec.accept).slack_filetypes()
    return _initial(element, "filetypes", filetypes or None)


_ELEMENTS: dict[FieldKind, Callable[[FormField], Block]] = {
    FieldKind.TEXT: _text,
    FieldKind.LONG_TEXT: _text,
    FieldKind.NUMBER: _number,
    FieldKind.INTEGER: _number,
    FieldKind.EMAIL: _typed_text("email_text_input"),
    FieldKind.URL: _typed_text("url_text_input"),
    FieldKind.DATE: _date,
    FieldKind.TIME: _time,
    FieldKind.DATETIME: _datetime,
    FieldKind.BOOLEAN: _boolean,
    FieldKind.CHOICE: _select("static_select"),
    FieldKind.CHOICES: _select("multi_static_select"),
    FieldKind.USER: _user,
    FieldKind.FILE: _file,
}
