"""Phrases: the sentences people read, as templates each surface formats its own way.

A `Phrase`'s people and moments are written by the surface (a Slack mention and `<!date>`, a
Teams name and UTC time, plain text in a terminal), so the words are the same everywhere and
only the names and dates look native. Pure: no I/O, nothing of the project imported.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from string import ascii_lowercase
from typing import Protocol

_PLACEHOLDER = re.compile(r"(\{[a-z_]+\})")


class Formatter(Protocol):
    """How a surface writes the parts of a phrase."""

    def text(self, literal: str) -> str:
        """The phrase's own words, escaped for the surface's markup."""
        ...

    def person(self, user_id: str) -> str: ...

    def moment(self, when: datetime) -> str: ...


class PlainFormatter:
    """Plain text: ids as they are, UTC times (the console, logs, tests)."""

    def text(self, literal: str) -> str:
        return literal

    def person(self, user_id: str) -> str:
        return user_id

    def moment(self, when: datetime) -> str:
        return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


@dataclass(frozen=True, slots=True)
class Phrase:
    """A template whose `{name}` placeholders are people, moments or values (text someone
    chose, never read as a template itself)."""

    template: str
    people: Mapping[str, str] = field(default_factory=dict)
    moments: Mapping[str, datetime] = field(default_factory=dict)
    values: Mapping[str, str] = field(default_factory=dict)

    def render(self, fmt: Formatter) -> str:
        out: list[str] = []
        for part in _PLACEHOLDER.split(self.template):
            key = part[1:-1] if _PLACEHOLDER.fullmatch(part) else None
            if key is not None and key in self.people:
                out.append(fmt.person(self.people[key]))
            elif key is not None and key in self.moments:
                out.append(fmt.moment(self.moments[key]))
            elif key is not None and key in self.values:
                out.append(fmt.text(self.values[key]))
            elif part:
                out.append(fmt.text(part))
        return "".join(out)

    @property
    def plain(self) -> str:
        return self.render(PlainFormatter())


def placeholders(stem: str) -> Iterator[str]:
    """`{stem}_a`, …, `{stem}_z`, `{stem}_aa`, …: names for people in a phrase (a
    placeholder is letters and underscores only)."""
    size = 1
    while True:
        for n in range(len(ascii_lowercase) ** size):
            letters = ""
            for _ in range(size):
                n, letter = divmod(n, len(ascii_lowercase))
                letters = ascii_lowercase[letter] + letters
            yield f"{stem}_{letters}"
        size += 1


def listed(names: Sequence[str]) -> str:
    """Names as a sentence lists them: `A`, `A and B`, `A, B and C`."""
    if len(names) <= 1:
        return "".join(names)
    return f"{', '.join(names[:-1])} and {names[-1]}"


def duration(seconds: float) -> str:
    """A wait as people say it: `45 s`, `15 min`, `1 h 30 min` (under a minute to a tenth)."""
    if seconds < 60:
        return f"{round(seconds, 1):g} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h" + (f" {minutes} min" if minutes else "")


def joined(first: Phrase, second: Phrase, separator: str = " ") -> Phrase:
    """Two phrases as one (their placeholders' names must differ)."""
    return Phrase(
        first.template + separator + second.template,
        {**first.people, **second.people},
        {**first.moments, **second.moments},
        {**first.values, **second.values},
    )
