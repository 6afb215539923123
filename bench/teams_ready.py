"""Benchmark: `hitl-bridge serve` with Teams, from start to `/readyz` 200 (target: 2 s).

Run with `.venv/bin/python bench/teams_ready.py [--runs N] [--code DIR ...]`. It prints
figures and asserts nothing. Each start is a fresh process on an embedded SQLite file upgraded
first, with the scripted model and Teams enabled against the repository's fake Bot Connector
(tests/fakes/bot_connector.py, without credentials: HITL_TEAMS_ALLOW_UNAUTHENTICATED). Once
ready, an admin's `hitl pending` is posted to `/api/messages` and the bot's answer waited for
at the fake: a readiness that came before Teams was in would show as a slow or failed answer.

Figures: the medians over N starts (after one warm-up, which writes the bytecode) of the
time to `/readyz` 200 and of the time from it to Teams' answer. `--code` as in
bench/startup.py: a checkout measured (default: this one); given twice, the two in turns.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402

from bench.startup import (  # noqa: E402
    POLL,
    SERVE_TIMEOUT,
    free_port,
    hitl_bridge,
    ready,
    upgraded_checkouts,
)
from tests.adapters.surfaces.teams.conftest import ADMIN, message_activity  # noqa: E402
from tests.fakes.bot_connector import FakeBotConnector  # noqa: E402

ANSWER_TIMEOUT = 60.0  # seconds from ready to Teams' answer; past it the start failed


async def one_start(
    env: dict[str, str], folder: Path, connector: FakeBotConnector, http: aiohttp.ClientSession
) -> tuple[float, float]:
    """(seconds to /readyz 200, seconds from then to the answer of a Teams message)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    serve_env = {
        **env, "HITL_HOST": "127.0.0.1", "HITL_PORT": str(port), "HITL_MODEL": "scripted",
        "HITL_TEAMS_ALLOW_UNAUTHENTICATED": "1", "HITL_ADMINS": ADMIN.aad,
    }  # fmt: skip
    start = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        *hitl_bridge(), "serve", env=serve_env, cwd=folder,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        while not await ready(http, f"{base}/readyz"):
            if process.returncode is not None:
                _, err = await process.communicate()
                raise SystemExit(f"serve exited with {process.returncode}:\n{err.decode()}")
            if time.perf_counter() - start > SERVE_TIMEOUT:
                raise SystemExit(f"serve not ready within {SERVE_TIMEOUT:.0f} s")
            await asyncio.sleep(POLL)
        ready_at = time.perf_counter()
        sent = len(connector.calls)
        activity = message_activity(connector.service_url, "hitl pending", user=ADMIN)
        async with http.post(f"{base}/api/messages", json=activity) as response:
            if response.status != 200:
                raise SystemExit(f"ready, yet Teams answered {response.status}")
        await connector.wait_for(lambda: len(connector.calls) > sent, ANSWER_TIMEOUT)
        return ready_at - start, time.perf_counter() - ready_at
    finally:
        if process.returncode is None:
            process.terminate()
        await process.communicate()


async def main(runs: int, codes: list[Path]) -> None:
    top = Path(tempfile.mkdtemp(prefix="hitl-teams-ready-"))
    try:
        folders, envs = await upgraded_checkouts(codes, top)
        samples: dict[Path, list[tuple[float, float]]] = {code: [] for code in codes}
        async with FakeBotConnector() as connector, aiohttp.ClientSession() as http:
            for code in codes:  # the warm-up: bytecode written, the file cache filled
                await one_start(envs[code], folders[code], connector, http)
            for _ in range(runs):
                for code in codes:
                    samples[code].append(
                        await one_start(envs[code], folders[code], connector, http)
                    )
        print(f"serve with Teams (fake Bot Connector), medians over {runs} fresh starts")
        for code in codes:
            ready = statistics.median(s[0] for s in samples[code])
            answer = statistics.median(s[1] for s in samples[code])
            each = ", ".join(f"{s[0]:.2f}" for s in samples[code])
            print(f"{str(code)[-40:]:>40}: /readyz 200 after {ready:.2f} s (each: {each}); "
                  f"then a Teams message answered in {answer * 1000:.0f} ms")  # fmt: skip
    finally:
        shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=5, help="starts per checkout (the median)")
    parser.add_argument("--code", type=Path, action="append",
                        help="a checkout measured (default: this one); given twice, the two "
                             "are measured in turns, so both see the same load")  # fmt: skip
    args = parser.parse_args()
    asyncio.run(main(args.runs, [code.resolve() for code in args.code or [ROOT]]))
