"""Text the model or a client wrote, made fit for a person to read. Pure.

What someone else wrote reaches Slack, Teams and the console (the log lines escape it in their
formatter). Two kinds of character in it act on the reader instead of being read:

- control characters (C0 but newline and tab, DEL, C1): an ANSI escape recolours or clears a
  terminal, NUL and BEL do nothing visible or something unwanted. They are removed.
- bidi overrides, embeddings and isolates (U+202A to U+202E, U+2066 to U+2069): they reorder what
  follows, so "approve ⟨RLO⟩txt.exe" reads as another file name than the one run. They are
  shown as a visible marker (`⟦U+202E⟧`): the person sees that something was there.

The bidi *marks* (U+200E, U+200F, U+061C) stay: right-to-left text needs them, and they only
set the direction of neutral characters (punctuation, spaces), never reorder letters or digits.
Lone surrogates (a JSON `\\ud800`), which no encoder takes, become U+FFFD.

`visible_values` applies this to every string (keys too) of a request's arguments: it is called
once, where every request is created (bot/human_input/creator.py), whichever door or loop asked.
"""

from __future__ import annotations

import re
from typing import Any

_REMOVED = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # C0 but \t and \n, DEL, C1
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _marker(match: re.Match[str]) -> str:
    return f"⟦U+{ord(match.group()):04X}⟧"


def visible(text: str) -> str:
    """`text` with control characters removed and bidi controls shown as markers (`text`
    itself when nothing changes)."""
    if text.isprintable() or not text:  # the common case: nothing to do (\n, \t are not)
        return text
    shown = _BIDI.sub(_marker, _REMOVED.sub("", _SURROGATE.sub("\ufffd", text)))
    return text if shown == text else shown


def visible_values(value: Any) -> Any:
    """`value` (JSON: objects, arrays, strings, numbers) with every string, keys too, `visible`;
    `value` itself when nothing in it changes (checked first: a request's arguments are almost
    always clean, and their copy was a quarter of what a request kept, human_input_bench.py)."""
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, dict):
        for k, v in value.items():
            # A printable str needs nothing (the usual key and value): no call for it.
            if not (k.__class__ is str and k.isprintable()) and visible_values(k) is not k:
                break
            if not (v.__class__ is str and v.isprintable()) and visible_values(v) is not v:
                break
        else:
            return value
        return {visible_values(k): visible_values(v) for k, v in value.items()}
    if isinstance(value, list):
        for item in value:
            if visible_values(item) is not item:
                return [visible_values(item) for item in value]
        return value
    return value
