"""No test waits a fixed time of 0.1 s or more: a test waits on the event it expects (the update,
the row, the cancellation), so it is as fast as the code and never flaky on a loaded machine.

Read from the source: every `sleep(...)` call in tests/ (asyncio's, time's, anyio's, a fake's)
whose duration is a number, or an expression of numbers and the module's own constants.
A sleep whose duration is only known at run time (a fake's configured delay) is not read.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Iterator
from fnmatch import fnmatch
from functools import cache
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast  # read from the source: in `make check`

ROOT = Path(__file__).resolve().parents[1]
LONGEST = 0.1  # seconds: a sleep this long or longer is a fixed wait
# The fixed waits allowed, by file (a glob) and function: each for a reason no event can
# stand in for.
ALLOWED = {
    # The sleep is the hang under test, not a wait: a body that never ends, cancelled by the test.
    ("tests/adapters/doors/mcp/test_*.py", "stalled"),
    # A poll of the file system, bounded by WAIT: the browser tells no event of a download.
    ("tests/adapters/doors/admin/test_console_browser.py", "waited"),
    # The clock is what is tested: a person slower than the server's whole budget for a call,
    # a worker's hold lapsing (its module is `slow`, outside `make check`).
    ("tests/bot/tool_sources/test_elicitation.py", "slowly"),
    (
        "tests/bot/store/test_two_workers.py",
        "test_an_answer_heard_before_its_write_returns_is_still_told_once",
    ),
    (
        "tests/bot/store/test_two_workers.py",
        "test_an_expiry_heard_before_its_write_returns_is_still_told_once",
    ),
    # Nothing more happens, after the event it follows was awaited: an absence (no second POST
    # of a push notification, a replay setting nothing off, no step fired twice, no query from
    # a scheduler asleep), which no event marks.
    ("tests/adapters/doors/a2a/test_push.py", "one"),
    ("tests/adapters/surfaces/slack/test_replays.py", "test_a_replayed_click_is_processed_once"),
    (
        "tests/adapters/surfaces/slack/test_replays.py",
        "test_a_replayed_refusal_is_said_and_audited_once",
    ),
    ("tests/bot/store/test_escalations.py", "test_two_workers_fire_each_step_once"),
    ("tests/bot/durable/test_sweep.py", "quiet"),
}
OPERATORS: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}


def constants(tree: ast.Module) -> dict[str, float]:
    """The module's names bound once, at its top, to a number."""
    found: dict[str, float] = {}
    for node in tree.body:
        target: ast.expr | None = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and isinstance(value, ast.expr):
            number = seconds(value, found)
            if number is not None:
                found[target.id] = number
    return found


def seconds(node: ast.expr, names: dict[str, float]) -> float | None:
    """The value of `node` if it is a number, a known name or arithmetic of those."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return float(node.value)
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
        left, right = seconds(node.left, names), seconds(node.right, names)
        if left is None or right is None or (right == 0 and isinstance(node.op, ast.Div)):
            return None
        return OPERATORS[type(node.op)](left, right)
    return None


def sleeps(path: Path) -> Iterator[tuple[str, int, float]]:
    """(function, line, seconds) of each sleep in `path` whose duration is known, named by the
    innermost function it is in."""
    tree = ast.parse(path.read_text())
    names = constants(tree)

    def visit(node: ast.AST, function: str) -> Iterator[tuple[str, int, float]]:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            function = node.name
        if isinstance(node, ast.Call) and node.args and _called(node) == "sleep":
            duration = seconds(node.args[0], names)
            if duration is not None:
                yield function, node.lineno, round(duration, 6)
        for child in ast.iter_child_nodes(node):
            yield from visit(child, function)

    yield from visit(tree, "<module>")


def _called(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return call.func.id if isinstance(call.func, ast.Name) else None


@cache
def every_sleep() -> list[tuple[str, str, int, float]]:
    """(file, function, line, seconds) of every sleep in tests/ whose duration is known."""
    return [
        (path.relative_to(ROOT).as_posix(), *found)
        for path in sorted((ROOT / "tests").rglob("*.py"))
        if "sleep(" in path.read_text()  # parsed only if it may sleep: the scan stays cheap
        for found in sleeps(path)
    ]


def allowed(relative: str, function: str) -> bool:
    return any(fnmatch(relative, path) and function == name for path, name in ALLOWED)


def fixed_waits() -> list[str]:
    return sorted(
        f"{relative}:{line} ({function}): sleeps {duration:g} s"
        for relative, function, line, duration in every_sleep()
        if duration >= LONGEST and not allowed(relative, function)
    )


def test_no_test_waits_a_fixed_time() -> None:
    assert fixed_waits() == [], "wait on the event instead (an asyncio.Event, a queue, a row)"


def test_the_allowed_waits_are_still_there() -> None:
    """An allowance that no longer matches a sleep is removed, so the list stays short."""
    present = [(path, name) for path, name, _, seconds in every_sleep() if seconds >= LONGEST]
    unused = [
        (pattern, function)
        for pattern, function in ALLOWED
        if not any(fnmatch(path, pattern) and name == function for path, name in present)
    ]
    assert sorted(unused) == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("async def f():\n    await asyncio.sleep(0.2)\n", [("f", 2, 0.2)]),
        ("import time\ndef f():\n    time.sleep(1)\n", [("f", 3, 1.0)]),
        ("HOLD = 0.4\nasync def f():\n    await sleep(HOLD * 1.5)\n", [("f", 3, 0.6)]),
        ("async def f(d):\n    await asyncio.sleep(d)\n", []),
        ("async def f():\n    await asyncio.sleep(0)\n", [("f", 2, 0.0)]),
    ],
)
def test_the_scan_reads_a_sleep(tmp_path: Path, source: str, expected: list[object]) -> None:
    module = tmp_path / "m.py"
    module.write_text(source)
    assert list(sleeps(module)) == expected
