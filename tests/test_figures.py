"""docs/figures.md in its format (its top says it): each figure with its command, date and machine,
either a row of a six-column table or a block tools/figures.py writes."""

from __future__ import annotations

import re

import pytest

from tools import figures

pytestmark = pytest.mark.fast  # read from the source: in `make check`

TEXT = figures.FIGURES.read_text()
HEADER = "| what | figure | target | command | date | machine |"
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
TABLE = re.compile(r"((?:^\|.*\|\n)+)", re.MULTILINE)


def cells(row: str) -> list[str]:
    return [cell.strip() for cell in row.strip().strip("|").split("|")]


def rows() -> list[list[str]]:
    """The rows of every six-column table."""
    tables = [m[1].splitlines() for m in TABLE.finditer(TEXT) if m[1].startswith(HEADER)]
    return [cells(row) for table in tables for row in table[2:]]


def test_every_row_has_its_command_date_and_machine() -> None:
    assert len(rows()) >= 30
    for row in rows():
        assert len(row) == 6, row[0]
        what, _, _, command, date, machine = row
        assert command.startswith("`") or command.startswith("none kept"), what
        assert DATE.fullmatch(date), what
        assert "cores" in machine, what


def test_a_row_names_a_bench_that_exists() -> None:
    for row in rows():
        for script in re.findall(r"bench/\w+\.py", row[3]):
            assert (figures.ROOT / script).is_file(), script


def test_every_other_table_says_its_command_date_and_machine_before_it() -> None:
    """A table of another shape is preceded by prose naming its bench, date and machine."""
    for match in TABLE.finditer(TEXT):
        if match[1].startswith(HEADER):
            continue
        before = TEXT[: match.start()].rsplit("\n## ", 1)[-1]
        assert re.search(r"bench/\w+\.py|make \w+", before), match[1][:60]
        assert DATE.search(before) and "core" in before, match[1][:60]


def test_the_blocks_are_named_once_and_carry_their_run() -> None:
    blocks = list(figures.BLOCK.finditer(TEXT))
    names = [block["name"] for block in blocks]
    assert len(names) == len(set(names))
    for block in blocks:
        if block["body"] == figures.UNMEASURED:  # added, its first run to come
            continue
        said = block["body"].split("\n", 1)[0]
        assert said.startswith(f"`{block['command']}` · "), block["name"]
        assert DATE.search(said) and "cores" in said and "wall time" in said, block["name"]


def test_a_run_is_written_into_its_block_only() -> None:
    text = (
        "<!-- figure: a\ncommand: echo a\n-->\nold a\n<!-- end figure: a -->\n"
        "<!-- figure: b\ncommand: echo b\n-->\nold b\n<!-- end figure: b -->\n"
    )
    run = figures.Run("a 1 ms\n", "2026-12-07", "2 cores (x), load 0.5 before the run", 3.2)
    new = figures.written(text, figures.Figure("a", "echo a"), run)
    assert "old b" in new and "old a" not in new
    assert "`echo a` · 2026-12-07 · 2 cores (x), load 0.5 before the run · 3 s wall time" in new
    assert "```text\na 1 ms\n```" in new
    assert [f.name for f in figures.figures(new)] == ["a", "b"]


def test_an_unknown_figure_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert figures.main(["no-such-figure"]) == 2
    assert capsys.readouterr().err == "docs/figures.md has no figure named no-such-figure\n"


def test_the_list_runs_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert figures.main(["--list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed == [f"{f.name}: {f.command}" for f in figures.figures(TEXT)]


def test_the_output_is_kept_without_progress_or_local_paths() -> None:
    printed = f"{figures.ROOT}/bench/x.py ran\n.....s..F [ 42%]\n..... [100%]\n3 passed in 1.0s\n"
    assert figures.tidy(printed) == "bench/x.py ran\n3 passed in 1.0s"
