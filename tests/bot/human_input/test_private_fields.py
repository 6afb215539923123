"""Request state has one owner: no module of the primitive reaches into another object's
private field (`x._name` where x is not `self` or `cls`). The handler's own state of a request
is its ledger entry's (bot/human_input/ledger.py), never the record's others read."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[3] / "bot" / "human_input"


def foreign_private_reads(source: str) -> list[str]:
    """Each `x._name` in `source` where x is not `self`/`cls` (dunders are the language's)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_"):
            continue
        if node.attr.startswith("__") and node.attr.endswith("__"):
            continue
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            continue
        found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_the_scan_finds_a_private_field_reached_into() -> None:
    source = "def f(request, waiter):\n    request._flags |= 1\n    waiter._wake()\n"
    assert foreign_private_reads(source) == ["2: request._flags", "3: waiter._wake"]
    assert foreign_private_reads("class A:\n    def f(self):\n        self._x = 1\n") == []


def test_no_module_touches_another_object_s_private_field() -> None:
    offences = {
        path.name: reads
        for path in sorted(PACKAGE.glob("*.py"))
        if (reads := foreign_private_reads(path.read_text()))
    }
    assert offences == {}
