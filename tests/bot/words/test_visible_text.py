"""bot/words/visible_text.py: control characters removed, bidi controls shown, marks kept; and the
labels the bridge's own prompts are named by when they expire."""

from __future__ import annotations

import pytest

from bot.human_input import timeout_message
from bot.human_input.snapshots import ASKED_BY_THE_BRIDGE
from bot.words.tool_names import ELICIT_INPUT, GATE_TOOL
from bot.words.visible_text import visible, visible_values


@pytest.mark.parametrize(
    ("written", "shown"),
    [
        ("plain text, ünïcode, 日本語", "plain text, ünïcode, 日本語"),
        ("lines\nand\ttabs stay", "lines\nand\ttabs stay"),
        ("\x1b[2Jcleared\x00\x07\x7f\x85\x9b", "[2Jcleared"),  # C0, DEL, C1 (NEL, CSI)
        ("CRLF\r\n", "CRLF\n"),
        ("a\u202eb\u202ac\u2066d\u2069", "a⟦U+202E⟧b⟦U+202A⟧c⟦U+2066⟧d⟦U+2069⟧"),
        ("שלום\u200f, abc\u200e", "שלום\u200f, abc\u200e"),  # marks: right-to-left text needs them
        ("lone \ud800 surrogate", "lone \ufffd surrogate"),
    ],
)
def test_visible(written: str, shown: str) -> None:
    assert visible(written) == shown
    assert visible(shown) == shown  # what is shown is left as it is


def test_visible_values_reach_every_string_and_key() -> None:
    value = {"a\x1b": ["x\u202e", {"k": "\x00v"}], "n": 1, "b": True, "none": None}
    assert visible_values(value) == {"a": ["x⟦U+202E⟧", {"k": "v"}], "n": 1, "b": True,
                                     "none": None}  # fmt: skip


def test_clean_values_are_kept_as_they_are_not_copied() -> None:
    """A request keeps its caller's arguments when nothing in them needs escaping (a copy of
    them was a quarter of what a pending request kept in memory)."""
    clean = {"question": "Which colour?\nPick one", "options": ["red", "blue"], "n": 2}
    assert visible_values(clean) is clean
    text = "two\nlines"
    assert visible(text) is text
    dirty = {"options": ["red", "\x1b[2Jblue"], "question": "ok"}
    shown = visible_values(dirty)
    assert shown == {"options": ["red", "[2Jblue"], "question": "ok"}
    assert shown is not dirty and dirty["options"][1] == "\x1b[2Jblue"


def test_the_bridges_own_prompts_are_named_by_their_labels() -> None:
    assert set(ASKED_BY_THE_BRIDGE) == {GATE_TOOL, ELICIT_INPUT}
    assert timeout_message(2, GATE_TOOL) == "No answer within 2s to the permission prompt"
    # RoomKit's words for a tool the model called by that name.
    assert timeout_message(300, "AskUserQuestion") == (
        "Human input timed out after 300s for tool 'AskUserQuestion'"
    )
