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
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


from bench.api_latency import print_medians, served  # noqa: E402
from bench.client_round_trip import TO, Person  # noqa: E402

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
    async with served() as s:
        clicking = asyncio.create_task(approve_all(Person(s.slack, s.http, s.base)))
        try:
            times = await rounds_in_node(s.base, s.token, rounds)
        finally:
            clicking.cancel()
    print_medians(f"create → click → answer read, in Node, {rounds} rounds each, in turns:",
                  times, "bare fetch")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="rounds per way")
    asyncio.run(bench(parser.parse_args().rounds))


if __name__ == "__main__":
    main()
