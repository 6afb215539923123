"""Text someone else wrote, made safe to print on a terminal. Pure.

Ids, names, arguments and a model's words can hold control characters (an ANSI escape clears
the screen or moves the cursor, a newline starts a line of the writer's choosing) and bidi
overrides (they reorder what follows). Printed through these functions they are shown as
escapes instead, so they can neither act on the terminal nor fake a line or a prompt of ours.
"""

from __future__ import annotations

import unicodedata

_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_ACTED_ON = frozenset(("Cc", "Zl", "Zp"))  # control characters, line and paragraph separators


def safe(text: object) -> str:
    """`text` as one line, every control character, line separator and bidi override in it
    written as an escape (a newline as `\\n`, an escape character as `\\x1b`)."""
    return "".join(_escaped(c) for c in str(text))


def one_line(text: object) -> str:
    """`text` on one line, each run of white space as one space, the rest as `safe` writes it:
    for prose (a model's words, a label), where a line break only separates words."""
    return safe(" ".join(str(text).split()))


def _escaped(char: str) -> str:
    if char not in _BIDI and unicodedata.category(char) not in _ACTED_ON:
        return char
    if char in _SHORT:
        return _SHORT[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
