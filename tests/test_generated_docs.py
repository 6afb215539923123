"""The generated parts of the docs are what the code says now: docs/architecture.md's rank table
and module map (tools/docs.py; `make docs` writes them again)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import docs

pytestmark = pytest.mark.fast  # read from the source: in `make check`

RUN = "run `make docs` and commit docs/architecture.md"


def test_the_architecture_page_is_what_the_code_says() -> None:
    text = docs.ARCHITECTURE.read_text()
    assert docs.generated(text) == text, f"docs/architecture.md has drifted from the code: {RUN}"


def test_the_rank_table_follows_the_layer_list() -> None:
    source = docs.LAYERS_SOURCE.read_text()
    table = docs.rank_table(source)
    assert "| 1 | `errors`, `failures`, `words` |" in table
    last = docs.layers(source)[-1]
    assert last == (("bot",), "the package's lazy exports")
    assert f"| {len(docs.layers(source))} | `bot` |" in table


def test_a_layer_added_or_a_module_moved_is_drift() -> None:
    text = docs.ARCHITECTURE.read_text()
    source = docs.LAYERS_SOURCE.read_text()
    more = source.replace('    ("bot",),', '    ("bot.new",),  # a new layer\n    ("bot",),')
    assert "`new` | a new layer |" in docs.rank_table(more)
    moved = text.replace("| `human_input/ledger.py` |", "| `human_input/registry.py` |")
    assert moved != text and docs.generated(moved) == text


def test_every_module_is_in_the_map() -> None:
    text = docs.ARCHITECTURE.read_text()
    for folder, _ in docs.TREES:
        for module in docs.modules(docs.ROOT / folder):
            if module.name != "__init__.py":
                assert f"`{module.name}`" in text or f"/{module.name}`" in text, module


def test_missing_markers_are_one_line() -> None:
    with pytest.raises(ValueError, match="no markers for the generated module map"):
        docs.replace_section("no markers here", "module map", "")


def test_a_long_first_sentence_is_cut_at_a_clause(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('"""One: ' + "word, " * 40 + 'end. Two."""\n')
    said = docs.summary(module)
    assert said.endswith(" …") and len(said) <= docs.LONGEST + 2
    module.write_text('"""The store (bot.store.SqlStore has it). Then more."""\n')
    assert docs.summary(module) == "The store (bot.store.SqlStore has it)"


def test_a_folder_that_is_no_package_is_left_out(tmp_path: Path) -> None:
    (tmp_path / "sub" / "versions").mkdir(parents=True)
    for name in ("__init__.py", "a.py", "sub/__init__.py", "sub/b.py", "sub/versions/0001.py"):
        (tmp_path / name).write_text('"""A module."""\n')
    shown = [p.relative_to(tmp_path).as_posix() for p in docs.modules(tmp_path)]
    assert shown == ["__init__.py", "a.py", "sub/__init__.py", "sub/b.py"]
