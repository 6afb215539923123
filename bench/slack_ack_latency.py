"""Benchmark: how fast `hitl-bridge serve` acks Slack's button clicks under load.

Run with `.venv/bin/python bench/slack_ack_latency.py [--seconds S] [--rates 50,200,500]`.
It prints figures and asserts nothing. Three processes, as in production the service has its
machine to itself apart from the load:

- the service: `python -m adapters.cli.command serve` (the production entry point) in a subprocess,
  configured by environment variables, on a SQLite file, talking to the fakes below;
- this process: FakeSlack (the Web API the service calls) and FakeAnthropic (the model), and
  the set-up: mentions that make the scripted model open `requestApproval` requests;
- the load generator: a separate process (multiprocessing, spawn) with its own event loop and
  aiohttp client, sending signed `block_actions` clicks to POST /slack/events open-loop (each
  click at its scheduled time, whether or not earlier ones were answered), at each rate for a
  few seconds, and timing each click from the moment it is sent until its HTTP response.

The mix of clicks in every phase (the same at every rate):
- 20 first answers: the actor approves a pending request (settle, edit, the model called again,
  the agent's reply posted): the expensive path, spread evenly through the phase;
- of the rest, half are a stranger's clicks on a pending request (refused: an audit row and an
  ephemeral "this request is for …"), half the actor's clicks on a request already answered
  (an ephemeral "already answered by …").
Every click is acked first and processed after the response; once a phase is over the script
waits until all of that phase's ephemerals and edits have reached FakeSlack ("drained": how
long the service still worked after the last ack). "send lag" is how late the generator sent
its latest click against the schedule (large values mean the client, not the service, lagged).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import os
import signal
import socket
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402

from bot.store import upgrade  # noqa: E402
from tests.fakes.anthropic_api import FakeAnthropic, reply_text, reply_tool_use  # noqa: E402
from tests.fakes.slack_api import BOT_USER_ID, FakeSlack  # noqa: E402
from tests.fakes.slack_signing import (  # noqa: E402
    block_actions_payload,
    encode,
    event_callback,
    message_event,
    post_signed,
    sign,
)

SECRET = "bench-signing-secret"
CHANNEL = "C0BENCH001"
ACTOR = "U0ACTOR001"
STRANGER = "U0STRANGE1"
MODEL = "claude-sonnet-4-6"
FIRST_ANSWERS = 20  # per phase
POOL = 20  # pending requests strangers click on; answered requests clicked again
SETUP_TIMEOUT = 60.0
DONE = "Thanks, done."  # the agent's reply once its request is answered


# -- the load generator (its own process) ---------------------------------------------------


@dataclass
class Phase:
    rate: float
    payloads: list[dict[str, Any]]


@dataclass
class PhaseResult:
    rate: float
    latencies_ms: list[float]
    statuses: dict[int, int]
    max_lag_ms: float  # how late the generator sent its latest click, against the schedule
    elapsed_s: float


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


async def _send_phase(url: str, phase: Phase) -> PhaseResult:
    # Signed just before the phase (a signature is good for 5 minutes): no HMAC in the timing.
    bodies = [encode(payload) for payload in phase.payloads]
    signed = [(body, {"Content-Type": kind, **sign(body, SECRET)}) for body, kind in bodies]
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    lags: list[float] = []
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def click(body: bytes, headers: dict[str, str]) -> None:
            started = time.perf_counter()
            async with session.post(url, data=body, headers=headers) as response:
                await response.read()
            latencies.append((time.perf_counter() - started) * 1000)
            statuses[response.status] = statuses.get(response.status, 0) + 1

        loop = asyncio.get_running_loop()
        start = loop.time() + 0.05
        tasks = []
        for i, (body, headers) in enumerate(signed):
            due = start + i / phase.rate
            delay = due - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            lags.append(max(0.0, loop.time() - due) * 1000)
            tasks.append(asyncio.create_task(click(body, headers)))
        await asyncio.gather(*tasks)
        elapsed = loop.time() - start
    return PhaseResult(phase.rate, latencies, statuses, max(lags), elapsed)


def load_generator(url: str, phases: list[Phase], results: Any) -> None:
    """Entry point of the load process: run each phase, send back the results."""

    async def run() -> None:
        for phase in phases:
            results.put(await _send_phase(url, phase))
            await asyncio.sleep(1.0)

    asyncio.run(run())


# -- the service (a subprocess) and the fakes (here) ---------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def start_service(
    db_url: str, slack: FakeSlack, model: FakeAnthropic, http: aiohttp.ClientSession,
    extra: dict[str, str] | None = None,
) -> tuple[asyncio.subprocess.Process, str]:  # fmt: skip
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("HITL_", "SLACK_"))},
        "HITL_DATABASE_URL": db_url,
        "HITL_HOST": "127.0.0.1",
        "HITL_PORT": str(port),
        "HITL_TIMEOUT_SECONDS": "3600",
        "HITL_MODEL": MODEL,
        "SLACK_BOT_TOKEN": slack.token,
        "SLACK_SIGNING_SECRET": SECRET,
        "SLACK_API_URL": slack.base_url,
        "ANTHROPIC_API_KEY": "bench",
        "ANTHROPIC_BASE_URL": model.base_url,
        **(extra or {}),
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "adapters.cli.command", "serve", cwd=ROOT, env=env
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


def scripted_model(body: dict[str, Any]) -> Any:
    """Every mention asks for an approval; every answer gets a short reply."""
    last = body["messages"][-1]["content"]
    answered = isinstance(last, list) and any(b.get("type") == "tool_result" for b in last)
    if answered:
        return reply_text(DONE)
    return reply_tool_use("requestApproval", {"action": "Deploy", "reason": "Benchmark"})


def has_buttons(message: dict[str, Any]) -> bool:
    return any(b.get("type") == "actions" for b in message.get("blocks") or [])


async def open_requests(
    count: int, base: str, slack: FakeSlack, http: aiohttp.ClientSession
) -> list[dict[str, Any]]:
    """`count` new pending requests, one per mention, each in its own thread."""
    roots = []
    for i in range(count):
        text = f"<@{BOT_USER_ID}> deploy {i}"
        root = slack.add_message(CHANNEL, text, user=ACTOR)
        event = message_event(
            text, user=ACTOR, channel=CHANNEL, ts=root["ts"], event_type="app_mention"
        )
        response = await post_signed(http, f"{base}/slack/events", event_callback(event), SECRET)
        assert response.status == 200
        roots.append(root["ts"])

    def requests() -> list[dict[str, Any]]:
        found = [[m for m in slack.thread(CHANNEL, ts) if has_buttons(m)] for ts in roots]
        return [messages[0] for messages in found] if all(found) else []

    return await slack.wait_for(requests, SETUP_TIMEOUT)


def click(message: dict[str, Any], user: str) -> dict[str, Any]:
    return block_actions_payload(
        message=message, channel_id=CHANNEL, action_id="hitl_approve", user_id=user
    )


def phase_clicks(
    count: int, fresh: list[dict[str, Any]], pending: list[dict[str, Any]],
    answered: list[dict[str, Any]],
) -> tuple[list[dict[str, Any]], int]:  # fmt: skip
    """`count` clicks: the first answers spread evenly, the rest strangers and repeats.

    Returns the clicks and how many ephemerals they should produce.
    """
    every = max(1, count // len(fresh))
    clicks: list[dict[str, Any]] = []
    others = 0
    for i in range(count):
        if i % every == 0 and i // every < len(fresh):
            clicks.append(click(fresh[i // every], ACTOR))
        elif others % 2 == 0:
            clicks.append(click(pending[others % len(pending)], STRANGER))
            others += 1
        else:
            clicks.append(click(answered[others % len(answered)], ACTOR))
            others += 1
    return clicks, others


async def bench(rates: list[float], seconds: float) -> None:
    with tempfile.TemporaryDirectory() as folder:
        db_url = f"sqlite+aiosqlite:///{folder}/bench.db"
        await upgrade(db_url)
        async with (
            FakeSlack(users={ACTOR: "actor", STRANGER: "stranger"}) as slack,
            FakeAnthropic() as model,
            aiohttp.ClientSession() as http,
        ):
            model.script(*[scripted_model] * 10_000)  # a turn calls it twice: ask, then reply
            service, base = await start_service(db_url, slack, model, http)
            try:
                await run_phases(rates, seconds, base, slack, http)
            finally:
                service.send_signal(signal.SIGTERM)
                await asyncio.wait_for(service.wait(), 30)


async def run_phases(
    rates: list[float], seconds: float, base: str, slack: FakeSlack, http: aiohttp.ClientSession
) -> None:
    started = time.perf_counter()
    pending = await open_requests(POOL, base, slack, http)
    answered = await open_requests(POOL, base, slack, http)
    for message in answered:  # answered now, through the service, before the load starts
        assert (await post_signed(http, f"{base}/slack/events", click(message, ACTOR), SECRET)).ok
    fresh = await open_requests(FIRST_ANSWERS * len(rates), base, slack, http)
    await slack.wait_for(
        lambda: not any(has_buttons(slack.message(CHANNEL, m["ts"])) for m in answered), 30
    )
    print(f"set-up: {POOL + len(fresh)} requests pending, {POOL} answered "
          f"({time.perf_counter() - started:.1f}s)")  # fmt: skip

    phases: list[Phase] = []
    expected: list[tuple[int, int]] = []  # per phase: ephemerals, edits (cumulative)
    ephemerals, edits = len(slack.ephemerals), len(slack.calls_to("chat.update"))
    for n, rate in enumerate(rates):
        count = round(rate * seconds)
        mine = fresh[n * FIRST_ANSWERS : (n + 1) * FIRST_ANSWERS]
        clicks, notes = phase_clicks(count, mine, pending, answered)
        phases.append(Phase(rate, clicks))
        ephemerals, edits = ephemerals + notes, edits + len(mine)
        expected.append((ephemerals, edits))
        print(f"mix at {rate:g}/s: {len(mine)} first answers, {(notes + 1) // 2} stranger "
              f"clicks on pending requests, {notes // 2} clicks on answered requests")  # fmt: skip

    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    generator = context.Process(
        target=load_generator, args=(f"{base}/slack/events", phases, results)
    )
    generator.start()
    print(f"{'rate/s':>7} {'clicks':>7} {'median ms':>10} {'p99 ms':>8} {'max ms':>8} "
          f"{'non-200':>8} {'send lag':>9} {'drained':>8}")  # fmt: skip
    try:
        for phase, (want_notes, want_edits) in zip(phases, expected, strict=True):
            result: PhaseResult = await asyncio.to_thread(results.get, True, 120)
            done = time.perf_counter()

            def drained_yet(notes: int = want_notes, edits: int = want_edits) -> bool:
                return (
                    len(slack.ephemerals) >= notes and len(slack.calls_to("chat.update")) >= edits
                )

            await slack.wait_for(drained_yet, 120)
            drained = time.perf_counter() - done
            lat = result.latencies_ms
            bad = sum(c for s, c in result.statuses.items() if s != 200)
            print(f"{phase.rate:>7.0f} {len(lat):>7} {statistics.median(lat):>10.2f} "
                  f"{_percentile(lat, 0.99):>8.2f} {max(lat):>8.2f} {bad:>8} "
                  f"{result.max_lag_ms:>7.1f}ms {drained:>7.2f}s")  # fmt: skip
    finally:
        await asyncio.to_thread(generator.join, 30)
    turns = 2 * POOL + FIRST_ANSWERS * len(rates)
    await slack.wait_for(  # every answered request's turn has ended before the service stops
        lambda: sum(m["text"] == DONE for m in slack.messages(CHANNEL)) == turns - POOL, 60
    )
    refused = sum("is for" in e["text"] for e in slack.ephemerals)
    repeated = sum("already answered" in e["text"] for e in slack.ephemerals)
    print(f"ephemerals: {refused} refusals (stranger), {repeated} 'already answered'; "
          f"{len(slack.calls_to('chat.update'))} chat.update calls in all")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=4.0, help="length of each phase")
    parser.add_argument("--rates", default="50,200,500", help="clicks per second, per phase")
    args = parser.parse_args()
    rates = [float(r) for r in args.rates.split(",")]
    asyncio.run(bench(rates, args.seconds))


if __name__ == "__main__":
    main()
