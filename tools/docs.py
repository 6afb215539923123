"""The parts of docs/architecture.md the code says: the core's rank table (the layer list of
tests/test_layers.py, with each line's comment) and the module map (every package and module
of the server and its Python client, with its docstring's first sentence).

`make docs` (python -m tools.docs) writes them between their marker comments;
tests/test_generated_docs.py fails when the page differs from what this would write. Nothing
here names a module: move one, and `make docs` follows it.
"""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
LAYERS_SOURCE = ROOT / "tests" / "test_layers.py"
# The trees the module map lists, each with the sentence its heading says.
TREES = (
    ("bot", "the core, its packages in rank order (it knows no chat platform)"),
    ("adapters", "the surfaces and the doors, and what composes them into `hitl-bridge`"),
    ("clients/python/hitl_client", "the HTTP API's Python client (nothing of the server)"),
)
LONGEST = 140  # characters of a description; a longer first sentence is cut at a clause


def section(name: str, body: str) -> str:
    """`body` between the markers named `name`."""
    return f"<!-- generated: {name} (make docs) -->\n{body}<!-- end: {name} -->"


def replace_section(text: str, name: str, body: str) -> str:
    """`text` with the section `name` holding `body`; ValueError if its markers are missing."""
    pattern = re.compile(
        rf"<!-- generated: {re.escape(name)} \(make docs\) -->\n.*?<!-- end: {re.escape(name)} -->",
        re.DOTALL,
    )
    if not pattern.search(text):
        raise ValueError(f"docs/architecture.md has no markers for the generated {name}")
    return pattern.sub(lambda _: section(name, body), text, count=1)


# -- the rank table -------------------------------------------------------------------------


def layers(source: str) -> list[tuple[tuple[str, ...], str]]:
    """The `LAYERS` list of `source`, lowest first: each line's units and its comment."""
    comments = {
        token.start[0]: token.string.lstrip("# ").strip()
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
    }
    for node in ast.parse(source).body:
        if isinstance(node, ast.AnnAssign | ast.Assign):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            if any(isinstance(t, ast.Name) and t.id == "LAYERS" for t in targets):
                assert isinstance(node.value, ast.List)
                return [
                    (ast.literal_eval(item), comments.get(item.end_lineno or 0, ""))
                    for item in node.value.elts
                ]
    raise ValueError("tests/test_layers.py declares no LAYERS")


def rank_table(source: str) -> str:
    rows = ["| rank | packages | |", "|---|---|---|"]
    for rank, (units, comment) in enumerate(layers(source), 1):
        names = ", ".join(f"`{unit.removeprefix('bot.')}`" for unit in units)
        rows.append(f"| {rank} | {names} | {comment} |")
    return "\n".join(rows) + "\n"


# -- the module map -------------------------------------------------------------------------


def summary(path: Path) -> str:
    """A module's docstring's first sentence, one line, cut at a clause if long."""
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    paragraph = " ".join(doc.split("\n\n")[0].split())
    # A sentence ends at a stop before a capital (not at `bot.store.` wrapped, nor `...`).
    sentence = re.split(r"(?<=[^.][.!?])\s+(?=[A-Z`\"])", paragraph)[0].removesuffix(".")
    if len(sentence) > LONGEST:
        cut = max(sentence.rfind(mark, 0, LONGEST) for mark in (": ", "; ", ", ", " ("))
        sentence = sentence[: cut if cut > 40 else LONGEST].rstrip() + " …"
    return sentence.replace("|", "\\|") or "—"


def modules(package: Path) -> list[Path]:
    """The package's modules, its subpackages' included; not the scripts in a folder that is
    no package (Alembic's migration versions, a template's)."""
    return sorted(
        module
        for module in package.rglob("*.py")
        if all((folder / "__init__.py").is_file() for folder in _folders(module, package))
    )


def _folders(module: Path, package: Path) -> list[Path]:
    return [module.parents[n] for n in range(len(module.relative_to(package).parts) - 1)]


def _ranked(packages: list[Path], tree: Path, ranks: dict[str, int]) -> list[Path]:
    """The core's packages in rank order (the rank of `bot.x` for bot/x), the rest by name."""

    def key(package: Path) -> tuple[int, str]:
        unit = ".".join(package.relative_to(tree.parent).parts[:2])
        return ranks.get(unit, len(ranks)), package.as_posix()

    return sorted(packages, key=key)


def _entries(tree: Path, ranks: dict[str, int]) -> Iterator[tuple[str, Path]]:
    """(name shown, file) for the tree's own modules, then each package and its modules."""
    for module in sorted(tree.glob("*.py")):
        if module.name != "__init__.py":
            yield f"`{module.name}`", module
    packages = [p for p in tree.iterdir() if (p / "__init__.py").is_file()]
    for package in _ranked(packages, tree, ranks):
        yield f"**`{package.name}/`**", package / "__init__.py"
        for module in modules(package):
            if module.name != "__init__.py" or module.parent != package:
                shown = module.relative_to(package).as_posix().removesuffix("/__init__.py")
                yield f"`{package.name}/{shown}`", module


def module_map(source: str) -> str:
    ranks = {unit: rank for rank, (units, _) in enumerate(layers(source)) for unit in units}
    parts = []
    for folder, what in TREES:
        tree = ROOT / folder
        said = summary(tree / "__init__.py")
        parts.append(f"`{folder}/`: {what}." + (f" {said}." if said != "—" else ""))
        parts.append("")
        parts.append("| module | what it is |\n|---|---|")
        parts += [f"| {name} | {summary(path)} |" for name, path in _entries(tree, ranks)]
        parts.append("")
    return "\n".join(parts)


def generated(text: str) -> str:
    """docs/architecture.md's `text` with its generated sections as the code says them now."""
    source = LAYERS_SOURCE.read_text()
    text = replace_section(text, "rank table", rank_table(source))
    return replace_section(text, "module map", module_map(source))


def main() -> int:
    text = ARCHITECTURE.read_text()
    new = generated(text)
    if new != text:
        ARCHITECTURE.write_text(new)
        print(f"{ARCHITECTURE.relative_to(ROOT)}: the rank table and the module map written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
