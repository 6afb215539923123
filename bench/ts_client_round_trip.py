"""Benchmark: one create → click → answer round trip through the TypeScript client (hitl-client,
clients/typescript) beside bare `fetch` making the same two requests (`POST /api/v1/requests`,
then `GET ...?wait=60`), both in Node.

Run with `.venv/bin/python bench/ts_client_round_trip.py [--rounds N]` after `make install-dev`
(which builds the client). It prints figures and asserts nothing. The service runs as
`hitl-bridge serve` in a subprocess (SQLite); this process runs the fake Slack and a person who
clicks Approve the moment each request's message is posted; clients/typescript/bench/
round-trip.ts makes the rounds, the two ways taking turns. Each figure is the time from the
create's send until the answer is read.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402

from bench.api_latency import ACTOR, CHANNEL, percentile  # noqa: E402
from bench.client_round_trip import TO, Person  # noqa: E402
from bench.slack_ack_latency import start_service  # noqa: E402
from bot.doors.tokens import Tokens  # noqa: E402
from bot.store import open_store, upgrade  # noqa: E402
from bot.store.doors import DoorTables  # noqa: E402
from tests.fakes.anthropic_api import FakeAnthropic  # noqa: E402
from tests.fakes.slack_api import FakeSlack  # noqa: E402

PACKAGE = ROOT / "clients" / "typescript"
SCRIPT = PACKAGE / "dist" / "bench" / "round-trip.js"


async def approve_all(person: Person) -> None:
    while True:
        await person.approve_next()


async def rounds_in_node(base: str, token: str, rounds: int) -> dict[str, list[float]]:
    env = {**os.environ, "HITL_URL": base, "HITL_TOKEN": token, "HITL_TO": TO,
           "ROUNDS": str(rounds)}  # fmt: skip
    process = await asyncio.create_subprocess_exec(
        "node", str(SCRIPT), env=env, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"round-trip.js exited with {process.returncode}")
    times: dict[str, list[float]] = json.loads(out)
    return times


async def bench(rounds: int) -> None:
    if not SCRIPT.exists():
        raise SystemExit(f"{SCRIPT.relative_to(ROOT)} is not built: run `make install-dev`")
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite+aiosqlite:///{Path(folder) / 'bench.db'}"
        await upgrade(url)
        store = await open_store(url)
        token, _ = await Tokens(DoorTables(store)).create("bench")
        await store.close()
        async with FakeSlack(users={ACTOR: "actor"}) as slack, FakeAnthropic() as model, \
                aiohttp.ClientSession() as http:  # fmt: skip
            slack.channels.add(CHANNEL)
            process, base = await start_service(url, slack, model, http)
            clicking = asyncio.create_task(approve_all(Person(slack, http, base)))
            try:
                times = await rounds_in_node(base, token, rounds)
            finally:
                clicking.cancel()
                process.terminate()
                await process.wait()
    floor = statistics.median(times["bare fetch"])
    print(f"create → click → answer read, in Node, {rounds} rounds each, in turns:")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:<12} median {median:7.2f} ms   p99 {percentile(values, 0.99):7.2f} ms"
              f"   ratio to bare fetch {median / floor:.2f}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="rounds per way")
    asyncio.run(bench(parser.parse_args().rounds))


if __name__ == "__main__":
    main()
