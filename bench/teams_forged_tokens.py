"""Benchmark: /healthz latency of `hitl-bridge serve` while forged Teams tokens arrive.

Run with `.venv/bin/python bench/teams_forged_tokens.py [--seconds S] [--bursts 100,1000]`.
It prints figures and asserts nothing. Three processes:

- the service: the production entry point (`adapters.cli.command.main(["serve"])`) in a subprocess,
  Teams with credentials, on a SQLite file. The one departure from production: its Teams cloud
  is the public one with the OpenID metadata URL (so the signing keys) on loopback, registered
  under the SDK's `CLOUD` names before `serve` runs, so no token ever leaves the machine;
- this process: the signing-key endpoint (FakeBotFrameworkKeys, counting fetches, answering
  after `--key-latency` seconds as Microsoft's distant endpoint would) and the prober:
  GET /healthz one after another (a pause of `PROBE_EVERY` between them), each timed from
  send to response, for the whole of each phase;
- the load generator: a separate process (multiprocessing, spawn) with its own event loop and
  aiohttp client, sending bursts of N forged tokens at once to POST /api/messages (each with
  an activity as Teams sends it), the next burst as soon as the last is answered, for the
  phase's length.

The forged tokens, in equal shares: `alg: none`; HS256 with a guessed secret; garbage;
RS256 with a kid never seen (a new one per token); RS256 signed by another key under the
served kid; expired; for another audience. Each phase reports /healthz median, p99 and max,
the forged requests answered (and their statuses), and the key fetches the phase caused.
Beside each forged phase, a control: the same bursts without any Authorization header (the
cheapest refusal), so what the tokens cost can be told from what the HTTP requests cost.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import multiprocessing
import os
import signal
import socket
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402

from bot.store import upgrade  # noqa: E402
from tests.fakes.bot_framework_keys import FakeBotFrameworkKeys, new_key  # noqa: E402

CLIENT_ID = "33333333-4444-5555-6666-777777777777"
CLOUD = "hitl-bench-loopback"
SERVICE_URL = "https://smba.trafficmanager.net/amer/"
PROBE_EVERY = 0.005  # seconds between two /healthz probes
SETUP_TIMEOUT = 60.0
KINDS = ["alg none", "HS256", "garbage", "unknown kid", "other key", "expired", "audience"]


# -- the service (a subprocess) ------------------------------------------------------------------


def serve_with_loopback_keys(metadata_url: str) -> int:
    """The subprocess: `hitl-bridge serve`, its Teams cloud's keys at `metadata_url`."""
    from dataclasses import replace

    from microsoft_teams.api.auth import cloud_environment

    from adapters.cli.command import main

    loopback = replace(cloud_environment.PUBLIC, openid_metadata_url=metadata_url)
    cloud_environment._CLOUD_ENVIRONMENTS[CLOUD] = loopback
    os.environ["CLOUD"] = CLOUD
    return main(["serve"])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def start_service(
    db_url: str, keys: FakeBotFrameworkKeys, http: aiohttp.ClientSession
) -> tuple[asyncio.subprocess.Process, str]:
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items()
           if not k.startswith(("HITL_", "SLACK_", "TEAMS_", "ANTHROPIC_"))},
        "HITL_DATABASE_URL": db_url,
        "HITL_HOST": "127.0.0.1",
        "HITL_PORT": str(port),
        "HITL_MODEL": "scripted",
        "TEAMS_CLIENT_ID": CLIENT_ID,
        "TEAMS_CLIENT_SECRET": "bench-secret",
        "TEAMS_TENANT_ID": "bench-tenant",
    }  # fmt: skip
    metadata_url = keys.cloud.openid_metadata_url
    process = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--serve-with-keys", metadata_url, cwd=ROOT, env=env
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + SETUP_TIMEOUT
    while time.monotonic() < deadline:
        if process.returncode is not None:
            raise RuntimeError(f"the service exited with {process.returncode}")
        with contextlib.suppress(aiohttp.ClientError):
            async with http.get(f"{base}/healthz") as response:
                if response.status == 200:
                    return process, base
        await asyncio.sleep(0.05)
    process.kill()
    raise RuntimeError("the service did not become healthy")


# -- forged tokens -------------------------------------------------------------------------------


def forged_tokens(keys: FakeBotFrameworkKeys, count: int) -> list[str]:
    """`count` Authorization headers, the kinds in turn; every unknown kid a new one."""
    now = int(time.time())
    other = new_key()
    fixed = {
        "alg none": keys.token(SERVICE_URL, algorithm="none"),
        "HS256": keys.token(SERVICE_URL, key="a-guessed-secret-long-enough-for-hs256",
                            algorithm="HS256"),
        "garbage": "garbage.garbage.garbage",
        "other key": keys.token(SERVICE_URL, key=other),
        "expired": keys.token(SERVICE_URL, exp=now - 3600, iat=now - 4000, nbf=now - 4000),
        "audience": keys.token(SERVICE_URL, aud="someone-else"),
    }  # fmt: skip
    headers = []
    for i, kind in zip(range(count), itertools.cycle(KINDS), strict=False):
        if kind == "unknown kid":  # the costly kind before: each made the SDK fetch the keys
            token = keys.token(SERVICE_URL, kid=f"forged-{i}", key=other)
        else:
            token = fixed[kind]
        headers.append(f"Bearer {token}")
    return headers


def activity() -> dict[str, Any]:
    return {
        "type": "message",
        "id": "1700000000000",
        "channelId": "msteams",
        "serviceUrl": SERVICE_URL,
        "from": {"id": "29:1forger", "name": "Mallory", "aadObjectId": "aad-mallory"},
        "conversation": {"id": "a:1forged", "conversationType": "personal"},
        "recipient": {"id": "28:bot", "name": "hitl-bridge"},
        "text": "hello",
    }


# -- the load generator (its own process) --------------------------------------------------------


@dataclass
class LoadResult:
    sent: int = 0
    bursts: int = 0
    statuses: dict[int, int] = field(default_factory=dict)
    errors: int = 0


async def _bursts(url: str, headers: list[str], size: int, seconds: float) -> LoadResult:
    result = LoadResult()
    body = activity()
    connector = aiohttp.TCPConnector(limit=0)
    pool = itertools.cycle(headers)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def post(authorization: str) -> None:
            headers = {"Authorization": authorization} if authorization else {}
            try:
                async with session.post(url, json=body, headers=headers) as response:
                    await response.read()
                result.statuses[response.status] = result.statuses.get(response.status, 0) + 1
            except aiohttp.ClientError:
                result.errors += 1

        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            await asyncio.gather(*(post(next(pool)) for _ in range(size)))
            result.sent += size
            result.bursts += 1
    return result


def load_generator(url: str, phases: list[tuple[list[str], int, float]], inbox: Any,
                   outbox: Any) -> None:  # fmt: skip
    """Entry point of the load process: each phase when told to start, its result back."""

    async def run() -> None:
        for headers, size, seconds in phases:
            await asyncio.to_thread(inbox.get)
            outbox.put(await _bursts(url, headers, size, seconds))

    asyncio.run(run())


# -- the prober (here) ---------------------------------------------------------------------------


async def probe(http: aiohttp.ClientSession, base: str, until: asyncio.Event) -> list[float]:
    """/healthz latencies (ms), one probe after another, until `until` is set."""
    latencies: list[float] = []
    while not until.is_set():
        started = time.perf_counter()
        async with http.get(f"{base}/healthz") as response:
            await response.read()
            assert response.status == 200, response.status
        latencies.append((time.perf_counter() - started) * 1000)
        await asyncio.sleep(PROBE_EVERY)
    return latencies


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


async def bench(bursts: list[int], seconds: float, key_latency: float) -> None:
    with tempfile.TemporaryDirectory() as folder:
        db_url = f"sqlite+aiosqlite:///{folder}/bench.db"
        await upgrade(db_url)
        async with FakeBotFrameworkKeys(CLIENT_ID) as keys, aiohttp.ClientSession() as http:
            keys.delay = key_latency
            service, base = await start_service(db_url, keys, http)
            try:
                await run_phases(bursts, seconds, base, keys, http)
            finally:
                service.send_signal(signal.SIGTERM)
                await asyncio.wait_for(service.wait(), 30)


async def run_phases(
    bursts: list[int], seconds: float, base: str, keys: FakeBotFrameworkKeys,
    http: aiohttp.ClientSession,
) -> None:  # fmt: skip
    # (label, Authorization headers to cycle through, burst size): "" is no header at all.
    plan: list[tuple[str, list[str], int]] = [("-", [], 0)]
    for size in bursts:
        plan += [("forged", forged_tokens(keys, size * 4), size), ("no token", [""], size)]
    phases = [(headers, size, seconds) for _, headers, size in plan if size]
    context = multiprocessing.get_context("spawn")
    inbox, outbox = context.Queue(), context.Queue()
    generator = context.Process(
        target=load_generator, args=(f"{base}/api/messages", phases, inbox, outbox)
    )
    generator.start()
    print(
        f"forged tokens, in turn: {', '.join(KINDS)}; {seconds:g}s per phase; "
        f"the key endpoint answers in {keys.delay * 1000:g} ms"
    )
    print(f"{'traffic':>9} {'burst':>6} {'probes':>7} {'median ms':>10} {'p99 ms':>8} "
          f"{'max ms':>8} {'posts':>7} {'posts/s':>8} {'statuses':>14} "
          f"{'key fetches':>12}")  # fmt: skip
    try:
        for label, _, size in plan:
            fetches = keys.fetches
            done = asyncio.Event()
            prober = asyncio.create_task(probe(http, base, done))
            if size == 0:
                await asyncio.sleep(seconds)
                load = LoadResult()
            else:
                inbox.put("start")
                load = await asyncio.to_thread(outbox.get, True, seconds + 120)
            done.set()
            latencies = await prober
            statuses = ",".join(f"{s}x{n}" for s, n in sorted(load.statuses.items())) or "-"
            if load.errors:
                statuses += f",errx{load.errors}"
            print(f"{label:>9} {size or '-':>6} {len(latencies):>7} "
                  f"{statistics.median(latencies):>10.2f} {_percentile(latencies, 0.99):>8.2f} "
                  f"{max(latencies):>8.2f} {load.sent:>7} {load.sent / seconds:>8.0f} "
                  f"{statuses:>14} {keys.fetches - fetches:>12}")  # fmt: skip
    finally:
        await asyncio.to_thread(generator.join, 30)
    print(f"key fetches in all: {keys.fetches}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each phase")
    parser.add_argument("--bursts", default="100,1000", help="forged tokens per burst, per phase")
    parser.add_argument("--key-latency", type=float, default=0.035,
                        help="seconds the key endpoint takes to answer")  # fmt: skip
    parser.add_argument("--serve-with-keys", metavar="URL", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_with_keys:
        sys.exit(serve_with_loopback_keys(args.serve_with_keys))
    asyncio.run(bench([int(n) for n in args.bursts.split(",")], args.seconds, args.key_latency))


if __name__ == "__main__":
    main()
