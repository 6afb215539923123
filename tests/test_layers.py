"""The core's packages in ranks (docs/architecture.md): a module imports only from its own
package or from a package ranked below it, at module level, inside a function or under
`TYPE_CHECKING` alike, so the core has no import cycle, hidden or not; and no two modules of
one package import each other round."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast  # read from the source: in `make check`

ROOT = Path(__file__).resolve().parents[1]

# Lowest first. A unit imports only units on earlier lines; units on one line not each other.
LAYERS: list[tuple[str, ...]] = [
    ("bot.errors", "bot.failures", "bot.words"),  # leaves: import nothing of the project
    ("bot.records",),  # the request record and the store's records
    ("bot.config", "bot.tools"),  # the operator's files; the tool contract and call context
    ("bot.human_input",),  # the primitive
    ("bot.human_tools",),  # the tools that ask a person, their models and forms
    ("bot.gates", "bot.audit"),  # approval gates; the audit log
    ("bot.doors",),  # requests from outside the agent loop
    ("bot.policies",),  # who may answer, where a request is shown
    ("bot.requests",),  # the view, the wording, the router
    ("bot.durable", "bot.commands"),  # what survives a worker; the `hitl` commands
    ("bot.reports",),  # what admins and people read
    ("bot.store", "bot.tool_sources"),  # SQL; MCP servers and Python callables
    ("bot.agent",),  # the tool loop and the model
    ("bot.bridge",),  # the composition root
    ("bot",),  # the package's lazy exports
]
RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


MODULES = {_module_name(p): p for p in sorted((ROOT / "bot").rglob("*.py"))}


def unit_of(module: str) -> str:
    """The ranked unit a module belongs to: its package under bot/, or itself if loose."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else module


def imported(source: str) -> Iterator[str]:
    """Every module of the core `source` imports, wherever the import statement is.
    `from package import module` names the module, not the package."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name in MODULES)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            submodules = [f"{node.module}.{a.name}" for a in node.names]
            named = [m for m in submodules if m in MODULES]
            if named:
                yield from named
            if len(named) < len(submodules) and node.module in MODULES:
                yield node.module


def test_every_unit_of_the_core_has_a_rank() -> None:
    assert sorted({unit_of(m) for m in MODULES} - set(RANK)) == []


@pytest.mark.parametrize("module", sorted(MODULES), ids=str)
def test_a_module_imports_only_lower_ranks(module: str) -> None:
    unit = unit_of(module)
    against = sorted(
        f"{module} imports {target} ({unit_of(target)} is not below {unit})"
        for target in set(imported(MODULES[module].read_text()))
        if unit_of(target) != unit and RANK[unit_of(target)] >= RANK[unit]
    )
    assert against == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_modules_import_each_other_round() -> None:
    graph = {m: set(imported(p.read_text())) - {m} for m, p in MODULES.items()}
    assert _cycles(graph) == []


def test_a_hidden_cycle_is_found() -> None:
    """The checks see what a `TYPE_CHECKING` block or a function imports."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from bot.bridge.root import Bridge\n"
        "def later():\n    from bot.agent.channel import AIChannel\n"
    )
    assert list(imported(source)) == ["bot.bridge.root", "bot.agent.channel"]
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]
