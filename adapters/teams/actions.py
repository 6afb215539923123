"""`adaptiveCard/action` invoke values read back into our terms, and the answers they give.

Pure functions, the inverse of `cards`' scheme: the verb says what was clicked, `data` carries
the request id and, merged in by Teams under their ids, the values of the card's inputs.
Answers are validated by the core's own models (`HumanTool.parse_answer`, `form_answer_model`),
never by rules of our own; what fails comes back as input id -> message, for the card to show.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from pydantic import ValidationError

from adapters.teams.cards import (
    ANSWER_INPUT,
    CHOICE_INPUT,
    FILE_NAME_INPUT,
    FILE_NAME_MAX,
    MAX_REQUEST_ID,
    REASON_INPUT,
    REASON_MAX,
    REQUEST_ID_KEY,
    URL_INPUT,
    URL_MAX,
    VERB_PREFIX,
    Verb,
    answer_model,
    cut,
    field_input_id,
    text_answer_key,
)
from bot import AnswerInvalidError
from bot.arguments import FormField, form_fields
from bot.human_tools import BUILTIN_TOOLS, DataField, HumanTool, file_accepted, form_answer_model

ERROR_TEXT = 300  # one input's error message, in bytes
WHOLE_CARD = ""  # the errors key of a problem no single input has


class ActionError(ValueError):
    """An invoke value that is not ours or does not fit its request (forged, stale, another
    tool's verb, an option the card never offered)."""


@dataclass(frozen=True, slots=True)
class CardAction:
    """One `Action.Execute` of our cards: which, for which request, and the inputs' values."""

    verb: Verb  # a str: compares equal to "hitl_refresh" and the like
    request_id: str
    trigger: str  # "manual" (a click) or "automatic" (a refresh Teams ran by itself)
    inputs: dict[str, str] = field(default_factory=dict)  # input id -> value as sent


@dataclass(frozen=True, slots=True)
class Decline:
    """The person declined to answer (`hitl_decline`): the request is rejected, with a reason."""

    reason: str | None = None


Answer = str | dict[str, str] | Decline | None
"""The answer JSON; or input id -> error message; or a Decline; or None (a refresh)."""


# -- the invoke value ------------------------------------------------------------------------


def parse_action(value: Mapping[str, Any] | None) -> CardAction:
    """The action in an `adaptiveCard/action` invoke's `activity.value`; ActionError when it is
    not one of ours (another verb, no request id)."""
    action = value.get("action") if isinstance(value, Mapping) else None
    if not isinstance(action, Mapping):
        raise ActionError("the invoke value holds no action")
    if action.get("type", "Action.Execute") != "Action.Execute":
        raise ActionError(f"not an Action.Execute: {str(action.get('type'))[:40]!r}")
    verb = action.get("verb")
    if not isinstance(verb, str) or not verb.startswith(VERB_PREFIX) or verb not in _VERBS:
        raise ActionError(f"not our verb: {str(verb)[:40]!r}")
    data = action.get("data")
    data = data if isinstance(data, Mapping) else {}
    request_id = data.get(REQUEST_ID_KEY)
    if not isinstance(request_id, str) or not 0 < len(request_id) <= MAX_REQUEST_ID:
        raise ActionError("the action carries no request id")
    inputs = _strings({str(k): v for k, v in data.items() if k != REQUEST_ID_KEY})
    trigger = "automatic" if value and value.get("trigger") == "automatic" else "manual"
    return CardAction(Verb(verb), request_id, trigger, inputs)


_VERBS = frozenset(v.value for v in Verb)


def _strings(inputs: Mapping[str, Any]) -> dict[str, str]:
    """Input values as strings: Teams sends strings, though a number input may arrive as a
    JSON number; anything else (objects, booleans, null) is no input of ours."""
    values: dict[str, str] = {}
    for key, value in inputs.items():
        if isinstance(value, str):
            values[key] = value
        elif (
            isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        ):
            values[key] = repr(value)
    return values


# -- answers -----------------------------------------------------------------------------------

# The tool each verb belongs to; the others (answer, decline, refresh) are checked below.
_VERB_TOOL: dict[Verb, str] = {
    Verb.APPROVE: "requestApproval",
    Verb.REJECT: "requestApproval",
    Verb.SELECT: "selectOption",
    Verb.SUBMIT: "collectUserData",
    Verb.UPLOAD: "uploadFile",
    Verb.CONFIRM: "confirmAction",
    Verb.CANCEL: "confirmAction",
}
_OWN_NO = {"requestApproval", "confirmAction"}  # their cards have Reject/Cancel, no Decline


def _tool_for(verb: Verb, tool: HumanTool | None) -> HumanTool | None:
    """The tool that reads the answer; ActionError when the verb is not one its card has."""
    name = tool.name if tool is not None else None
    expected = _VERB_TOOL.get(verb)
    if expected is not None:
        if name not in (expected, None):
            raise ActionError(f"{verb} does not apply to a {name} request")
        return tool or BUILTIN_TOOLS[expected]
    if verb is Verb.ANSWER and name in BUILTIN_TOOLS and name != "AskUserQuestion":
        raise ActionError(f"{verb} does not apply to a {name} request")
    if verb is Verb.DECLINE and name in _OWN_NO:
        raise ActionError(f"{verb} does not apply to a {name} request")
    return tool


def answer_from_action(
    action: CardAction, arguments: Mapping[str, Any], tool: HumanTool | None
) -> Answer:
    """What the action gives its request: the answer JSON (normalised by the tool's own
    `parse_answer`), errors to show in the card (input id -> message), a Decline, or None for
    `hitl_refresh`. ActionError for an action the request's card does not have.

    `tool` is the request's tool (`BUILTIN_TOOLS[name]` or the registered custom one). With
    None, a built-in tool's verb uses that built-in, and `hitl_answer` returns the text as typed
    (a tool without an answer model) — so pass AskUserQuestion's tool, not None.
    """
    resolved = _tool_for(action.verb, tool)
    if action.verb is Verb.REFRESH:
        return None
    if action.verb is Verb.DECLINE:
        return Decline(action.inputs.get(REASON_INPUT, "").strip()[:REASON_MAX] or None)
    if action.verb is Verb.ANSWER:
        return _free_answer(action, arguments, resolved)
    assert resolved is not None  # every other verb has its built-in tool
    return _ANSWERS[action.verb](action, arguments, resolved)


def _checked(tool: HumanTool, arguments: Mapping[str, Any], payload: Any, input_id: str) -> Answer:
    """The tool's own validation of the answer; a failure becomes an error on `input_id`."""
    try:
        return tool.parse_answer(dict(arguments), json.dumps(payload))
    except (AnswerInvalidError, ValidationError) as err:
        return {input_id: cut(str(err), ERROR_TEXT)}


def _approval(action: CardAction, arguments: Mapping[str, Any], tool: HumanTool) -> Answer:
    payload: dict[str, Any] = {"approved": action.verb is Verb.APPROVE}
    reason = action.inputs.get(REASON_INPUT, "").strip()
    if reason and action.verb is Verb.REJECT:  # the input asks for a rejection's reason only
        payload["reason"] = reason
    return _checked(tool, arguments, payload, REASON_INPUT)


def _confirmation(action: CardAction, arguments: Mapping[str, Any], tool: HumanTool) -> Answer:
    payload = {"confirmed": action.verb is Verb.CONFIRM}
    return _checked(tool, arguments, payload, WHOLE_CARD)  # the card has no input


def _selection(action: CardAction, arguments: Mapping[str, Any], tool: HumanTool) -> Answer:
    raw = action.inputs.get(CHOICE_INPUT, "").strip()
    if not raw:
        return {CHOICE_INPUT: "Choose one of the options"}
    options = arguments.get("options")
    index = int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= 3 else -1
    if not isinstance(options, list) or not 0 <= index < len(options):
        raise ActionError(f"option {raw[:10]!r} is not offered")
    payload = {"selectedIndex": index, "selectedValue": options[index]}
    return _checked(tool, arguments, payload, CHOICE_INPUT)


def _free_answer(
    action: CardAction, arguments: Mapping[str, Any], tool: HumanTool | None
) -> Answer:
    text = action.inputs.get(ANSWER_INPUT, "")
    if not text.strip():
        return {ANSWER_INPUT: "Required"}
    if tool is None or answer_model(tool, arguments) is None:
        return text  # a tool without an answer model reads the text as typed
    key = text_answer_key(tool, arguments)
    if key is not None:
        return _checked(tool, arguments, {key: text}, ANSWER_INPUT)
    try:  # an answer of several fields: the input's placeholder asked for a JSON object
        payload = json.loads(text)
    except ValueError:
        return {ANSWER_INPUT: "Answer with a JSON object"}
    return _checked(tool, arguments, payload, ANSWER_INPUT)


# -- forms -------------------------------------------------------------------------------------

_FIELD_ERRORS = {"number": "Enter a number", "email": "Enter a valid email address"}


def _form(action: CardAction, arguments: Mapping[str, Any], tool: HumanTool) -> Answer:
    fields = form_fields(arguments)
    if not fields:  # such a card has no Submit button
        raise ActionError("the form has no fields")
    # Values as Teams sent them (numbers are strings): the answer model does the coercion.
    inputs = action.inputs
    payload = {
        f.name: value for f in fields if (value := inputs.get(field_input_id(f.name), "").strip())
    }
    errors = _field_errors(fields, payload)
    return errors or _checked(tool, arguments, payload, field_input_id(fields[0].name))


def _field_errors(fields: list[FormField], payload: dict[str, Any]) -> dict[str, str]:
    """form_answer_model's verdict, each error put on its field's input."""
    specs = [DataField.model_construct(name=f.name, label=f.label, type=f.type) for f in fields]
    try:
        form_answer_model(specs).model_validate_json(json.dumps(payload))
    except ValidationError as err:
        by_name = {f.name: f for f in fields}
        errors: dict[str, str] = {}
        for error in err.errors():
            spec = by_name.get(str(error["loc"][0]) if error["loc"] else "")
            if spec is None or field_input_id(spec.name) in errors:
                continue
            missing = error["type"] == "missing"
            message = "Required" if missing else _FIELD_ERRORS.get(spec.type, error["msg"])
            errors[field_input_id(spec.name)] = cut(message, ERROR_TEXT)
        return errors
    return {}


# -- files -------------------------------------------------------------------------------------


def _upload(action: CardAction, arguments: Mapping[str, Any], tool: HumanTool) -> Answer:
    url = action.inputs.get(URL_INPUT, "").strip()
    problem = _url_problem(url)
    if problem:
        return {URL_INPUT: problem}
    typed = action.inputs.get(FILE_NAME_INPUT, "").strip()
    name = typed or _name_in(url)
    entries = arguments.get("acceptedTypes")
    accepted = [e for e in entries if isinstance(e, str)] if isinstance(entries, list) else []
    if not name or len(name) > FILE_NAME_MAX or not file_accepted(name, accepted):
        return {FILE_NAME_INPUT: _name_problem(name, accepted)}
    # Teams tells us nothing of a linked file's size: 0 is the answer model's "unknown".
    payload = {"fileName": name, "fileSize": 0, "url": url}
    return _checked(tool, arguments, payload, FILE_NAME_INPUT)


def _url_problem(url: str) -> str | None:
    """Why `url` is no usable link to a file, or None. Only https (the link reaches the
    model, and whoever follows it); no user name (`https://good.example@evil.example`)."""
    if not url:
        return "Paste a link to the file"
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:  # a malformed host ("https://[::1")
        host = None
    if host is None or parts.scheme.lower() != "https" or len(url) > URL_MAX:
        return "Enter an https:// link"
    if "@" in parts.netloc or any(c.isspace() or ord(c) < 32 for c in url):
        return "Enter the link as Teams gives it (no spaces or user name)"
    return None


def _name_in(url: str) -> str:
    """The file name a link shows (its path's last segment), or "" (a sharing link's token
    is no name, but nothing tells them apart: the accepted types decide)."""
    segments = [s for s in urlsplit(url).path.split("/") if s]
    return unquote(segments[-1]).strip() if segments else ""


def _name_problem(name: str, accepted: list[str]) -> str:
    """What to say of a file name that will not do: none (a sharing link's token has no
    extension: ask for the name), too long, or not of an accepted type."""
    types = f" (accepted: {', '.join(accepted)})" if accepted else ""
    if len(name) > FILE_NAME_MAX:
        return f"Enter at most {FILE_NAME_MAX} characters"
    if "." not in name.strip("."):
        return cut("Enter the file's name" + types, ERROR_TEXT)
    return cut("Not an accepted file type" + types, ERROR_TEXT)


_ANSWERS: dict[Verb, Callable[[CardAction, Mapping[str, Any], HumanTool], Answer]] = {
    Verb.APPROVE: _approval,
    Verb.REJECT: _approval,
    Verb.SELECT: _selection,
    Verb.SUBMIT: _form,
    Verb.UPLOAD: _upload,
    Verb.CONFIRM: _confirmation,
    Verb.CANCEL: _confirmation,
}
