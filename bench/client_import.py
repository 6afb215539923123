"""Benchmark: `import hitl_client` beside `import httpx, pydantic`, the client's two libraries.

Run with `.venv/bin/python bench/client_import.py [--runs N] [--code DIR]`. It prints the
medians and their ratio and asserts nothing (target: the ratio within 1.25). Each run is a
fresh process; the two imports are measured in turns, after one warm-up of each, so a busy
machine's load falls on both alike. `--code` is a checkout whose client is measured (default:
this one; its clients/python goes first on PYTHONPATH). Bytecode is written to a temporary
folder, as an installed package has it. A third line, `from hitl_client import HitlClient,
verify_webhook`, is what a program using the client pays once it touches it.
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


def timed(code: str, env: dict[str, str]) -> float:
    """Seconds of one fresh `python -c code`, start to exit; a failure stops the benchmark."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21, help="fresh processes of each import")
    parser.add_argument("--code", type=Path, default=ROOT, help="the checkout measured")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = folder
        env["PYTHONPATH"] = str(args.code.resolve() / "clients" / "python")
        lines = (BARE, CLIENT, USED)
        times: dict[str, list[float]] = {line: [] for line in lines}
        for line in lines:
            timed(line, env)  # the warm-up writes the bytecode
        for _ in range(args.runs):
            for line in lines:
                times[line].append(timed(line, env))
    bare = statistics.median(times[BARE])
    print(f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.node()}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f}, Python {platform.python_version()}, "
          f"median of {args.runs} fresh processes each")  # fmt: skip
    for line in lines:
        median = statistics.median(times[line])
        print(f"  {line:<52} {median * 1000:7.1f} ms  {median / bare:5.2f} x")


if __name__ == "__main__":
    main()
