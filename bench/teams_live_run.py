"""Benchmark: how soon a Teams personal chat shows a turn live.

Run with `.venv/bin/python bench/teams_live_run.py [--rounds N] [--interval S]`. It prints
figures and asserts nothing. One process: the service (`Server.start`, Teams unauthenticated,
SQLite) on loopback, with FakeBotConnector (Teams' side: it timestamps each piece of a stream
as it arrives) and FakeAnthropic (the model: it notes when each request reaches it, then
streams a reply of 12 words, one every `--word-delay` seconds).

Each round, a person writes in the personal chat (the POST to /api/messages is the start),
and the script waits for the stream's final message. Per round:

- model asked: the model's request arrives (its first token follows at once);
- informative: the stream's first piece ("Thinking…") reaches Teams;
- first text: the first `streaming` piece reaches Teams (the final message, for a reply
  written whole before the interval let a piece go);
- final: the final message reaches Teams.

`--interval` is HITL_TEAMS_STREAM_INTERVAL (Teams' rate, 1 s in production): the first text
piece waits for it after the informative one.
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

from adapters.serve.service import Server  # noqa: E402
from adapters.serve.settings import Settings  # noqa: E402
from bot.store import upgrade  # noqa: E402
from tests.adapters.surfaces.teams.conftest import PERSONAL, message_activity  # noqa: E402
from tests.fakes.anthropic_api import FakeAnthropic, Turn, reply_text  # noqa: E402
from tests.fakes.bot_connector import FakeBotConnector, Stream  # noqa: E402

REPLY = "This is the model's reply, streamed to the person one word at a time here."


async def run(rounds: int, interval: float, word_delay: float) -> dict[str, list[float]]:
    figures: dict[str, list[float]] = {"model asked": [], "informative": [], "first text": [],
                                       "final": []}  # fmt: skip
    asked: list[float] = []

    def answer(_: dict[str, Any]) -> Turn:
        asked.append(time.monotonic())
        return reply_text(REPLY, delay=word_delay)

    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite+aiosqlite:///{Path(folder) / 'hitl.db'}"
        await upgrade(url)
        async with FakeBotConnector() as connector, FakeAnthropic() as model:
            settings = Settings(
                _env_file=None, HITL_DATABASE_URL=url, HITL_HOST="127.0.0.1", HITL_PORT=0,
                HITL_TEAMS_ALLOW_UNAUTHENTICATED=True, ANTHROPIC_API_KEY="bench",
                ANTHROPIC_BASE_URL=model.base_url, HITL_MODEL="claude-sonnet-4-6",
                HITL_TEAMS_STREAM_INTERVAL=interval,
            )  # fmt: skip
            server = await Server.start(settings)
            try:
                async with aiohttp.ClientSession() as http:
                    for n in range(1, rounds + 1):
                        model.script(answer)
                        start = time.monotonic()
                        activity = message_activity(connector.service_url, f"hello {n}")
                        async with http.post(f"{server.url}/api/messages", json=activity) as r:
                            assert r.status == 200
                        stream = await _ended(connector, n)
                        times = _times(stream)
                        figures["model asked"].append(asked[-1] - start)
                        for name, at in times.items():
                            figures[name].append(at - start)
            finally:
                await server.stop()
    return figures


async def _ended(connector: FakeBotConnector, n: int) -> Stream:
    def ended() -> Stream | None:
        streams = connector.streams(PERSONAL)
        found = streams[n - 1] if len(streams) >= n else None
        return found if found is not None and found.final is not None else None

    stream = await connector.wait_for(ended, 30)
    assert stream is not None
    return stream


def _times(stream: Stream) -> dict[str, float]:
    kinds = [p["entities"][0]["streamType"] for p in stream.pieces]
    return {
        "informative": stream.arrived[kinds.index("informative")],
        "first text": stream.arrived[kinds.index("streaming" if "streaming" in kinds else "final")],
        "final": stream.arrived[kinds.index("final")],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--word-delay", type=float, default=0.1)
    args = parser.parse_args()
    figures = asyncio.run(run(args.rounds, args.interval, args.word_delay))
    print(f"{args.rounds} rounds, stream interval {args.interval} s, a word every "
          f"{args.word_delay} s; ms from the person's message:")  # fmt: skip
    for name, values in figures.items():
        ms = sorted(v * 1000 for v in values)
        p99 = ms[min(len(ms) - 1, round(0.99 * (len(ms) - 1)))]
        print(f"  {name:12} median {statistics.median(ms):8.1f}  p99 {p99:8.1f}  min {ms[0]:8.1f}")


if __name__ == "__main__":
    main()
