"""Escaping and truncation of model-written text for Slack."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from adapters.surfaces.slack.text import (
    ELLIPSIS,
    SLACK,
    escape,
    fit,
    length,
    mention,
    slack_date,
    truncate,
)
from bot.words.phrases import Phrase

pytestmark = pytest.mark.fast  # pure functions: in `make check`


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [
        ("a & b", "a &amp; b"),
        ("<!channel> hi", "&lt;!channel&gt; hi"),
        ("<@U123>", "&lt;@U123&gt;"),
        ("<https://evil.example|click>", "&lt;https://evil.example|click&gt;"),
        ("&lt; already", "&amp;lt; already"),  # escaped once more: shown as typed
        ("plain", "plain"),
    ],
)
def test_escape_control_characters(raw: str, escaped: str) -> None:
    assert escape(raw) == escaped


@pytest.mark.parametrize("word", ["@channel", "@here", "@everyone", "@HERE", "ping @here!"])
def test_escape_defuses_bare_broadcasts(word: str) -> None:
    out = escape(word)
    assert "@channel" not in out.lower()
    assert "@here" not in out.lower()
    assert "@everyone" not in out.lower()
    assert out.replace("\u2060", "") == word  # invisible: reads the same


def test_escape_leaves_other_at_words() -> None:
    assert escape("mail me@example.com or @hereford") == "mail me@example.com or @hereford"


def test_truncate_keeps_short_text() -> None:
    assert truncate("abc", 3) == "abc"


def test_truncate_cuts_with_ellipsis_at_the_limit() -> None:
    out = truncate("abcdefghij", 5)
    assert out == "abcd" + ELLIPSIS
    assert length(out) == 5


@pytest.mark.parametrize("limit", [1, 2, 3, 24, 75, 150, 3000])
def test_truncate_never_exceeds(limit: int) -> None:
    for text in ["x" * 5000, "😀" * 5000, "a😀" * 3000, escape("<&>" * 2000)]:
        assert length(truncate(text, limit)) <= limit


def test_truncate_zero_limit() -> None:
    assert truncate("abc", 0) == ""


def test_length_counts_utf16_units() -> None:
    assert length("😀") == 2
    assert length("é") == 1


def test_truncate_does_not_split_astral_characters() -> None:
    out = truncate("😀😀😀", 4)  # room for one emoji (2) and the ellipsis (1)
    assert out == "😀" + ELLIPSIS


@pytest.mark.parametrize("limit", range(2, 12))
def test_truncate_never_leaves_half_an_entity(limit: int) -> None:
    out = fit("ab<<<<<<<<", limit)
    body = out.removesuffix(ELLIPSIS)
    assert body.count("&") == body.count("&lt;")  # every `&` begins a whole entity


def test_fit_escapes_then_cuts() -> None:
    out = fit("<" * 100, 10)
    assert out.startswith("&lt;&lt;")
    assert "<" not in out
    assert length(out) <= 10


# -- people, moments and the core's phrases ------------------------------------------------------


def test_slack_date_format() -> None:
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    expected = (
        f"<!date^{int(when.timestamp())}^{{date_short_pretty}} {{time}}|2026-01-02 03:04 UTC>"
    )
    assert slack_date(when) == expected
    assert slack_date(when.replace(tzinfo=None)) == expected  # naive is taken as UTC


@pytest.mark.parametrize(
    ("user_id", "shown"),
    [
        ("U0ALICE001", "<@U0ALICE001>"),
        ("W0ENTERPRISE", "<@W0ENTERPRISE>"),
        ("29:teams<user>", "29:teams&lt;user&gt;"),  # another surface's id: text, escaped
        ("alice", "alice"),
    ],
)
def test_mention_only_slack_users(user_id: str, shown: str) -> None:
    assert mention(user_id) == shown


def test_a_phrase_in_slack_escapes_its_words_and_formats_people_and_moments() -> None:
    when = datetime(2026, 1, 2, 3, 4, tzinfo=UTC)
    phrase = Phrase("<b> & {who} at {at}", {"who": "U0ALICE001"}, {"at": when})
    assert phrase.render(SLACK) == f"&lt;b&gt; &amp; <@U0ALICE001> at {slack_date(when)}"
