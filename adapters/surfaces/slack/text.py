"""Slack text: escaping model-written text and cutting it to Slack's limits.

Everything a model (or a person, or a file name) wrote reaches Slack through `fit`: escaped
first, then cut, because Slack's limits apply to the text as sent, entities included. The core's
phrases (bot/requests/wording.py) are written with `SlackFormatter`: their words escaped, people
as mentions, moments as `<!date>` each reader sees in their own time zone.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

# -- Slack's limits (Block Kit reference; the same figures slack_sdk validates) --------------

MESSAGE_TEXT = 40_000  # chat.postMessage `text`
MESSAGE_BLOCKS = 50
MODAL_BLOCKS = 100
SECTION_TEXT = 3_000
SECTION_FIELDS = 10
FIELD_TEXT = 2_000
HEADER_TEXT = 150
CONTEXT_ELEMENTS = 10
ACTIONS_ELEMENTS = 25
BUTTON_TEXT = 75
BUTTON_VALUE = 2_000
ACTION_ID = 255
BLOCK_ID = 255
CALLBACK_ID = 255
PRIVATE_METADATA = 3_000
MODAL_TITLE = 24
MODAL_BUTTON = 24  # a modal's submit and close texts
OPTION_TEXT = 75
OPTION_VALUE = 150  # Slack's docs and slack_sdk; @slack/types says 75 (ours are short indexes)
SELECT_OPTIONS = 100
INPUT_LABEL = 2_000
INPUT_HINT = 2_000
PLACEHOLDER = 150
CONFIRM_TITLE = 100
CONFIRM_TEXT = 300
CONFIRM_BUTTON = 30
FILE_INPUT_MAX_FILES = 10

ELLIPSIS = "…"

# A word joiner is invisible and keeps `@here` from reading as one token. Slack expands bare
# `@channel`/`@here`/`@everyone` when a message is posted with `link_names` or `parse=full`,
# and some clients (and the fallback `text` of a notification) have done so on their own;
# the documented `<!here>` form is already defused by escaping `<`. Cheap insurance either way.
_BROADCAST = re.compile(r"@(channel|here|everyone)\b", re.IGNORECASE)
_JOINER = "\u2060"

# What `escape` writes; `truncate` must never cut one of these in half (`&am…` shows garbage).
_PARTIAL_ENTITY = re.compile(r"&(?:a|am|amp|l|lt|g|gt)?$")


def escape(text: str) -> str:
    """Make text inert in mrkdwn: no mentions, no hidden links, no broadcast pings.

    Only `&`, `<` and `>` are Slack's control characters (its docs: escape exactly those, not
    the whole text); `&` goes first so the entities we write are not escaped again.
    """
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _BROADCAST.sub(lambda m: f"@{_JOINER}{m.group(1)}", text)


def length(text: str) -> int:
    """Length as Slack may count it: UTF-16 code units.

    Slack's servers are not documented to count code points or UTF-16 units; an emoji outside
    the BMP is one code point but two units. Counting units is never less than code points,
    so text cut to this length fits under either reading (and under jsonschema's `maxLength`).
    """
    return len(text.encode("utf-16-le")) // 2


def truncate(text: str, limit: int) -> str:
    """`text` if it fits in `limit`, else cut with a visible "…" so the result is `limit` or less.

    Cuts between code points (never inside a surrogate pair) and never inside an entity that
    `escape` wrote.
    """
    if length(text) <= limit:
        return text
    if limit < 1:
        return ""
    budget = limit - length(ELLIPSIS)
    kept: list[str] = []
    used = 0
    for char in text:
        units = 2 if ord(char) > 0xFFFF else 1
        if used + units > budget:
            break
        kept.append(char)
        used += units
    head = _PARTIAL_ENTITY.sub("", "".join(kept)).rstrip()
    return head + ELLIPSIS


def fit(text: str, limit: int) -> str:
    """Model-written text made safe for mrkdwn and plain_text, within `limit`."""
    return truncate(escape(text), limit)


# -- people and moments --------------------------------------------------------------------------

_SLACK_USER = re.compile(r"^[UWB][A-Z0-9]{2,}$")


_SLACK_GROUP = re.compile(r"^slack:(S[A-Z0-9]{2,})$")


def mention(user_id: str) -> str:
    """`<@U…>` for a Slack user, `<!subteam^S…>` for a user group a policy names
    (`slack:S…`); an id from another surface (Teams, console) as plain text."""
    if _SLACK_USER.match(user_id):
        return f"<@{user_id}>"
    group = _SLACK_GROUP.match(user_id)
    return f"<!subteam^{group.group(1)}>" if group else fit(user_id, 100)


def slack_date(when: datetime) -> str:
    """A date each reader sees in their own time zone; the fallback is UTC."""
    if when.tzinfo is None:  # the core writes aware UTC; a naive one is taken as UTC too
        when = when.replace(tzinfo=UTC)
    fallback = when.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"<!date^{int(when.timestamp())}^{{date_short_pretty}} {{time}}|{fallback}>"


class SlackFormatter:
    """The core's `Formatter` (bot/requests/wording.py) for mrkdwn."""

    def text(self, literal: str) -> str:
        return escape(literal)

    def person(self, user_id: str) -> str:
        return mention(user_id)

    def moment(self, when: datetime) -> str:
        return slack_date(when)


SLACK = SlackFormatter()
