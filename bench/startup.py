"""Benchmark: how long each command takes to start, beside a bare `python -c pass`.

Run with `.venv/bin/python bench/startup.py [--runs N] [--code DIR ...]`. It prints figures
and asserts nothing. `--code` is a checkout whose code is measured (default: this one), put
first on PYTHONPATH of every command; given twice (`--code ../main --code .`), the two are
measured in turns, so a busy machine's load falls on both alike.

Each figure is the median over N runs, each a fresh process, of:
- `python -c pass`: the interpreter's own start, the reference every ratio is taken against;
- `python -c "import bot"` and `python -c "import bot.client"`: the core and its client;
- `hitl-bridge --help` and `hitl-bridge tokens list` (on a SQLite file upgraded first), and
  `hitl-bridge db upgrade` on that file already at the newest revision (what `make serve`
  pays before every start);
- serve: from starting `hitl-bridge serve` to the first `/readyz` answering 200, with the least
  configuration that starts it: the embedded SQLite store, the scripted model and Teams
  without credentials (HITL_TEAMS_ALLOW_UNAUTHENTICATED: no token, no network needed).
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SERVE_TIMEOUT = 60.0  # seconds a serve may take to be ready before the run fails
POLL = 0.005  # seconds between two /readyz polls
# Variables that configure the bridge or the SDKs it uses: none of the caller's reach a command.
FOREIGN = ("HITL_", "SLACK_", "ANTHROPIC_", "TEAMS_")
SDK_VARIABLES = ("CLIENT_ID", "CLIENT_SECRET", "TENANT_ID", "MANAGED_IDENTITY_CLIENT_ID",
                 "CLOUD", "SERVICE_URL", "DANGEROUSLY_ALLOW_UNAUTHENTICATED_REQUESTS")  # fmt: skip


def command_env(code: Path, folder: Path) -> dict[str, str]:
    """The environment of every measured command: `code` first on the path, a database in
    `folder`, and compiled bytecode kept (in `folder`, so no checkout is written to) as an
    installed package keeps it, whatever PYTHONDONTWRITEBYTECODE the caller has."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(FOREIGN) and key not in SDK_VARIABLES
    }
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(folder / "pycache")
    env["PYTHONPATH"] = str(code)
    env["HITL_DATABASE_URL"] = f"sqlite+aiosqlite:///{folder / 'bench.db'}"
    return env


def hitl_bridge() -> list[str]:
    """The console script beside this interpreter (what users run), else `-m adapters.cli`."""
    script = Path(sys.executable).with_name("hitl-bridge")
    return [str(script)] if script.exists() else [sys.executable, "-m", "adapters.cli"]


def timed_run(argv: list[str], env: Mapping[str, str], cwd: Path) -> float:
    """Seconds from starting `argv` to its exit; a failure stops the benchmark."""
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr}")
    return elapsed


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:  # our own http://
            return bool(response.status == 200)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def timed_serve(env: Mapping[str, str], cwd: Path) -> float:
    """Seconds from starting `hitl-bridge serve` to its first `/readyz` answering 200."""
    port = free_port()
    serve_env = {**env, "HITL_HOST": "127.0.0.1", "HITL_PORT": str(port),
                 "HITL_MODEL": "scripted", "HITL_TEAMS_ALLOW_UNAUTHENTICATED": "1"}  # fmt: skip
    url = f"http://127.0.0.1:{port}/readyz"
    start = time.perf_counter()
    process = subprocess.Popen(
        [*hitl_bridge(), "serve"], env=serve_env, cwd=cwd,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        while not ready(url):
            if process.poll() is not None:
                _, log = process.communicate()
                raise SystemExit(f"serve exited with {process.returncode}:\n{log}")
            if time.perf_counter() - start > SERVE_TIMEOUT:
                raise SystemExit(f"serve not ready within {SERVE_TIMEOUT:.0f} s")
            time.sleep(POLL)
        return time.perf_counter() - start
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.communicate(timeout=SERVE_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()


Measure = Callable[[Mapping[str, str], Path], float]  # (environment, folder) -> seconds


def figures() -> list[tuple[str, Measure]]:
    python, cli = sys.executable, hitl_bridge()

    def run(*argv: str) -> Measure:
        return lambda env, folder: timed_run(list(argv), env, folder)

    return [
        ("python -c pass", run(python, "-c", "pass")),
        ("python -c 'import bot'", run(python, "-c", "import bot")),
        ("python -c 'import bot.client'", run(python, "-c", "import bot.client")),
        ("hitl-bridge --help", run(*cli, "--help")),
        ("hitl-bridge tokens list", run(*cli, "tokens", "list")),
        ("hitl-bridge db upgrade (at newest)", run(*cli, "db", "upgrade")),
        ("serve until /readyz 200", timed_serve),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=7, help="runs per figure (the median)")
    parser.add_argument("--code", type=Path, action="append",
                        help="a checkout measured (default: this one); given twice, the two "
                             "are measured in turns, so both see the same load")  # fmt: skip
    args = parser.parse_args()
    codes: list[Path] = [code.resolve() for code in args.code or [ROOT]]
    top = Path(tempfile.mkdtemp(prefix="hitl-startup-"))
    try:
        folders = {code: top / str(n) for n, code in enumerate(codes)}
        envs = {code: command_env(code, folders[code]) for code in codes}
        for code in codes:
            folders[code].mkdir()
            timed_run([*hitl_bridge(), "db", "upgrade"], envs[code], folders[code])
        print(f"medians over {args.runs} runs, each a fresh process; x: against python -c pass")
        print(f"{'':<36}" + "".join(f"  {str(code)[-24:]:>24}" for code in codes))
        reference: dict[Path, float] = {}
        for name, measure in figures():
            seconds = medians(args.runs, {
                code: functools.partial(measure, envs[code], folders[code]) for code in codes
            })  # fmt: skip
            for code in codes:
                reference.setdefault(code, seconds[code])
            print(f"{name:<36}" + "".join(
                f"  {seconds[code] * 1000:>12.0f} ms {seconds[code] / reference[code]:>6.1f}x"
                for code in codes
            ))  # fmt: skip
    finally:
        shutil.rmtree(top, ignore_errors=True)


def medians(runs: int, measures: Mapping[Path, Callable[[], float]]) -> dict[Path, float]:
    """The median of `runs` measures of each checkout, taken in turns after one warm-up each
    (the file system's cache filled, the bytecode written)."""
    samples: dict[Path, list[float]] = {code: [] for code in measures}
    for measure in measures.values():
        measure()
    for _ in range(runs):
        for code, measure in measures.items():
            samples[code].append(measure())
    return {code: statistics.median(values) for code, values in samples.items()}


if __name__ == "__main__":
    main()
