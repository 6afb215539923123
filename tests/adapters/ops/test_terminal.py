"""What is printed of others' text on a terminal: nothing it can act on, one line."""

from __future__ import annotations

import pytest

from adapters.ops.terminal import one_line, safe

pytestmark = pytest.mark.fast  # pure functions: in `make check`


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        ("plain id U0ALICE", "plain id U0ALICE"),
        ("a\nb\r\tc", "a\\nb\\r\\tc"),
        ("\x1b[2J\x07\x00\x7f\x85", "\\x1b[2J\\x07\\x00\\x7f\\x85"),
        ("evil\u202etxt.exe\u2066\u200f", "evil\\u202etxt.exe\\u2066\\u200f"),
        ("line\u2028para\u2029", "line\\u2028para\\u2029"),
        ("naïve — ✓ 漢字", "naïve — ✓ 漢字"),
    ],
)
def test_safe_escapes_what_a_terminal_acts_on_and_keeps_the_rest(given: str, shown: str) -> None:
    assert safe(given) == shown
    assert len(safe(given).splitlines()) <= 1


def test_one_line_joins_lines_and_escapes_the_rest() -> None:
    assert one_line("  two\n lines\x1b[H \u202e ") == "two lines\\x1b[H \\u202e"
    assert one_line(42) == "42" and safe(None) == "None"
