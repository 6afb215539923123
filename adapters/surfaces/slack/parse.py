"""Slack interaction payloads (as Bolt hands them to listeners) read into the core's terms.

Pure functions, the inverse of adapters/surfaces/slack/scheme.py: a click becomes an `Interaction`
(the
request, who, the verb, and for an option its value), a modal submission one whose inputs are
each field's value in the form bot/human_tools/forms.py reads. What the interaction means (may
they, which answer, is it valid) is the router's to decide, never this module's.

`check_envelope` comes first, on every request Slack signed: the fields Bolt and our listeners
read must have the types Slack sends (Bolt indexes and compares them as they come: a signed
`"actions": []` was an IndexError, a 500), so an odd payload is a 400, not a crash.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from adapters.serve.http_limits import too_deep
from adapters.surfaces.slack.scheme import (
    ACTION_PREFIX,
    ACTIONS_BLOCK_PREFIX,
    LEGACY_VERBS,
    MODAL_CALLBACK_PREFIX,
    REPLY_ACTION,
    STOP_RUN_ACTION,
    SURFACE,
)
from bot.requests.kinds import Verb
from bot.requests.replies import reply_interaction
from bot.requests.router import Interaction

CHOICE_INPUT = "choice"  # the choice form's one field (bot/requests/kinds.py `choice_form`)


class PayloadError(ValueError):
    """A payload that is not ours or does not hold together (stale, forged, truncated)."""


@dataclass(frozen=True, slots=True)
class Click:
    """A `block_actions` interaction on one of our messages, and where to answer it."""

    interaction: Interaction
    trigger_id: str  # opens a modal: valid for 3 s, once
    channel_id: str | None
    message_ts: str | None
    thread_ts: str | None
    author: str | None = None  # a chooser's: who wrote the words its button answers with


@dataclass(frozen=True, slots=True)
class Submission:
    """A `view_submission` of one of our modals."""

    interaction: Interaction
    fields: tuple[str, ...]  # the modal's inputs (their block ids), in order
    view_id: str | None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    """A string field: None when absent, empty or not a string."""
    return value if isinstance(value, str) and value else None


def _user(body: Mapping[str, Any]) -> tuple[str, str | None]:
    user = _dict(body.get("user"))
    user_id, name = user.get("id"), user.get("username") or user.get("name")
    if not isinstance(user_id, str) or not user_id:
        raise PayloadError("interaction without a user")
    return user_id, name if isinstance(name, str) else None


# -- block_actions -----------------------------------------------------------------------------

_OPTION = re.compile(r"^(?:choose|option)_([0-9]{1,3})$")


def _our_action(body: Mapping[str, Any]) -> dict[str, Any]:
    actions = body.get("actions")
    for action in actions if isinstance(actions, list) else []:
        if isinstance(action, dict) and str(action.get("action_id", "")).startswith(ACTION_PREFIX):
            return action
    raise PayloadError("no hitl action in the payload")


def _verb(name: str) -> Verb:
    try:
        return LEGACY_VERBS.get(name) or Verb(name)
    except ValueError:
        raise PayloadError(f"unknown action {name[:40]!r}") from None


def _clicked(action: dict[str, Any]) -> tuple[str, Verb, dict[str, Any], bool]:
    """(request id, verb, inputs, submitted) of one action."""
    name = str(action["action_id"]).removeprefix(ACTION_PREFIX)
    option = _OPTION.match(name)
    if option is not None:  # an option's own button: the choice is made
        return str(action.get("value") or ""), Verb.CHOOSE, {CHOICE_INPUT: option.group(1)}, True
    verb = _verb(name)
    if action.get("type") != "static_select":
        return str(action.get("value") or ""), verb, {}, False
    block_id = str(action.get("block_id", ""))
    value = _dict(action.get("selected_option")).get("value")
    if not block_id.startswith(ACTIONS_BLOCK_PREFIX) or not isinstance(value, str):
        raise PayloadError("select without our block_id or a selected option")
    return block_id.removeprefix(ACTIONS_BLOCK_PREFIX), verb, {CHOICE_INPUT: value}, True


_REPLY = re.compile(rf"^{REPLY_ACTION}_[0-9]{{1,3}}$")


def _reply(action: Mapping[str, Any]) -> tuple[str, str, str]:
    """(request id, writer, words) a chooser's button carries (scheme.reply_value)."""
    try:
        value = json.loads(str(action.get("value") or ""))
    except ValueError:
        value = None
    fields = [value.get(k) if isinstance(value, dict) else None for k in ("request", "by", "text")]
    if not all(isinstance(f, str) and f for f in fields):
        raise PayloadError("a chooser's button without its request, writer and words")
    request_id, author, text = (str(f) for f in fields)
    return request_id, author, text


def _interaction(
    action: dict[str, Any], user_id: str, name: str | None
) -> tuple[Interaction, str | None]:
    """The interaction a click is, and for a chooser's button, whose words it answers with."""
    if _REPLY.match(str(action["action_id"]).removeprefix(ACTION_PREFIX)):
        request_id, author, text = _reply(action)
        return reply_interaction(request_id, user_id, text, surface=SURFACE, name=name), author
    request_id, verb, inputs, submitted = _clicked(action)
    if not request_id:
        raise PayloadError("click without a request id")
    interaction = Interaction(
        request_id, user_id, verb, inputs, submitted=submitted, surface=SURFACE, name=name
    )
    return interaction, None


def parse_block_action(body: Mapping[str, Any]) -> Click:
    """The click in a `block_actions` body; PayloadError when it is not one of ours."""
    action = _our_action(body)
    user_id, name = _user(body)
    interaction, author = _interaction(action, user_id, name)
    container, message = _dict(body.get("container")), _dict(body.get("message"))
    channel = _text(_dict(body.get("channel")).get("id")) or _text(container.get("channel_id"))
    return Click(
        interaction=interaction,
        trigger_id=_text(body.get("trigger_id")) or "",
        channel_id=channel,
        message_ts=_text(container.get("message_ts")) or _text(message.get("ts")),
        # A message posted in a thread carries its parent's ts; the thread is the room.
        thread_ts=_text(message.get("thread_ts")) or _text(container.get("thread_ts")),
        author=author,
    )


@dataclass(frozen=True, slots=True)
class StopClick:
    """A click on a running turn's Stop button: who, which turn (its room), where to answer."""

    user_id: str
    room_id: str
    channel_id: str | None
    thread_ts: str | None


def parse_stop_click(body: Mapping[str, Any]) -> StopClick:
    """The Stop click in a `block_actions` body; PayloadError when it is not one."""
    actions = body.get("actions")
    found = [
        action
        for action in (actions if isinstance(actions, list) else [])
        if isinstance(action, dict) and action.get("action_id") == STOP_RUN_ACTION
    ]
    room_id = _text(found[0].get("value")) if found else None
    if room_id is None:
        raise PayloadError("no Stop button with its run in the payload")
    user_id, _ = _user(body)
    container, message = _dict(body.get("container")), _dict(body.get("message"))
    channel = _text(_dict(body.get("channel")).get("id")) or _text(container.get("channel_id"))
    thread_ts = _text(message.get("thread_ts")) or _text(container.get("thread_ts"))
    return StopClick(user_id, room_id, channel, thread_ts)


_CLICK_FIELDS = ("type", "user", "actions", "container", "channel", "trigger_id")
_CLICK_MESSAGE_FIELDS = ("ts", "thread_ts")


def click_essentials(body: Mapping[str, Any]) -> dict[str, Any]:
    """What `parse_block_action` reads of a `block_actions` body, and nothing more: what is
    kept of a click to apply it later (the message it came with, blocks and all, can be tens
    of KB). `parse_block_action` reads it as it reads the whole body."""
    kept = {name: body[name] for name in _CLICK_FIELDS if name in body}
    message = _dict(body.get("message"))
    kept["message"] = {name: message[name] for name in _CLICK_MESSAGE_FIELDS if name in message}
    return kept


# -- view_submission ---------------------------------------------------------------------------


def _file(state: Mapping[str, Any]) -> dict[str, Any] | None:
    files = state.get("files")
    file = files[0] if isinstance(files, list) and files else None
    if not isinstance(file, dict):
        return None
    return {
        "name": str(file.get("name") or file.get("title") or ""),
        "size": file.get("size"),
        "url": str(file.get("url_private") or ""),
        "mimetype": str(file.get("mimetype") or ""),
    }


def _selected(state: Mapping[str, Any]) -> list[str]:
    options = state.get("selected_options")
    return [
        o["value"]
        for o in (options if isinstance(options, list) else [])
        if isinstance(o, dict) and isinstance(o.get("value"), str)
    ]


def _yes_no(state: Mapping[str, Any]) -> Any:
    """A boolean's radio buttons (values "true"/"false") as a bool."""
    value = _dict(state.get("selected_option")).get("value")
    return {"true": True, "false": False}.get(value, value) if isinstance(value, str) else None


_READERS: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "datepicker": lambda s: s.get("selected_date"),
    "timepicker": lambda s: s.get("selected_time"),
    "datetimepicker": lambda s: s.get("selected_date_time"),
    "static_select": lambda s: _dict(s.get("selected_option")).get("value"),
    "radio_buttons": _yes_no,
    "multi_static_select": _selected,
    "checkboxes": _selected,
    "users_select": lambda s: s.get("selected_user"),
    "multi_users_select": lambda s: s.get("selected_users"),
    "file_input": _file,
}


def element_value(state: Mapping[str, Any]) -> Any:
    """One input's value as Slack reports it in view.state, in the form `read_form` takes:
    text as typed (None when left empty), a date `YYYY-MM-DD`, a time `HH:MM`, a date and time
    in epoch seconds, an option's value, a list of values, a user id, a file's name, size, url
    and type."""
    reader = _READERS.get(str(state.get("type")))
    return reader(state) if reader is not None else state.get("value")


def _inputs(values: Mapping[str, Any]) -> dict[str, Any]:
    """Each input block's value, by its block_id (the field's name). Each of our input blocks
    holds one element, so its action_id does not matter here."""
    inputs: dict[str, Any] = {}
    for block_id, elements in values.items():
        states = [s for s in _dict(elements).values() if isinstance(s, dict)]
        if states:
            inputs[block_id] = element_value(states[0])
    return inputs


def parse_view_submission(body: Mapping[str, Any]) -> Submission:
    """The submission in a `view_submission` body; PayloadError when it is not one of ours."""
    view = _dict(body.get("view"))
    callback_id = str(view.get("callback_id", ""))
    if not callback_id.startswith(MODAL_CALLBACK_PREFIX):
        raise PayloadError(f"not our modal: {callback_id[:40]!r}")
    verb = _verb(callback_id.removeprefix(MODAL_CALLBACK_PREFIX))
    request_id = view.get("private_metadata")
    if not isinstance(request_id, str) or not request_id:
        raise PayloadError("submission without a request id")
    user_id, name = _user(body)
    values = _dict(_dict(view.get("state")).get("values"))
    blocks = view.get("blocks")
    fields = tuple(
        str(b["block_id"])
        for b in (blocks if isinstance(blocks, list) else [])
        if isinstance(b, dict) and b.get("type") == "input" and "block_id" in b
    )
    return Submission(
        interaction=Interaction(
            request_id, user_id, verb, _inputs(values), submitted=True, surface=SURFACE, name=name
        ),
        fields=fields or tuple(values),
        view_id=_text(view.get("id")),
    )


# -- the envelope of every request -------------------------------------------------------------

MAX_DEPTH = 64  # a modal's blocks and state nest ~12 deep; past this, nothing of Slack's
MESSAGE_TEXT_MAX = 40_000  # characters: Slack cuts a message's text there


@dataclass(frozen=True, slots=True)
class _Kind:
    types: tuple[type, ...]
    what: str


_STRING = _Kind((str, type(None)), "a string")
_OBJECT = _Kind((dict, type(None)), "an object")
_LIST = _Kind((list, type(None)), "a list")
_ID_OR_OBJECT = _Kind((str, dict, type(None)), "an id or an object")  # "U1" or {"id": "U1"}
_FLAG = _Kind((bool, str, type(None)), "a boolean")


def _kinds(**groups: tuple[_Kind, tuple[str, ...]]) -> dict[str, _Kind]:
    return {name: kind for kind, names in groups.values() for name in names}


# What Bolt reads of a request (slack_bolt.request.internals, payload_utils, listener
# matchers) and our listeners after it, with the types Slack sends.
_TOP = _kinds(
    strings=(_STRING, ("type", "token", "team_id", "enterprise_id", "user_id", "channel_id",
                       "context_team_id", "context_enterprise_id", "api_app_id", "trigger_id",
                       "response_url", "callback_id", "command", "text", "thread_ts",
                       "function_execution_id", "bot_access_token", "action_id", "event_id")),
    objects=(_OBJECT, ("container", "message", "previous_message", "item", "assistant_thread",
                       "function_data", "state", "workflow_step")),
    entities=(_ID_OR_OBJECT, ("team", "user", "enterprise", "channel")),
    flags=(_FLAG, ("is_enterprise_install", "is_ext_shared_channel")),
    lists=(_LIST, ("authorizations", "response_urls")),
)  # fmt: skip
_ENTITY = _kinds(strings=(_STRING, ("id", "team_id", "enterprise_id", "name", "username")))
_EVENT = _kinds(
    strings=(_STRING, ("type", "subtype", "channel_type", "text", "ts", "thread_ts", "event_ts",
                       "bot_id", "user_team", "tab", "bot_access_token", "function_execution_id",
                       "client_msg_id")),
    objects=(_OBJECT, ("message", "previous_message", "item", "assistant_thread",
                       "workflow_step")),
    entities=(_ID_OR_OBJECT, ("user", "channel", "team")),
    lists=(_LIST, ("files", "blocks", "attachments")),
)  # fmt: skip
_MESSAGE = _kinds(strings=(_STRING, ("ts", "thread_ts", "text", "user")))
_CONTAINER = _kinds(strings=(_STRING, ("type", "channel_id", "message_ts", "thread_ts")))
_ACTION = _kinds(
    strings=(_STRING, ("action_id", "block_id", "type", "value", "action_ts")),
    objects=(_OBJECT, ("selected_option", "text")),
)
_OPTION_VALUE = _kinds(strings=(_STRING, ("value",)))
_VIEW = _kinds(
    strings=(_STRING, ("id", "type", "callback_id", "private_metadata", "hash", "team_id",
                       "app_id", "app_installed_team_id", "root_view_id", "previous_view_id",
                       "bot_id", "external_id")),
    objects=(_OBJECT, ("state",)),
    lists=(_LIST, ("blocks",)),
)  # fmt: skip
_STATE = _kinds(objects=(_OBJECT, ("values",)))
_RESPONSE_URL = _kinds(strings=(_STRING, ("response_url",)))
_PERSON_EVENTS = ("message", "app_mention")  # what SlackConversations reads, field by field


def _check(fields: Mapping[str, Any], kinds: Mapping[str, _Kind], where: str) -> None:
    for name, kind in kinds.items():
        if name in fields and not isinstance(fields[name], kind.types):
            raise PayloadError(f"{where}{name} is not {kind.what}")
        if kind is _ID_OR_OBJECT and isinstance(fields.get(name), dict):
            _check(fields[name], _ENTITY, f"{where}{name}.")


def _objects(value: Any, where: str) -> list[dict[str, Any]]:
    """The items of an optional list of objects."""
    items = value if isinstance(value, list) else []
    if not all(isinstance(item, dict) for item in items):
        raise PayloadError(f"{where} holds something other than objects")
    return items


def _check_event(event: Any) -> None:
    if not isinstance(event, dict):
        raise PayloadError("event is not an object")
    _check(event, _EVENT, "event.")
    for key in ("message", "previous_message"):
        if isinstance(event.get(key), dict):
            _check(event[key], _EVENT, f"event.{key}.")
    if event.get("type") in _PERSON_EVENTS:
        if not isinstance(event.get("channel"), str) or not isinstance(event.get("ts"), str):
            raise PayloadError(f"a {event['type']} event without its channel and ts")
        if not isinstance(event.get("user"), str | None):
            raise PayloadError("event.user is not a string")
        if not isinstance(event.get("text", ""), str):
            raise PayloadError("event.text is not a string")
        if len(event.get("text", "")) > MESSAGE_TEXT_MAX:
            raise PayloadError(f"event.text is over {MESSAGE_TEXT_MAX} characters")


def _check_actions(actions: Any) -> None:
    if not isinstance(actions, list) or not actions:
        raise PayloadError("actions is not a list of actions")
    for i, action in enumerate(_objects(actions, "actions")):
        if not isinstance(action.get("action_id"), str):
            raise PayloadError(f"actions[{i}] without an action_id")
        _check(action, _ACTION, f"actions[{i}].")
        if isinstance(action.get("selected_option"), dict):
            _check(action["selected_option"], _OPTION_VALUE, f"actions[{i}].selected_option.")


def _check_view(view: Any) -> None:
    if not isinstance(view, dict):
        raise PayloadError("view is not an object")
    _check(view, _VIEW, "view.")
    if isinstance(view.get("state"), dict):
        _check(view["state"], _STATE, "view.state.")


_WITH_ACTIONS = ("block_actions", "interactive_message")


def check_envelope(body: Any) -> dict[str, Any]:
    """`body` (a request as Bolt parsed it) if Bolt and our listeners can read it: the fields
    they read have the types Slack sends; PayloadError saying what is wrong otherwise."""
    if not isinstance(body, dict):
        raise PayloadError("the payload is not a JSON object")
    if too_deep(body, MAX_DEPTH):
        raise PayloadError(f"the payload nests deeper than {MAX_DEPTH} levels")
    _check(body, _TOP, "")
    for i, authorization in enumerate(_objects(body.get("authorizations"), "authorizations")):
        _check(authorization, _TOP, f"authorizations[{i}].")
    for i, url in enumerate(_objects(body.get("response_urls"), "response_urls")):
        _check(url, _RESPONSE_URL, f"response_urls[{i}].")
    for key, kinds in (("container", _CONTAINER), ("message", _MESSAGE)):
        if isinstance(body.get(key), dict):
            _check(body[key], kinds, f"{key}.")
    if "event" in body:
        _check_event(body["event"])
    if "actions" in body:
        _check_actions(body["actions"])
    elif body.get("type") in _WITH_ACTIONS:  # Bolt reads body["actions"][0] of these
        raise PayloadError(f"a {body['type']} payload without actions")
    if "view" in body:
        _check_view(body["view"])
    return body
