"""bench/audit_export.py still runs (on 1,000 rows, SQLite only) and prints its figures; the
figures themselves are the benchmark's business, not the tests'."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess  # the benchmark runs as a process

ROOT = Path(__file__).resolve().parents[2]


def test_the_benchmark_runs_small() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HITL_")}
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "audit_export.py"), "--rows", "1000",
         "--seal-rows", "100"],
        capture_output=True, text=True, env={**env, "PYTHONPATH": str(ROOT)}, timeout=300,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("SQLite: 1,000 rows written")
    assert [line.split()[0] for line in lines[1:6]] == ["export", "export", "export", "verify",
                                                        "seal"]  # fmt: skip
    assert "1,000 rows" in lines[4] and "rows/s" in lines[4] and "peak RSS" in lines[4]
    assert lines[-1].startswith("PostgreSQL skipped")
