"""The markers' guard (tests/conftest.py) on a suite of its own: a test that starts a process
without the `subprocess` marker fails, whichever way it starts it (asyncio, subprocess, each of
multiprocessing's methods, os, in a fixture); marked, or starting nothing, a test passes."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess  # the suite under test runs in a pytest process of its own

TESTS = Path(__file__).resolve().parent
PROBE = """
import asyncio, multiprocessing, os, subprocess, pytest

def test_subprocess_run():
    subprocess.run(["true"], check=True)

async def test_asyncio():
    process = await asyncio.create_subprocess_exec("true")
    assert await process.wait() == 0

@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_multiprocessing(method):
    process = multiprocessing.get_context(method).Process(target=os.getpid)
    process.start()
    process.join()

def test_os_system():
    assert os.system("true") == 0

@pytest.fixture
def started():
    subprocess.run(["true"], check=True)

def test_in_a_fixture(started):
    pass

@pytest.mark.subprocess
def test_marked():
    subprocess.run(["true"], check=True)

def test_nothing_started():
    pass
"""


def test_a_process_started_without_the_marker_fails_its_test(pytester: pytest.Pytester) -> None:
    options = tomllib.loads((TESTS.parent / "pyproject.toml").read_text())["tool"]["pytest"]
    markers = "\n".join(f"    {line}" for line in options["ini_options"]["markers"])
    pytester.makeini(f"[pytest]\nasyncio_mode = auto\naddopts = --strict-markers\n"
                     f"markers =\n{markers}\n")  # fmt: skip
    pytester.makeconftest((TESTS / "conftest.py").read_text())
    pytester.makepyfile(test_probe=PROBE)
    result = pytester.runpytest_subprocess("-p", "no:langsmith_plugin")
    result.assert_outcomes(passed=2, failed=6, errors=1)
    unmarked = "*started a process without the `subprocess` marker*"
    for name in ("test_subprocess_run", "test_asyncio", "test_multiprocessing[[]spawn[]]",
                 "test_os_system", "test_in_a_fixture"):  # fmt: skip
        result.stdout.fnmatch_lines([f"*test_probe.py::{name} {unmarked[1:]}"])
