"""Model text that cannot phish: what the model wrote, shown in a chat so that every link shows
where it goes, no image is embedded and nobody is pinged in bulk. Pure.

A prompt-injected model can write `[Approve now](https://evil)` and the bridge would post it in
its own voice. Whatever the model's text holds, `defused` renders:

- links with their real target in sight: Markdown `[text](url)`, Slack's `<url|text>`, an HTML
  anchor `<a href="url">text</a>` become `text (url)` (just `url` when the text says no more);
- images as text: `![alt](url)` and `<img src="url">` become `alt (url)`, never embedded;
- mass mentions inert: `@channel`, `@here`, `@everyone` get an invisible WORD JOINER after the
  `@`; Slack's `<!channel>`, `<!here>`, `<!everyone>`, `<!subteam^…>` become such words (or
  their label), Teams' `<at>Name</at>` becomes `@Name`;
- and a WORD JOINER after every `]` left, so no form we did not rewrite (reference links
  `[x][ref]` with `[ref]: url`, a link across lines) can hide a target on any parser.

The surface then escapes the result for its own format (adapters/surfaces/slack/text.py, Teams'
plain
text). A streamed reply is rendered piece by piece: `settled` says how much of the text so far
may be shown now, holding back the tail that what comes next could turn into a link or a
mention (a `[` or `<` not closed on the last line, a trailing `@word`); pieces cut there render, one
by one, as the whole text would.
"""

from __future__ import annotations

import re

WORD_JOINER = "\u2060"  # invisible; breaks any syntax that needs two characters side by side
HOLD_MAX = 1_000  # characters held back at most: a "link" longer than this is shown, broken

# A link's destination: `<anything but angles>`, or no spaces with one level of parentheses.
_DEST = r"(?:<(?P<angled>[^<>\n]*)>|(?P<bare>[^\s()<>]*(?:\([^\s()<>]*\)[^\s()<>]*)*))"
_TITLE = r"""(?:\s+(?:"[^"\n]*"|'[^'\n]*'|\([^()\n]*\)))?"""
_LABEL = r"(?P<label>[^\[\]\n]*(?:\[[^\[\]\n]*\][^\[\]\n]*)*)"  # one level of nested brackets
_MARKDOWN_LINK = re.compile(rf"(?P<image>!?)\[{_LABEL}\]\([ \t]*{_DEST}{_TITLE}[ \t]*\)")

_SLACK_LINK = re.compile(r"<(?P<url>[A-Za-z][A-Za-z0-9+.-]*:[^<>|\s]*)(?:\|(?P<label>[^<>\n]*))?>")
_SLACK_CHANNEL = re.compile(r"<#[A-Z0-9]+(?:\|(?P<label>[^<>\n]*))?>")
_SLACK_SPECIAL = re.compile(r"<!(?P<name>[A-Za-z]+)(?:\^[^<>|\n]*)?(?:\|(?P<label>[^<>\n]*))?>")
_HTML_ANCHOR = re.compile(
    r"""<a\b[^<>\n]*?\bhref\s*=\s*(?P<q>["']?)(?P<url>[^"'<>\s]*)(?P=q)[^<>\n]*>"""
    r"(?P<label>[^<\n]*)</a\s*>",  # a label without tags: linear on any text
    re.IGNORECASE,
)
_HTML_IMAGE = re.compile(
    r"""<img\b(?=[^<>\n]*?\bsrc\s*=\s*(?P<q>["']?)(?P<url>[^"'<>\s]*)(?P=q))"""
    r"""(?:[^<>\n]*?\balt\s*=\s*(?P<aq>["'])(?P<label>[^"'<>\n]*)(?P=aq))?[^<>\n]*>""",
    re.IGNORECASE,
)
_TEAMS_MENTION = re.compile(r"<at\b[^<>\n]*>(?P<label>[^<>\n]*)</at\s*>", re.IGNORECASE)
_BROADCAST = re.compile(r"@(?=(?:channel|here|everyone)\b)", re.IGNORECASE)

# The tail of a text still being written that more text could make a link or a mention of.
_OPEN = re.compile(
    r"!?\[[^\[\]\n]*(?:\[[^\[\]\n]*(?:\][^\[\]\n]*)?)*(?:\](?:\([^)\n]*)?)?\Z"  # [text](url…
    r"|<(?P<tag>a|at)\b(?:(?!</(?P=tag)\s*>)[^\n])*\Z"  # an anchor or a mention not closed
    r"|<[^<>\n]*\Z"  # <url|text…, <!here…, <img…
    r"|!\Z"  # an image's `!`, its `[` to come
    r"|@[A-Za-z]{0,9}\Z",  # @chan…: @channel to come
    re.IGNORECASE,
)


def defused(text: str) -> str:
    """`text` with every link showing its target, no image and no mass mention (module doc)."""
    text = _TEAMS_MENTION.sub(lambda m: "@" + m["label"].lstrip("@"), text)
    text = _SLACK_SPECIAL.sub(_special, text)
    text = _SLACK_CHANNEL.sub(lambda m: "#" + (m["label"] or "channel"), text)
    text = _SLACK_LINK.sub(lambda m: _shown(m["label"] or "", m["url"]), text)
    text = _HTML_ANCHOR.sub(lambda m: _shown(m["label"], m["url"]), text)
    text = _HTML_IMAGE.sub(lambda m: _shown(m["label"] or "image", m["url"]), text)
    for _ in range(2):  # an image inside a link's text: the link is rewritten once it is out
        text = _MARKDOWN_LINK.sub(_markdown, text)
    text = _BROADCAST.sub("@" + WORD_JOINER, text)
    return text.replace("]", "]" + WORD_JOINER)


def settled(text: str) -> int:
    """How many characters of a text still being written can be shown now: all but the tail
    more text could make a link, an image or a mention of (a `[`, `!` or `<` left open on the
    last line, a trailing `@word`), and never more than `HOLD_MAX` held back."""
    window = max(text.rfind("\n") + 1, len(text) - HOLD_MAX)
    opened = _OPEN.search(text, window)
    return opened.start() if opened is not None else len(text)


def _special(match: re.Match[str]) -> str:
    """`<!here>`, `<!subteam^S1|@devs>`, `<!date^…|fallback>`: their words, never a ping."""
    label = match["label"]
    return label if label else "@" + match["name"]


def _markdown(match: re.Match[str]) -> str:
    url = match["angled"] if match["angled"] is not None else match["bare"]
    label = match["label"].strip()
    if match["image"]:
        return _shown(label or "image", url)
    return _shown(label, url)


def _shown(label: str, url: str) -> str:
    """A link as `label (url)`: its target in sight; just the url when the label adds nothing."""
    label, url = label.strip(), url.strip()
    if not url:
        return label
    if not label or _bare(label) == _bare(url):
        return url
    return f"{label} ({url})"


def _bare(url: str) -> str:
    """A URL without its scheme and trailing slash, to see whether a label only repeats it."""
    return re.sub(r"^[A-Za-z][A-Za-z0-9+.-]*:(?://)?", "", url).rstrip("/").lower()
