"""Slack interaction payloads (as Bolt hands them to handlers) read back into our terms.

Pure functions, the inverse of `render`'s scheme: a click names its verb in the `action_id` and
its request in the button's `value` (a select's in its block_id); a modal names its kind in
the `callback_id` and its request in `private_metadata`. Answers are validated by the core's
own models (`HumanTool.parse_answer`, `form_answer_model`), never by rules of our own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from adapters.slack.render import (
    ACTION_PREFIX,
    ACTIONS_BLOCK_PREFIX,
    ANSWER_BLOCK,
    BUILTIN_VIEWS,
    FILE_BLOCK,
    INPUT_ACTION,
    MODAL_CALLBACK_PREFIX,
    MODAL_OF_VERB,
    REASON_BLOCK,
    ModalKind,
    Verb,
    accepted_types,
    answer_model,
    text_answer_key,
)
from adapters.slack.text import truncate
from bot import AnswerInvalidError
from bot.arguments import FormField, form_fields
from bot.human_tools import BUILTIN_TOOLS, DataField, HumanTool, form_answer_model

SubmittedValue = str | list[dict[str, Any]] | None
"""A text, number or email input's string (None when left empty), or file_input's files."""

_ERROR_TEXT = 150  # an inline modal error is one line under the input


class PayloadError(ValueError):
    """A payload that is not ours or does not hold together (stale, forged, truncated)."""


@dataclass(frozen=True, slots=True)
class ButtonClick:
    """A `block_actions` interaction on one of our messages."""

    request_id: str
    verb: Verb
    action_id: str
    option_index: int | None  # OPTION and SELECT: the option chosen
    user_id: str
    trigger_id: str  # opens a modal: valid for 3 s, once
    channel_id: str | None
    message_ts: str | None
    thread_ts: str | None
    response_url: str | None


@dataclass(frozen=True, slots=True)
class ModalSubmission:
    """A `view_submission` of one of our modals; `values` maps an input's block_id to it."""

    kind: ModalKind
    request_id: str
    user_id: str
    values: dict[str, SubmittedValue]
    view_id: str | None
    trigger_id: str | None


# -- block_actions -----------------------------------------------------------------------------

_OPTION = re.compile(r"^option_([0-9]{1,3})$")


def _verb_of(action_id: str) -> tuple[Verb, int | None]:
    name = action_id.removeprefix(ACTION_PREFIX)
    option = _OPTION.match(name)
    if option is not None:
        return Verb.OPTION, int(option.group(1))
    try:
        verb = Verb(name)
    except ValueError:
        raise PayloadError(f"unknown action_id {action_id!r}") from None
    if verb is Verb.OPTION:  # "hitl_option" without its index
        raise PayloadError(f"option action without an index: {action_id!r}")
    return verb, None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _our_action(body: Mapping[str, Any]) -> dict[str, Any]:
    actions = body.get("actions")
    for action in actions if isinstance(actions, list) else []:
        if isinstance(action, dict) and str(action.get("action_id", "")).startswith(ACTION_PREFIX):
            return action
    raise PayloadError("no hitl action in the payload")


def _selection(action: dict[str, Any]) -> tuple[str, int]:
    """A static_select's request id (its block_id) and chosen index (the option's value)."""
    block_id = str(action.get("block_id", ""))
    value = _dict(action.get("selected_option")).get("value")
    if not block_id.startswith(ACTIONS_BLOCK_PREFIX) or not isinstance(value, str):
        raise PayloadError("select without our block_id or a selected option")
    if not value.isascii() or not value.isdigit():
        raise PayloadError(f"option value {value[:20]!r} is not an index")
    return block_id.removeprefix(ACTIONS_BLOCK_PREFIX), int(value)


def parse_block_action(body: Mapping[str, Any]) -> ButtonClick:
    """The click in a `block_actions` body; PayloadError when it is not one of ours."""
    action = _our_action(body)
    action_id = str(action["action_id"])
    verb, index = _verb_of(action_id)
    if verb is Verb.SELECT:
        request_id, index = _selection(action)
    else:
        request_id = action.get("value") or ""
    user_id = _dict(body.get("user")).get("id")
    if not isinstance(request_id, str) or not request_id or not isinstance(user_id, str):
        raise PayloadError("click without a request id or a user")
    container, message = _dict(body.get("container")), _dict(body.get("message"))
    return ButtonClick(
        request_id=request_id,
        verb=verb,
        action_id=action_id,
        option_index=index,
        user_id=user_id,
        trigger_id=str(body.get("trigger_id") or ""),
        channel_id=_dict(body.get("channel")).get("id") or container.get("channel_id"),
        message_ts=container.get("message_ts") or message.get("ts"),
        # A message posted in a thread carries its parent's ts; the thread is the room.
        thread_ts=message.get("thread_ts") or container.get("thread_ts"),
        response_url=body.get("response_url"),
    )


# -- view_submission ---------------------------------------------------------------------------


def _element_value(elements: Mapping[str, Any]) -> SubmittedValue:
    """One input's value, read by its element type as Slack reports it in view.state.

    Each of our input blocks holds one element, so its action_id does not matter here.
    """
    state = _dict(elements.get(INPUT_ACTION) or next(iter(elements.values()), None))
    kind = state.get("type")
    if kind == "file_input":
        files = state.get("files")
        return [f for f in files if isinstance(f, dict)] if isinstance(files, list) else []
    if kind in ("static_select", "radio_buttons"):
        value = _dict(state.get("selected_option")).get("value")
    else:  # plain_text_input, number_input (a string), email_text_input, url_text_input
        value = state.get("value")
    return value if isinstance(value, str) else None


def parse_view_submission(body: Mapping[str, Any]) -> ModalSubmission:
    """The submission in a `view_submission` body; PayloadError when it is not one of ours."""
    view = _dict(body.get("view"))
    callback_id = str(view.get("callback_id", ""))
    if not callback_id.startswith(MODAL_CALLBACK_PREFIX):
        raise PayloadError(f"not our modal: {callback_id[:40]!r}")
    try:
        kind = ModalKind(callback_id.removeprefix(MODAL_CALLBACK_PREFIX))
    except ValueError:
        raise PayloadError(f"unknown modal {callback_id[:40]!r}") from None
    request_id, user_id = view.get("private_metadata"), _dict(body.get("user")).get("id")
    if not isinstance(request_id, str) or not request_id or not isinstance(user_id, str):
        raise PayloadError("submission without a request id or a user")
    values = _dict(_dict(view.get("state")).get("values"))
    return ModalSubmission(
        kind=kind,
        request_id=request_id,
        user_id=user_id,
        values={block: _element_value(_dict(elements)) for block, elements in values.items()},
        view_id=view.get("id"),
        trigger_id=body.get("trigger_id"),
    )


# -- answers -----------------------------------------------------------------------------------

Answer = str | dict[str, str]
"""The answer JSON for the request, or block_id -> message for `response_action: "errors"`."""


def _checked(tool: HumanTool, arguments: Mapping[str, Any], payload: Any, block: str) -> Answer:
    """The tool's own validation of the answer; a failure becomes an error on `block`."""
    try:
        return tool.parse_answer(dict(arguments), json.dumps(payload))
    except (AnswerInvalidError, ValidationError) as err:
        return {block: truncate(str(err), _ERROR_TEXT)}


def _text(sub: ModalSubmission, block: str) -> str:
    value = sub.values.get(block)
    return value if isinstance(value, str) else ""


def _reason_answer(sub: ModalSubmission, arguments: Mapping[str, Any], tool: HumanTool) -> Answer:
    reason = _text(sub, REASON_BLOCK).strip()
    payload: dict[str, Any] = {"approved": False}
    if reason:  # optional: an empty reason is left out, as the answer model's default
        payload["reason"] = reason
    return _checked(tool, arguments, payload, REASON_BLOCK)


def _free_answer(
    sub: ModalSubmission, arguments: Mapping[str, Any], tool: HumanTool | None
) -> Answer:
    text = _text(sub, ANSWER_BLOCK)
    if not text.strip():
        return {ANSWER_BLOCK: "Required"}
    if tool is None or answer_model(tool, arguments) is None:
        return text  # a tool without an answer model reads the text as typed
    key = text_answer_key(tool, arguments)
    if key is not None:
        return _checked(tool, arguments, {key: text}, ANSWER_BLOCK)
    try:  # an answer of several fields: the modal's hint asked for a JSON object
        payload = json.loads(text)
    except ValueError:
        return {ANSWER_BLOCK: "Answer with a JSON object"}
    return _checked(tool, arguments, payload, ANSWER_BLOCK)


_FIELD_ERRORS = {"number": "Enter a number", "email": "Enter a valid email address"}


def _form_answer(sub: ModalSubmission, arguments: Mapping[str, Any], tool: HumanTool) -> Answer:
    fields = {f.name: f for f in form_fields(arguments)}
    # Values as Slack sent them (numbers are strings): the answer model does the coercion.
    payload = {name: sub.values[name] for name in fields if isinstance(sub.values.get(name), str)}
    errors = _field_errors(list(fields.values()), payload)
    if errors:
        return errors
    return _checked(tool, arguments, payload, next(iter(fields), ANSWER_BLOCK))


def _field_errors(fields: list[FormField], payload: dict[str, Any]) -> dict[str, str]:
    """form_answer_model's verdict, each error put on its field's input block."""
    specs = [DataField.model_construct(name=f.name, label=f.label, type=f.type) for f in fields]
    try:
        form_answer_model(specs).model_validate_json(json.dumps(payload))
    except ValidationError as err:
        kinds = {f.name: f.type for f in fields}
        errors: dict[str, str] = {}
        for error in err.errors():
            name = str(error["loc"][0]) if error["loc"] else ""
            if name in kinds and name not in errors:
                missing = error["type"] == "missing"
                errors[name] = "Required" if missing else _FIELD_ERRORS.get(kinds[name], "")
                errors[name] = errors[name] or truncate(error["msg"], _ERROR_TEXT)
        return errors
    return {}


def _upload_answer(sub: ModalSubmission, arguments: Mapping[str, Any], tool: HumanTool) -> Answer:
    files = sub.values.get(FILE_BLOCK)
    if not isinstance(files, list) or not files:
        return {FILE_BLOCK: "Upload a file"}
    file = files[0]
    name = str(file.get("name") or file.get("title") or "")
    entries = arguments.get("acceptedTypes")
    accepted = [e for e in entries if isinstance(e, str)] if isinstance(entries, list) else []
    if not accepted_types(accepted).accepts(name, file.get("mimetype")):
        return {FILE_BLOCK: truncate("Accepted file types: " + ", ".join(accepted), _ERROR_TEXT)}
    payload = {"fileName": name, "fileSize": file.get("size"), "url": file.get("url_private")}
    return _checked(tool, arguments, payload, FILE_BLOCK)


def answer_from_submission(
    sub: ModalSubmission, update_arguments: Mapping[str, Any], tool: HumanTool | None
) -> Answer:
    """The answer a modal gives its request, or the errors to show in the modal.

    `tool` is the request's tool (`BUILTIN_TOOLS[name]` or the registered custom one); with
    None, the reject, form and upload modals use the built-in tool they belong to, and the
    answer modal returns the text as typed (a tool without an answer model).
    """
    args = update_arguments
    if sub.kind is ModalKind.REJECT_REASON:
        return _reason_answer(sub, args, tool or BUILTIN_TOOLS["requestApproval"])
    if sub.kind is ModalKind.FORM:
        return _form_answer(sub, args, tool or BUILTIN_TOOLS["collectUserData"])
    if sub.kind is ModalKind.UPLOAD:
        return _upload_answer(sub, args, tool or BUILTIN_TOOLS["uploadFile"])
    return _free_answer(sub, args, tool)


# Which tool each verb belongs to; None: AskUserQuestion or any custom tool.
_VERB_TOOL: dict[Verb, str | None] = {
    Verb.APPROVE: "requestApproval",
    Verb.REJECT: "requestApproval",
    Verb.OPTION: "selectOption",
    Verb.SELECT: "selectOption",
    Verb.OPEN_FORM: "collectUserData",
    Verb.UPLOAD: "uploadFile",
    Verb.CONFIRM: "confirmAction",
    Verb.CANCEL: "confirmAction",
    Verb.ANSWER: None,
}


def _check_verb(click: ButtonClick, tool_name: str) -> None:
    expected = _VERB_TOOL[click.verb]
    fits = (
        tool_name == expected
        if expected is not None
        else tool_name == "AskUserQuestion" or tool_name not in BUILTIN_VIEWS
    )
    if not fits:
        raise PayloadError(f"{click.action_id} does not apply to a {tool_name} request")


def answer_from_click(
    click: ButtonClick, arguments: Mapping[str, Any], tool_name: str
) -> str | None:
    """The answer a button (or the select) gives, or None for a click that opens a modal
    (`MODAL_OF_VERB[click.verb]` says which). PayloadError for a click that does not fit the
    request: another tool's verb, an option that is not offered.
    """
    _check_verb(click, tool_name)
    if click.verb in MODAL_OF_VERB:
        return None
    if click.verb in (Verb.CONFIRM, Verb.CANCEL):
        return json.dumps({"confirmed": click.verb is Verb.CONFIRM})
    if click.verb is Verb.APPROVE:
        return json.dumps({"approved": True})
    options = arguments.get("options")
    index = click.option_index
    if not isinstance(options, list) or index is None or not 0 <= index < len(options):
        raise PayloadError(f"option {index} is not offered")
    return json.dumps({"selectedIndex": index, "selectedValue": options[index]})
