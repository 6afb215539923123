"""Benchmark: how long each command takes to start, beside a bare `python -c pass`.

Run with `.venv/bin/python bench/startup.py [--runs N] [--code DIR ...]`. It prints figures
and asserts nothing. `--code` is a checkout whose code is measured (default: this one), put
first on PYTHONPATH of every command; given twice (`--code ../main --code .`), the two are
measured in turns, so a busy machine's load falls on both alike. Bytecode is written (to a
temporary folder) whatever PYTHONDONTWRITEBYTECODE says, as an installed package has it.

Each figure is the median over N runs, each a fresh process, after one warm-up run:
- `python -c pass`: the interpreter's own start, the reference every ratio is taken against;
- `python -c "import bot"`: the core; `python -c "import httpx, pydantic"`, the client's two
  libraries bare, beside `python -c "import hitl_client"`, the client (target: 0.3 s);
- `python -c "import sqlalchemy.ext.asyncio, pydantic_settings"`: the libraries every command
  that opens the store needs, the floor of the next two;
- `hitl-bridge --help` and `hitl-bridge tokens list` (on a SQLite file upgraded first), and
  `hitl-bridge db upgrade` on that file already at the newest revision (what `make serve`
  pays before every start);
- serve: from starting `hitl-bridge serve` to the first `/readyz` answering 200, on the
  embedded SQLite store with the scripted model, serving Slack (the Web API is FakeSlack in
  this process), then serving Teams without credentials (HITL_TEAMS_ALLOW_UNAUTHENTICATED).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402

from tests.fakes.slack_api import FakeSlack  # noqa: E402

STORE_LIBRARIES = "import sqlalchemy.ext.asyncio, pydantic_settings"
SERVE_TIMEOUT = 600.0  # seconds to ready: a first run compiles every SDK it imports (warm-up)
POLL = 0.005  # seconds between two /readyz polls
# Variables that configure the bridge or the SDKs it uses: none of the caller's reach a command.
FOREIGN = ("HITL_", "SLACK_", "ANTHROPIC_", "TEAMS_")
SDK_VARIABLES = ("CLIENT_ID", "CLIENT_SECRET", "TENANT_ID", "MANAGED_IDENTITY_CLIENT_ID",
                 "CLOUD", "SERVICE_URL", "DANGEROUSLY_ALLOW_UNAUTHENTICATED_REQUESTS")  # fmt: skip

Env = Mapping[str, str]
Measure = Callable[[Env, Path], Awaitable[float]]  # (environment, folder) -> seconds


def command_env(code: Path, folder: Path) -> dict[str, str]:
    """The environment of every measured command: `code` first on the path, a database and
    the bytecode in `folder` (so no checkout is written to)."""
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
    """The console script beside this interpreter (what users run), else `-m
    adapters.cli.command`."""
    script = Path(sys.executable).with_name("hitl-bridge")
    return [str(script)] if script.exists() else [sys.executable, "-m", "adapters.cli.command"]


async def timed_run(argv: list[str], env: Env, folder: Path) -> float:
    """Seconds from starting `argv` to its exit; a failure stops the benchmark."""
    start = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        *argv, env=env, cwd=folder, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, err = await process.communicate()
    elapsed = time.perf_counter() - start
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({process.returncode}):\n{err.decode()}")
    return elapsed


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def timed_serve(env: Env, folder: Path, http: aiohttp.ClientSession) -> float:
    """Seconds from starting `hitl-bridge serve` to its first `/readyz` answering 200."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/readyz"
    serve_env = {**env, "HITL_HOST": "127.0.0.1", "HITL_PORT": str(port), "HITL_MODEL": "scripted"}
    start = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        *hitl_bridge(), "serve", env=serve_env, cwd=folder,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        while not await ready(http, url):
            if process.returncode is not None:
                _, err = await process.communicate()
                raise SystemExit(f"serve exited with {process.returncode}:\n{err.decode()}")
            if time.perf_counter() - start > SERVE_TIMEOUT:
                raise SystemExit(f"serve not ready within {SERVE_TIMEOUT:.0f} s")
            await asyncio.sleep(POLL)
        return time.perf_counter() - start
    finally:
        if process.returncode is None:
            process.terminate()
        await process.communicate()


async def ready(http: aiohttp.ClientSession, url: str) -> bool:
    """Whether `url` answers 200 now (a server still starting refuses or answers 503)."""
    with contextlib.suppress(aiohttp.ClientError, OSError):
        async with http.get(url) as response:
            return response.status == 200
    return False


def figures(slack: FakeSlack, http: aiohttp.ClientSession) -> list[tuple[str, Measure]]:
    python, cli = sys.executable, hitl_bridge()

    def run(*argv: str) -> Measure:
        return lambda env, folder: timed_run(list(argv), env, folder)

    def serve(**settings: str) -> Measure:
        return lambda env, folder: timed_serve({**env, **settings}, folder, http)

    return [
        ("python -c pass", run(python, "-c", "pass")),
        ("python -c 'import bot'", run(python, "-c", "import bot")),
        ("python -c 'import httpx, pydantic'", run(python, "-c", "import httpx, pydantic")),
        ("python -c 'import hitl_client'", run(python, "-c", "import hitl_client")),
        ("hitl-bridge --help", run(*cli, "--help")),
        # The floor of every command that opens the store: its two libraries, bare.
        ("python -c 'import <store libraries>'", run(python, "-c", STORE_LIBRARIES)),
        ("hitl-bridge tokens list", run(*cli, "tokens", "list")),
        ("hitl-bridge db upgrade (at newest)", run(*cli, "db", "upgrade")),
        ("serve Slack until /readyz 200", serve(
            SLACK_BOT_TOKEN=slack.token, SLACK_SIGNING_SECRET="bench-signing-secret",
            SLACK_API_URL=slack.base_url,
        )),
        ("serve Teams until /readyz 200", serve(HITL_TEAMS_ALLOW_UNAUTHENTICATED="1")),
    ]  # fmt: skip


async def medians(runs: int, measures: Mapping[Path, Callable[[], Awaitable[float]]]) -> dict[
    Path, float
]:  # fmt: skip
    """The median of `runs` measures of each checkout, taken in turns after one warm-up each
    (the file system's cache filled, the bytecode written)."""
    samples: dict[Path, list[float]] = {code: [] for code in measures}
    for measure in measures.values():
        await measure()
    for _ in range(runs):
        for code, measure in measures.items():
            samples[code].append(await measure())
    return {code: statistics.median(values) for code, values in samples.items()}


async def upgraded_checkouts(
    codes: list[Path], top: Path
) -> tuple[dict[Path, Path], dict[Path, dict[str, str]]]:
    """Each checkout's folder under `top`, its database upgraded, and its commands' environment."""
    folders = {code: top / str(n) for n, code in enumerate(codes)}
    envs = {code: command_env(code, folders[code]) for code in codes}
    for code in codes:
        folders[code].mkdir()
        await timed_run([*hitl_bridge(), "db", "upgrade"], envs[code], folders[code])
    return folders, envs


async def main(runs: int, codes: list[Path]) -> None:
    top = Path(tempfile.mkdtemp(prefix="hitl-startup-"))
    try:
        folders, envs = await upgraded_checkouts(codes, top)
        print(f"medians over {runs} runs, each a fresh process; x: against python -c pass")
        print(f"{'':<36}" + "".join(f"  {str(code)[-24:]:>24}" for code in codes))
        reference: dict[Path, float] = {}
        async with FakeSlack() as slack, aiohttp.ClientSession() as http:
            for name, measure in figures(slack, http):
                seconds = await medians(runs, {
                    code: _bound(measure, envs[code], folders[code]) for code in codes
                })  # fmt: skip
                for code in codes:
                    reference.setdefault(code, seconds[code])
                print(f"{name:<36}" + "".join(
                    f"  {seconds[code] * 1000:>12.0f} ms {seconds[code] / reference[code]:>6.1f}x"
                    for code in codes
                ), flush=True)  # fmt: skip
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _bound(measure: Measure, env: Env, folder: Path) -> Callable[[], Awaitable[float]]:
    return lambda: measure(env, folder)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=7, help="runs per figure (the median)")
    parser.add_argument("--code", type=Path, action="append",
                        help="a checkout measured (default: this one); given twice, the two "
                             "are measured in turns, so both see the same load")  # fmt: skip
    args = parser.parse_args()
    asyncio.run(main(args.runs, [code.resolve() for code in args.code or [ROOT]]))
