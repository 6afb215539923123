"""Send an app what Slack sends it: signed Events API and interactivity requests.

    envelope = event_callback(message_event("<@U0BOT00001> hi", user="U0ALICE", channel="C1"))
    resp = await post_signed(session, app_url, envelope, SECRET)  # JSON, signed
    click = block_actions_payload(
        message=fake.message("C1", ts), channel_id="C1", action_id="approve", user_id="U0ALICE",
        trigger_id=fake.new_trigger_id(), response_url=fake.new_response_url("C1", ts),
    )
    resp = await post_signed(session, app_url, click, SECRET)  # form payload=<json>, signed

Bolt parses JSON bodies as events and ``payload=<json>`` forms as interactions
(``slack_bolt.request.internals.parse_body``) and checks ``X-Slack-Signature`` over the raw
body (``slack_sdk.signature.SignatureVerifier``). Defaults match ``FakeSlack``'s workspace.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import time
import uuid
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

import aiohttp

from tests.fakes.slack_api import APP_ID, BOT_USER_ID, TEAM_DOMAIN, TEAM_ID

__all__ = [
    "DEAD_RESPONSE_URL",
    "FORM",
    "JSON_TYPE",
    "VERIFICATION_TOKEN",
    "app_home_opened",
    "block_actions_payload",
    "encode",
    "event_callback",
    "home_action_payload",
    "message_event",
    "post_signed",
    "sign",
    "slash_command",
    "url_verification",
    "view_submission_payload",
]

JSON = dict[str, Any]
FORM = "application/x-www-form-urlencoded"
JSON_TYPE = "application/json"
VERIFICATION_TOKEN = "fake-verification-token"  # the deprecated `token` field Slack still sends
# A response_url that fails fast on loopback: use FakeSlack.new_response_url() for a live one.
DEAD_RESPONSE_URL = "http://127.0.0.1:9/actions/unset"
_EVENT_TYPES = {"event_callback", "url_verification", "app_rate_limited"}
# Element type -> the key holding a selection in view.state.values.
_SELECTED = {
    "users_select": "selected_user",
    "conversations_select": "selected_conversation",
    "channels_select": "selected_channel",
    "datepicker": "selected_date",
    "timepicker": "selected_time",
}


def sign(body: bytes | str, secret: str, timestamp: int | None = None) -> dict[str, str]:
    """``X-Slack-Signature``/``X-Slack-Request-Timestamp`` headers for ``body``."""
    ts = str(int(time.time()) if timestamp is None else timestamp)
    raw = body.encode() if isinstance(body, str) else body
    digest = hmac.new(secret.encode(), b"v0:%s:%s" % (ts.encode(), raw), hashlib.sha256)
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": f"v0={digest.hexdigest()}"}


def _now_ts() -> str:
    return f"{time.time():.6f}"


def _user(user_id: str, user_name: str | None, team_id: str) -> JSON:
    name = user_name or user_id.lower()
    return {"id": user_id, "username": name, "name": name, "team_id": team_id}


def _team(team_id: str) -> JSON:
    return {"id": team_id, "domain": TEAM_DOMAIN}


# ---------------------------------------------------------------- Events API


def event_callback(
    event: Mapping[str, Any],
    *,
    team_id: str = TEAM_ID,
    api_app_id: str = APP_ID,
    event_id: str | None = None,
    event_time: int | None = None,
    bot_user_id: str = BOT_USER_ID,
) -> JSON:
    """The envelope Slack posts (as JSON) around an event."""
    return {
        "token": VERIFICATION_TOKEN,
        "team_id": team_id,
        "context_team_id": team_id,
        "context_enterprise_id": None,
        "api_app_id": api_app_id,
        "event": dict(event),
        "type": "event_callback",
        "event_id": event_id or f"Ev{secrets.token_hex(5).upper()}",
        "event_time": int(time.time()) if event_time is None else event_time,
        "authorizations": [
            {
                "enterprise_id": None,
                "team_id": team_id,
                "user_id": bot_user_id,
                "is_bot": True,
                "is_enterprise_install": False,
            }
        ],
        "is_ext_shared_channel": False,
        "event_context": f"4-{secrets.token_urlsafe(24)}",
    }


def message_event(
    text: str,
    *,
    user: str,
    channel: str,
    ts: str | None = None,
    thread_ts: str | None = None,
    event_type: str = "message",
    channel_type: str = "channel",
    team_id: str = TEAM_ID,
) -> JSON:
    """A human's ``message`` (or ``app_mention`` with ``event_type``) event, with its blocks."""
    ts = ts or _now_ts()
    parts = re.split(r"<@([A-Z0-9]+)(?:\|[^>]*)?>", text)  # odd indexes: mentioned user ids
    elements = [
        {"type": "user", "user_id": part} if i % 2 else {"type": "text", "text": part}
        for i, part in enumerate(parts)
        if part
    ]
    section = {"type": "rich_text_section", "elements": elements}
    event: JSON = {
        "type": event_type,
        "user": user,
        "text": text,
        "ts": ts,
        "client_msg_id": str(uuid.uuid4()),
        "team": team_id,
        "blocks": [{"type": "rich_text", "block_id": secrets.token_hex(3), "elements": [section]}],
        "channel": channel,
        "event_ts": ts,
    }
    if event_type == "message":
        event["channel_type"] = channel_type
    if thread_ts:
        event["thread_ts"] = thread_ts
    return event


def url_verification(challenge: str = "fake-challenge") -> JSON:
    return {"token": VERIFICATION_TOKEN, "challenge": challenge, "type": "url_verification"}


# ---------------------------------------------------------------- interactivity


def _find_action(blocks: Any, action_id: str) -> tuple[str, JSON] | None:
    """(block_id, element) of the element with ``action_id`` in a ``blocks`` array."""

    def walk(node: Any) -> JSON | None:
        if isinstance(node, dict):
            if node.get("action_id") == action_id:
                return node
            node = list(node.values())
        if isinstance(node, list):
            return next((found for child in node if (found := walk(child))), None)
        return None

    for block in blocks if isinstance(blocks, list) else []:
        if isinstance(block, dict) and (element := walk(block)) is not None:
            return str(block.get("block_id", "")), element
    return None


def block_actions_payload(
    *,
    message: Mapping[str, Any],
    channel_id: str,
    action_id: str,
    user_id: str,
    user_name: str | None = None,
    value: str | None = None,
    block_id: str | None = None,
    trigger_id: str | None = None,
    response_url: str = DEAD_RESPONSE_URL,
    team_id: str = TEAM_ID,
    api_app_id: str = APP_ID,
    channel_name: str = "general",
) -> JSON:
    """A click on ``action_id`` in ``message`` (e.g. ``fake.message(channel, ts)``).

    The action's block_id, type, text and value come from the message's blocks; ``value`` and
    ``block_id`` override them (to forge a click), and are required if the action isn't there.
    """
    found = _find_action(message.get("blocks"), action_id)
    if found is None and block_id is None:
        raise LookupError(f"no action_id {action_id!r} in the message's blocks")
    found_block, element = found or ("", {"type": "button"})
    action: JSON = {
        "action_id": action_id,
        "block_id": found_block if block_id is None else block_id,
        "type": element.get("type", "button"),
        "action_ts": _now_ts(),
    }
    action |= {k: element[k] for k in ("text", "style") if k in element}
    chosen = element.get("value") if value is None else value
    if isinstance(element.get("options"), list):
        options = [o for o in element["options"] if o.get("value") == chosen]
        action["selected_option"] = options[0] if options else {"value": chosen}
    elif chosen is not None:
        action["value"] = chosen
    container: JSON = {
        "type": "message",
        "message_ts": message["ts"],
        "channel_id": channel_id,
        "is_ephemeral": False,
    }
    if message.get("thread_ts"):
        container["thread_ts"] = message["thread_ts"]
    return {
        "type": "block_actions",
        "user": _user(user_id, user_name, team_id),
        "api_app_id": api_app_id,
        "token": VERIFICATION_TOKEN,
        "container": container,
        "trigger_id": trigger_id or f"{secrets.randbelow(10**10)}.{secrets.token_hex(16)}",
        "team": _team(team_id),
        "enterprise": None,
        "is_enterprise_install": False,
        "channel": {"id": channel_id, "name": channel_name},
        "message": {"type": "message", **message},
        "state": {"values": {}},
        "response_url": response_url,
        "actions": [action],
    }


def home_action_payload(
    *,
    view: Mapping[str, Any],
    action_id: str,
    user_id: str,
    user_name: str | None = None,
    trigger_id: str | None = None,
    team_id: str = TEAM_ID,
    api_app_id: str = APP_ID,
) -> JSON:
    """A click on ``action_id`` in an App Home ``view`` (e.g. ``fake.homes[user]``): no
    channel, no message, no response_url; the container is the view."""
    found = _find_action(view.get("blocks"), action_id)
    if found is None:
        raise LookupError(f"no action_id {action_id!r} in the view's blocks")
    block_id, element = found
    action: JSON = {"action_id": action_id, "block_id": block_id, "type": element["type"],
                    "action_ts": _now_ts()}  # fmt: skip
    action |= {k: element[k] for k in ("text", "style", "value") if k in element}
    return {
        "type": "block_actions",
        "user": _user(user_id, user_name, team_id),
        "api_app_id": api_app_id,
        "token": VERIFICATION_TOKEN,
        "container": {"type": "view", "view_id": view.get("id", "")},
        "trigger_id": trigger_id or f"{secrets.randbelow(10**10)}.{secrets.token_hex(16)}",
        "team": _team(team_id),
        "enterprise": None,
        "is_enterprise_install": False,
        "view": dict(view),
        "actions": [action],
    }


def app_home_opened(user_id: str, *, tab: str = "home", channel: str = "D0HOME0001") -> JSON:
    """The ``app_home_opened`` event of ``user_id`` opening the app's Home (or Messages) tab."""
    return {"type": "app_home_opened", "user": user_id, "channel": channel, "tab": tab,
            "event_ts": _now_ts()}  # fmt: skip


def slash_command(
    command: str, text: str, *, user_id: str, channel_id: str, team_id: str = TEAM_ID,
    trigger_id: str | None = None, response_url: str = DEAD_RESPONSE_URL,
) -> bytes:  # fmt: skip
    """A slash command's body as Slack posts it: a form (post it with ``content_type=FORM``)."""
    return urlencode({
        "token": VERIFICATION_TOKEN, "team_id": team_id, "channel_id": channel_id,
        "user_id": user_id, "command": command, "text": text, "api_app_id": APP_ID,
        "trigger_id": trigger_id or f"{secrets.randbelow(10**10)}.{secrets.token_hex(16)}",
        "response_url": response_url,
    }).encode()  # fmt: skip


def view_submission_payload(
    *,
    view: Mapping[str, Any],
    user_id: str,
    values: Mapping[str, Mapping[str, Any]] | None = None,
    user_name: str | None = None,
    trigger_id: str | None = None,
    team_id: str = TEAM_ID,
    api_app_id: str = APP_ID,
) -> JSON:
    """Submitting ``view`` (e.g. ``fake.views[view_id]``) with ``values[block_id][action_id]``.

    A plain value becomes ``{"type": <element type>, "value": ...}`` (or ``selected_option``,
    ``selected_user``, ... as the element's type needs); a dict is used as the state as is.
    """
    state: JSON = {}
    for block_id, actions in (values or {}).items():
        for action_id, value in actions.items():
            found = _find_action(view.get("blocks"), action_id)
            kind = found[1].get("type", "plain_text_input") if found else "plain_text_input"
            entry: JSON = {"type": kind}
            if isinstance(value, Mapping):
                entry = dict(value)
            elif found and isinstance(found[1].get("options"), list):
                options = [o for o in found[1]["options"] if o.get("value") == value]
                entry["selected_option"] = options[0] if options else {"value": value}
            else:
                entry[_SELECTED.get(kind, "value")] = value
            state.setdefault(block_id, {})[action_id] = entry
    full_view: JSON = {
        "id": f"V{secrets.token_hex(5).upper()}",
        "team_id": team_id,
        "type": "modal",
        "callback_id": "",
        "private_metadata": "",
        "hash": f"{int(time.time())}.{secrets.token_hex(4)}",
        "previous_view_id": None,
        "app_id": api_app_id,
        **view,
        "state": {"values": state},
    }
    full_view.setdefault("root_view_id", full_view["id"])
    return {
        "type": "view_submission",
        "team": _team(team_id),
        "user": _user(user_id, user_name, team_id),
        "api_app_id": api_app_id,
        "token": VERIFICATION_TOKEN,
        "trigger_id": trigger_id or f"{secrets.randbelow(10**10)}.{secrets.token_hex(16)}",
        "view": full_view,
        "response_urls": [],
        "is_enterprise_install": False,
        "enterprise": None,
    }


# ---------------------------------------------------------------- the wire


def encode(payload: Mapping[str, Any], content_type: str | None = None) -> tuple[bytes, str]:
    """(body, content type) as Slack sends ``payload``: events as JSON, interactions as a form.

    ``content_type`` forces one; a form carries the JSON in its ``payload`` field.
    """
    if content_type is None:
        content_type = JSON_TYPE if payload.get("type") in _EVENT_TYPES else FORM
    text = json.dumps(payload, separators=(",", ":"))
    if content_type == FORM:
        return urlencode({"payload": text}).encode(), FORM
    return text.encode(), content_type


async def post_signed(
    session: aiohttp.ClientSession,
    url: str,
    body: bytes | Mapping[str, Any],
    secret: str,
    content_type: str | None = None,
    *,
    retry_num: int | None = None,
    retry_reason: str = "http_timeout",
    timestamp: int | None = None,
) -> aiohttp.ClientResponse:
    """POST ``body`` (raw bytes, or a payload to ``encode``) signed with ``secret``.

    With ``retry_num`` it carries ``X-Slack-Retry-Num``/``X-Slack-Retry-Reason`` as Slack's
    redeliveries do. The response is read before it is returned (``await resp.text()`` works).
    """
    if isinstance(body, Mapping):
        body, content_type = encode(body, content_type)
    elif content_type is None:
        content_type = JSON_TYPE if body.lstrip().startswith(b"{") else FORM
    headers = {
        "Content-Type": content_type,
        "User-Agent": "Slackbot 1.0 (+https://api.slack.com/robots)",
        **sign(body, secret, timestamp),
    }
    if retry_num is not None:
        headers |= {"X-Slack-Retry-Num": str(retry_num), "X-Slack-Retry-Reason": retry_reason}
    async with session.post(url, data=body, headers=headers) as resp:
        await resp.read()
    return resp
