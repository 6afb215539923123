"""The suite's classification: the markers `make check` leaves out (pyproject.toml registers
them), given here to a test whose fixtures say what it is, and a guard that fails a test which
starts a process without the `subprocess` marker, so no new test slips out of the classes.

- `subprocess`: starts a process (the CLI, a worker, an MCP server over stdio, a browser).
  Marked by hand, module by module (`pytestmark`); the guard finds the ones forgotten.
- `browser`: drives chromium (the `chromium` fixture marks it, and `subprocess` too).
- `postgres`: runs on PostgreSQL (the store's `database[postgres]`, the `postgres` clusters).
- `slow`: a second or more on its own, for a reason the test needs (a deadline it waits out, ten
  thousand rows); marked by hand.
- `fast`: what `make check` runs (with none of the above): every test of the core's parts, here
  by where it is (tests/bot/ but the store's SQL, FAST_TREES), and the adapters' pure functions
  and the checks read from the source, marked by hand (`pytestmark = pytest.mark.fast`).
"""

from __future__ import annotations

import functools
import multiprocessing.process
import multiprocessing.util
import sys
import threading
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import pytest

pytest_plugins = ["pytester"]  # tests/test_markers.py runs the guard on a suite of its own

# A fixture's name that says what every test using it is.
MARKED_BY_FIXTURE = {
    "chromium": ("browser", "subprocess"),  # the browser and its driver run as processes
    "postgres": ("postgres",),  # a cluster on a database of its own (tests/adapters)
}
# Where the core's tests are (fast as a whole), and what of it is not (the store's SQL on a real
# database: migrations, thousands of rows); paths from the repository's root.
FAST_TREES = ("tests/bot/",)
NOT_FAST_TREES = ("tests/bot/store/",)
# A parametrized fixture's value that says it: the store's tests run once per dialect.
MARKED_BY_PARAMETER = {("database", "postgres"): ("postgres",)}

# Audit events (sys.addaudithook) raised when this process starts another; multiprocessing's
# spawn and forkserver raise none, so their starts are reported by `_reported` below.
PROCESS_EVENTS = frozenset({"subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn",
                            "os.spawn", "os.system", "multiprocessing"})  # fmt: skip


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under `-m "fast and ..."` (`make check`), a test module that holds no fast test is not
    imported at all: importing the whole suite (its SDKs, its fakes) costs more than running
    the fast set. A module holds fast tests if it is in a fast tree or says `mark.fast`."""
    if not str(config.getoption("markexpr", "")).startswith("fast"):
        return None
    if collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    if _fast_place(collection_path, config.rootpath):
        return None
    return "pytest.mark.fast" not in collection_path.read_text()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for name in _marks_for(item):
            item.add_marker(name)
        if _fast_place(item.path, config.rootpath):
            item.add_marker("fast")


def _fast_place(path: Path, root: Path) -> bool:
    """Whether `path` is in a fast tree (FAST_TREES), and not in one of its slow parts."""
    try:
        where = path.relative_to(root).as_posix()
    except ValueError:  # a test outside the repository (tests/test_markers.py's own suite)
        return False
    return where.startswith(FAST_TREES) and not where.startswith(NOT_FAST_TREES)


def _marks_for(item: pytest.Item) -> set[str]:
    names = set(getattr(item, "fixturenames", ()))
    marks = {mark for fixture in names for mark in MARKED_BY_FIXTURE.get(fixture, ())}
    callspec = getattr(item, "callspec", None)
    if callspec is not None:
        for (fixture, value), given in MARKED_BY_PARAMETER.items():
            if callspec.params.get(fixture) == value:
                marks.update(given)
    return marks


class Processes:
    """What the running test phase started (an audit hook hears every start in this process,
    whichever thread or library made it: asyncio, subprocess, multiprocessing, os)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._started: list[str] | None = None  # None: no test phase is running

    def hear(self, event: str, args: tuple[Any, ...]) -> None:
        if event in PROCESS_EVENTS and self._started is not None:
            with self._lock:
                self._started.append(_described(event, args))

    def watch(self) -> None:
        with self._lock:
            self._started = []

    def stop(self) -> list[str]:
        with self._lock:
            started, self._started = self._started or [], None
        return started


def _described(event: str, args: tuple[Any, ...]) -> str:
    if event == "subprocess.Popen" and len(args) > 1:
        argv = args[1]
        shown = " ".join(map(str, argv)) if isinstance(argv, list | tuple) else str(argv)
        return f"{event}: {shown[:120]}"
    return event


PROCESSES = Processes()
sys.addaudithook(PROCESSES.hear)

F = Callable[..., Any]


def _reported(start: F) -> F:
    @functools.wraps(start)
    def reporting(*args: Any, **kwargs: Any) -> Any:
        PROCESSES.hear("multiprocessing", ())
        return start(*args, **kwargs)

    return reporting


multiprocessing.process.BaseProcess.start = _reported(  # type: ignore[method-assign]
    multiprocessing.process.BaseProcess.start
)
multiprocessing.util.spawnv_passfds = _reported(multiprocessing.util.spawnv_passfds)


def _guarded(item: pytest.Item) -> Generator[None, object, object]:
    PROCESSES.watch()
    try:
        return (yield)
    finally:
        started = PROCESSES.stop()
        if started and item.get_closest_marker("subprocess") is None:
            pytest.fail(
                f"{item.nodeid} started a process without the `subprocess` marker "
                f"(add `pytestmark = pytest.mark.subprocess` to its module): {started[0]}",
                pytrace=False,
            )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _guarded(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _guarded(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _guarded(item))
