"""Text on a Teams card: made inert, cut to byte budgets, and the core's phrases written out.

Model-written text goes through `teams_text` (markdown fields) or `plain_text` (labels, titles,
choices): nothing it holds can ping anyone, hide a link or fake our own lines. Sizes are bytes
of compact UTF-8 JSON, as a card is sent; `CARD_BUDGET` bounds a whole card, well under Teams's
~28 KB limit for a message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

# -- limits (bytes of UTF-8 JSON, as httpx sends a card: compact, not ASCII-escaped) -----------

MESSAGE_LIMIT = 28_000  # Teams refuses a message over ~28 KB, the whole activity included
CARD_BUDGET = MESSAGE_LIMIT - 4_000  # what a card may take: room for the activity around it
TITLE = 200
TEXT = 3_000  # a question, a message, an action, a reason
NAME = 100  # a person's name or id
NOTE = 1_000  # a notice or an error shown on the card
FACTS = 20  # facts shown at most (a custom tool's arguments, an answer's fields)
FACT_TITLE = 100
FACTS_TEXT = 10_000  # all the facts of one list together
LABEL = 200  # an input's label
LABELS_TEXT = 5_000  # all the labels of one form together
DESCRIPTION = 300
OPTION = 500  # one choice's title
OPTIONS_TEXT = 8_000  # all the choice titles of a card together
MAX_CHOICES = 150  # choices on a card at most (a select's 100 options fit)
FIELDS = 30  # inputs of one form at most (the core allows 20 fields)
PREFILL_TEXT = 6_000  # the person's own values put back into the inputs after an error
FALLBACK_TEXT = 300
MAX_REFRESH_USERS = 60  # Teams refreshes automatically for at most 60 users
MAX_REQUEST_ID = 200  # ours are 24 hex characters; anything longer is not one of ours
URL_MAX = 2_048
FILE_NAME_MAX = 255
ELLIPSIS = "…"

# -- making text inert -------------------------------------------------------------------------

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
    """What `text` adds to a card: its UTF-8 bytes inside a JSON string (escapes counted: `"`,
    `\\` and \\n-style controls take 2, other controls 6 as \\u00XX), as the encoder counts
    them (in C: cards measure long texts many times over)."""
    quoted = json.dumps(text, ensure_ascii=False)
    return len(quoted.encode("utf-8", "surrogatepass")) - 2  # less the quotes


def card_size(card: Mapping[str, Any]) -> int:
    """The card's size as sent: compact UTF-8 JSON, which `CARD_BUDGET` bounds."""
    return len(json.dumps(card, ensure_ascii=False, separators=(",", ":")).encode())


def clean(text: str) -> str:
    """A person's or the model's text with what UTF-8 or a reader cannot take removed: lone
    surrogates become U+FFFD, control characters and bidi overrides are dropped."""
    return _INVISIBLE.sub("", _SURROGATES.sub("\ufffd", text))


def _inert(text: str) -> str:
    """Text no renderer reads as markup: no tags, entities or card functions.

    `<` and `>` become the single angle quotation marks U+2039 and U+203A (which, unlike the
    fullwidth forms, no Unicode normalisation turns back into `<`): no `<at>` mention, no HTML
    (iOS has rendered a TextBlock holding `<`, `&` or `>` as HTML), no `<https://…>` autolink.
    An `&` that starts an entity and a `{{` that starts a DATE()/TIME() function get a WORD
    JOINER.
    """
    text = clean(text).replace("<", _LT).replace(">", _GT)
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
    # A token is a byte or more and two characters at most: what fits is among the first
    # `budget` + 1, which lie (whole, as in the full text) within its first 2 * budget + 4.
    tokens = _TOKEN.findall(text, 0, 2 * budget + 4)
    fits, over = 0, len(tokens)  # the longest run of whole tokens within `budget`, bisected
    while fits < over:
        middle = (fits + over + 1) // 2
        if byte_length("".join(tokens[:middle])) <= budget:
            fits = middle
        else:
            over = middle - 1
    return "".join(tokens[:fits]).rstrip() + ELLIPSIS


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


# -- the core's phrases ------------------------------------------------------------------------


class TeamsFormatter:
    """How a phrase of the core (bot/requests/wording.py) is written on a card: its words made
    inert, a person by name when we know it (else their id), a moment in UTC."""

    def __init__(self, name_of: Callable[[str], str | None] = lambda user_id: None) -> None:
        self._name_of = name_of

    def text(self, literal: str) -> str:
        return teams_text(literal, TEXT)

    def person(self, user_id: str) -> str:
        return teams_text(self._name_of(user_id) or user_id, NAME)

    def moment(self, when: datetime) -> str:
        if when.tzinfo is None:  # the core writes aware UTC; a naive one is taken as UTC too
            when = when.replace(tzinfo=UTC)
        return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


class PlainTextFormatter:
    """A phrase in a plain-text message (`textFormat: plain`, where nothing is markup): its
    words and names cleaned of control characters and bidi overrides, a moment in UTC."""

    def __init__(self, name_of: Callable[[str], str | None] = lambda user_id: None) -> None:
        self._name_of = name_of

    def text(self, literal: str) -> str:
        return clean(literal)

    def person(self, user_id: str) -> str:
        return clean(self._name_of(user_id) or user_id)

    def moment(self, when: datetime) -> str:
        return TeamsFormatter().moment(when)
