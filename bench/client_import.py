"""Benchmark: `import hitl_client` beside `import httpx, pydantic`, the client's two libraries.

Run with `.venv/bin/python bench/client_import.py [--runs N] [--code DIR]`. It prints the
medians and their ratio and asserts nothing (target: the ratio within 1.25). Each run is a
fresh process; the two imports are measured in turns, after one warm-up of each, so a busy
machine's load falls on both alike. `--code` is a checkout whose client is measured (default:
this one; its clients/python goes first on PYTHONPATH); given twice (`--code ../main --code .`)
the two are measured in turns, the ratios each against its own bare run. Bytecode is written
to a temporary folder, as an installed package has it. A third line, `from hitl_client
import HitlClient, verify_webhook`, is what a program using the client pays once it uses it;
a fourth, httpx, asyncio and pydantic's BaseModel, the floor of that.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BARE = "import httpx, pydantic"
CLIENT = "import hitl_client"
USED = "from hitl_client import HitlClient, verify_webhook"
# The floor of USED: any program with a pydantic model pays for BaseModel's machinery, which
# `import pydantic` alone does not load (its names are imported on first use).
MODELS = "import httpx, asyncio; from pydantic import BaseModel, Field"
LINES = (BARE, CLIENT, USED, MODELS)


def timed(code: str, env: dict[str, str]) -> float:
    """Seconds of one fresh `python -c code`, start to exit; a failure stops the benchmark."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21, help="fresh processes of each import")
    parser.add_argument("--code", type=Path, action="append",
                        help="a checkout measured (default: this one); twice: both")  # fmt: skip
    args = parser.parse_args()
    codes = [code.resolve() for code in args.code or [ROOT]]
    with tempfile.TemporaryDirectory() as folder:
        runs = [(code, line) for code in codes for line in LINES]
        envs = {code: env_of(code, Path(folder) / str(n)) for n, code in enumerate(codes)}
        times: dict[tuple[Path, str], list[float]] = {run: [] for run in runs}
        for code, line in runs:
            timed(line, envs[code])  # the warm-up writes the bytecode
        for _ in range(args.runs):
            for code, line in runs:
                times[code, line].append(timed(line, envs[code]))
    print(f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.node()}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f}, Python {platform.python_version()}, "
          f"median of {args.runs} fresh processes each")  # fmt: skip
    for code in codes:
        bare = statistics.median(times[code, BARE])
        print(code)
        for line in LINES:
            median = statistics.median(times[code, line])
            print(f"  {line:<62} {median * 1000:7.1f} ms  {median / bare:5.2f} x")


def env_of(code: Path, pycache: Path) -> dict[str, str]:
    """The environment of a measured import: `code`'s client first on the path, bytecode in
    `pycache` (so no checkout is written to)."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    env["PYTHONPATH"] = str(code / "clients" / "python")
    return env


if __name__ == "__main__":
    main()
