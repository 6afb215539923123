"""Model text that cannot phish (bot/words/model_text.py): a table of hostile inputs and what
is shown of them, and a reply streamed in pieces cut where `settled` says, which must read as
the whole reply rendered at once (no mention or link formed across two pieces)."""

from __future__ import annotations

import re

import pytest

from bot.words.model_text import HOLD_MAX, WORD_JOINER, defused, settled

WJ = WORD_JOINER

HOSTILE = [
    # Markdown links and images: the target in sight, nothing embedded.
    ("[Approve now](https://evil.example/a)", "Approve now (https://evil.example/a)"),
    ("![logo](https://evil.example/x.png)", "logo (https://evil.example/x.png)"),
    ("![](https://evil.example/x.png)", "image (https://evil.example/x.png)"),
    ('[Approve](https://evil.example "Your bank")', "Approve (https://evil.example)"),
    ("[Approve](<https://evil.example/a b>)", "Approve (https://evil.example/a b)"),
    ("[https://bank.example](https://evil.example)", "https://bank.example (https://evil.example)"),
    ("[https://a.example/](https://a.example)", "https://a.example"),
    ("[](https://evil.example)", "https://evil.example"),
    ("[a [b] c](https://e.example)", f"a [b]{WJ} c (https://e.example)"),
    ("[x](https://w.example/A_(b))", "x (https://w.example/A_(b))"),
    (
        "[![logo](https://e.example/l.png)](https://evil.example)",
        "logo (https://e.example/l.png) (https://evil.example)",
    ),
    # Forms not rewritten are broken: a WORD JOINER after every `]`.
    (
        "[Approve][1]\n\n[1]: https://evil.example",
        f"[Approve]{WJ}[1]{WJ}\n\n[1]{WJ}: https://evil.example",
    ),
    ("[Approve]\n(https://evil.example)", f"[Approve]{WJ}\n(https://evil.example)"),
    # Slack's own syntax.
    ("<https://evil.example|Approve now>", "Approve now (https://evil.example)"),
    ("<https://evil.example>", "https://evil.example"),
    ("<mailto:a@evil.example|Write us>", "Write us (mailto:a@evil.example)"),
    ("<#C0123|general>", "#general"),
    ("<!channel> <!here> <!everyone>", f"@{WJ}channel @{WJ}here @{WJ}everyone"),
    ("<!subteam^S0123|@oncall>", "@oncall"),
    ("<!subteam^S0123>", "@subteam"),
    ("<!subteam^S0123|@channel>", f"@{WJ}channel"),
    ("<!date^1700000000^{date}|Nov 14>", "Nov 14"),
    # HTML, for Teams.
    ('<a href="https://evil.example">Approve</a>', "Approve (https://evil.example)"),
    ("<A HREF='https://evil.example' target=_blank>Approve</A>", "Approve (https://evil.example)"),
    ('<img src="https://evil.example/p.png" alt="chart">', "chart (https://evil.example/p.png)"),
    ("<img src=https://evil.example/p.png>", "image (https://evil.example/p.png)"),
    ('<at id="29:1">Bob Baker</at>', "@Bob Baker"),
    ("<at>channel</at>", f"@{WJ}channel"),
    # Mass mentions, whatever the case.
    ("Hey @channel, @Here and @EVERYONE", f"Hey @{WJ}channel, @{WJ}Here and @{WJ}EVERYONE"),
    ("mail me@channel.example", f"mail me@{WJ}channel.example"),
    # Left alone: bare links show their own target, plain words stay.
    (
        "See https://docs.example/a?b=1 (or @channels)",
        "See https://docs.example/a?b=1 (or @channels)",
    ),
    ("5 < 6 and [1] is a note", f"5 < 6 and [1]{WJ} is a note"),
]


@pytest.mark.parametrize(("text", "shown"), HOSTILE)
def test_hostile_text_is_shown_with_its_targets_and_pings_nobody(text: str, shown: str) -> None:
    assert defused(text) == shown


STREAMED = [
    "Please @channel look: [Approve now](https://evil.example/a) and ![x](https://e.example/i)",
    "Tell <!here> and <!subteam^S1|@oncall>: <https://evil.example|Approve> now @everyone",
    'Teams: <at id="1">Bob</at> <a href="https://evil.example">Approve</a> [a [b] c](https://e)',
    "line one @here\nline [two](https://two.example) @channel\n\n[ref][1]\n[1]: https://x",
]


def pieces_as_streamed(text: str, sizes: list[int]) -> list[str]:
    """The reply told in deltas of `sizes` characters, a flush after each: what each flush
    sends (settled so far and unsent), and the rest when the reply is complete."""
    said, shown, sent = "", 0, []
    position = 0
    for size in sizes:
        said += text[position : position + size]
        position += size
        cut = settled(said)
        if cut > shown:
            sent.append(said[shown:cut])
            shown = cut
    said += text[position:]
    if len(said) > shown:
        sent.append(said[shown:])
    return sent


@pytest.mark.parametrize("text", STREAMED)
@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 11])
def test_a_reply_streamed_in_pieces_reads_as_the_whole_reply(text: str, size: int) -> None:
    pieces = pieces_as_streamed(text, [size] * (len(text) // size + 1))
    streamed = "".join(defused(piece) for piece in pieces)
    assert streamed == defused(text)
    assert not re.search(r"@(channel|here|everyone)\b", streamed, re.IGNORECASE)
    assert "](" not in streamed


def test_a_word_split_across_two_flushes_is_still_defused() -> None:
    pieces = pieces_as_streamed("Hello @chan" + "nel, look", [len("Hello @chan"), 3])
    assert pieces[0] == "Hello "  # the word that may become a mention is held back
    assert "".join(defused(p) for p in pieces) == f"Hello @{WJ}channel, look"


@pytest.mark.parametrize(
    ("said", "held"),
    [
        ("Hello @chan", "@chan"),
        ("Hello ", ""),
        ("Hello @channel", "@channel"),
        ("mail me@", "@"),
        ("see https://evil.exa", ""),
        ("look!", "!"),
        ("ok [Approve now](https://ev", "[Approve now](https://ev"),
        ("ok [Approve now]", "[Approve now]"),
        ("ok ![x", "![x"),
        ("ok [Approve now](https://evil.example) ", ""),
        ("ok [1] is ", ""),
        ("ok <https://e|Appro", "<https://e|Appro"),
        ('ok <a href="u">Appro', '<a href="u">Appro'),
        ("ok <at>Bo", "<at>Bo"),
        ("[open\nnext line ", ""),  # a link never spans lines: the old line is not held
    ],
)
def test_settled_holds_back_what_more_text_could_make_a_link_or_a_mention(
    said: str, held: str
) -> None:
    assert said[settled(said) :] == held


@pytest.mark.parametrize(
    "text",
    ['<a href="x">' * 2000, "[" * 20_000, "[a](" * 5000, "<" * 20_000, "![x](" * 4000,
     "<at>" * 5000, "@" * 20_000, "[x](" * 4000 + "a" * 4000],
)  # fmt: skip
def test_hostile_shapes_render_in_linear_time(text: str) -> None:
    """Teams renders the whole reply each second: no shape of text may make that quadratic
    (20,000 characters of anchors without an end took 1.6 s when a label could hold tags)."""
    for _ in range(3):
        defused(text + text[:1])
        settled(text)


def test_settled_never_holds_back_more_than_hold_max() -> None:
    said = "[" + "x" * (3 * HOLD_MAX)
    assert settled(said) == len(said)  # no link: shown, its `]` broken when it comes
    said = "x [" + "x" * (HOLD_MAX // 2)
    assert settled(said) == 2
