"""docs/glossary.md stays true: every term it defines is used in the code or the other docs, its
terms are in order, and a term the docs introduce (a lowercase word in italics) is defined there.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast  # read from the source: in `make check`

ROOT = Path(__file__).resolve().parents[1]
GLOSSARY = ROOT / "docs" / "glossary.md"
# Where the terms are used: the code (of the server, its clients, tests, benches, examples) and
# every other document.
SOURCES = ("bot", "adapters", "clients/python", "tests", "bench", "examples")
# Words the docs italicise that are another product's labels, not ours: a control's label or a
# setting's name on a vendor's page (lowercase ones only; the docs capitalise the rest).
NOT_OURS = frozenset({"client secret"})
ROW = re.compile(r"^\| \*\*(?P<term>[^*]+)\*\* \| (?P<what>[^|]+) \| (?P<field>[^|]+) \|$", re.M)
ITALIC = re.compile(r"(?<![*\w])\*(?P<word>[a-z][a-z -]{1,30}[a-z])\*(?![*\w])")


def rows() -> list[re.Match[str]]:
    return list(ROW.finditer(GLOSSARY.read_text()))


def terms() -> list[str]:
    return [row["term"] for row in rows()]


@cache
def corpus() -> str:
    """The code and the docs but the glossary, lowercased, as one text."""
    files = [p for d in SOURCES for p in (ROOT / d).rglob("*.py") if "node_modules" not in p.parts]
    files += [ROOT / "README.md", *(p for p in (ROOT / "docs").glob("*.md") if p != GLOSSARY)]
    return "\n".join(p.read_text() for p in files).lower()


def used(term: str) -> bool:
    """A term is used as a word's start, in any case, its words joined by a space, `_`, `-` or
    nothing (`human tool`: human tools, human_tool, HumanTool)."""
    words = [re.escape(w) for w in term.lower().split()]
    return re.search(r"\b" + "[ _-]?".join(words), corpus()) is not None


def stem(word: str) -> str:
    """A word without its plural or past ending: `holds` is `hold`, `halted` is `halt`."""
    for ending in ("ies", "es", "s", "ed"):
        if word.endswith(ending) and len(word) > len(ending) + 2:
            return word.removesuffix(ending) + ("y" if ending == "ies" else "")
    return word


def test_the_glossary_is_read() -> None:
    assert len(rows()) >= 40
    assert all(row["what"].strip() and row["field"].strip() for row in rows())


def test_every_term_is_used_in_the_code_or_the_docs() -> None:
    assert [term for term in terms() if not used(term)] == []


def test_the_terms_are_in_alphabetical_order_once_each() -> None:
    assert terms() == sorted(set(terms()))


def test_a_term_the_docs_introduce_is_defined() -> None:
    """A lowercase word in italics is a term introduced; it must be a glossary term (or a
    word of the field's beside one)."""
    known = {stem(t) for t in terms()}
    known |= {stem(w) for row in rows() for w in re.findall(r"[a-z]+", row["field"].lower())}
    documents = [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
    introduced = {
        f"{document.name}: {match['word']}"
        for document in documents
        for match in ITALIC.finditer(document.read_text())
        if match["word"] not in NOT_OURS
        and stem(match["word"]) not in known
        and " ".join(map(stem, match["word"].split())) not in known
    }
    assert sorted(introduced) == []


def test_the_checks_see_a_term_unused_and_one_introduced() -> None:
    assert used("human tool") and used("settle") and not used("frob" + "nicator")
    assert [m["word"] for m in ITALIC.finditer("a *frob* and **bold** and *Label*")] == ["frob"]
    assert (stem("holds"), stem("halted"), stem("policies")) == ("hold", "halt", "policy")
