"""Benchmark: how soon a mention's thread shows the status line ("is thinking…"), beside how
soon the model is asked (its first token's earliest moment).

Run with `.venv/bin/python bench/status_latency.py [--mentions N]`. It prints figures and
asserts nothing. The service is `python -m adapters.cli.command serve` in a subprocess, as in
production; FakeSlack and FakeAnthropic run in this process, so every moment is read on one
clock here:

- the mention: just before its signed `app_mention` event is posted;
- the model asked: FakeAnthropic receives the turn's first request (it streams the first token
  at once): the reference, the earliest any reply could start to show;
- the first status: FakeSlack receives the thread's first `assistant.threads.setStatus`.

Mentions are sent one at a time, each once the previous turn ended (its reply posted and its
status cleared); the first few are warm-up and not counted.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402

from bench.slack_ack_latency import CHANNEL, SECRET, start_service  # noqa: E402
from bot.store import upgrade  # noqa: E402
from tests.fakes.anthropic_api import FakeAnthropic, reply_text  # noqa: E402
from tests.fakes.slack_api import BOT_USER_ID, FakeSlack  # noqa: E402
from tests.fakes.slack_signing import event_callback, message_event, post_signed  # noqa: E402

ACTOR = "U0ACTOR001"
WARM_UP = 3
TIMEOUT = 30.0
REPLY = "Done."


class Moments:
    """When the model was asked and each thread's first status was set (perf_counter)."""

    def __init__(self) -> None:
        self.asked: list[float] = []
        self.first_status: dict[str, float] = {}

    def model(self, body: dict[str, Any]) -> Any:
        self.asked.append(time.perf_counter())
        return reply_text(REPLY)

    def status(self, args: dict[str, Any]) -> bool:
        self.first_status.setdefault(str(args.get("thread_ts")), time.perf_counter())
        return False  # never held: FakeSlack's hold is only the moment's hook here


async def one_mention(
    n: int, url: str, slack: FakeSlack, model: FakeAnthropic, moments: Moments,
    http: aiohttp.ClientSession,
) -> tuple[float, float]:  # fmt: skip
    """(ms to the model asked, ms to the first status) of one mention."""
    model.script(moments.model)
    text = f"<@{BOT_USER_ID}> status {n}"
    root = slack.add_message(CHANNEL, text, user=ACTOR)
    event = message_event(text, user=ACTOR, channel=CHANNEL, ts=root["ts"],
                          event_type="app_mention")  # fmt: skip
    body = event_callback(event)
    sent = time.perf_counter()
    response = await post_signed(http, f"{url}/slack/events", body, SECRET)
    assert response.status == 200
    ts = root["ts"]
    await slack.wait_for(lambda: slack.status_history(CHANNEL, ts)[-1:] == [""], TIMEOUT)
    return (moments.asked[-1] - sent) * 1000, (moments.first_status[ts] - sent) * 1000


async def bench(mentions: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        db_url = f"sqlite+aiosqlite:///{Path(folder) / 'bench.db'}"
        await upgrade(db_url)
        moments = Moments()
        async with FakeSlack(users={ACTOR: "actor"}) as slack, FakeAnthropic() as model:
            slack.hold("assistant.threads.setStatus", moments.status)
            async with aiohttp.ClientSession() as http:
                process, url = await start_service(db_url, slack, model, http)
                try:
                    rows = [await one_mention(n, url, slack, model, moments, http)
                            for n in range(WARM_UP + mentions)][WARM_UP:]  # fmt: skip
                finally:
                    process.terminate()
                    await process.wait()
    report(rows)


def report(rows: list[tuple[float, float]]) -> None:
    asked = [a for a, _ in rows]
    status = [s for _, s in rows]
    after = [s - a for a, s in rows]
    print(f"{len(rows)} mentions, one at a time (after {WARM_UP} warm-up)")
    for name, values in (("mention → model asked (reference)", asked),
                         ("mention → first status", status),
                         ("first status after the model was asked", after)):  # fmt: skip
        p90 = statistics.quantiles(values, n=10)[-1] if len(values) > 1 else values[0]
        print(f"  {name:42} median {statistics.median(values):7.2f} ms   p90 {p90:7.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mentions", type=int, default=30)
    args = parser.parse_args()
    asyncio.run(bench(args.mentions))


if __name__ == "__main__":
    main()
