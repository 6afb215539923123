"""Benchmark: a Slack reply streamed (chat.startStream / appendStream / stopStream) beside the
same reply posted whole (chat.postMessage), as before streaming.

Run with `.venv/bin/python bench/slack_streaming.py [--rounds N] [--tokens 500] [--rate 250]`.
It prints figures and asserts nothing. The service runs in this process (`Server.start`, as
`hitl-bridge serve` does) on a SQLite file, with FakeSlack and FakeAnthropic on loopback; the
fake model writes a reply of `--tokens` words at `--rate` tokens a second (an SSE event each).

Per round, a mention is posted (signed, as Slack posts it) and timed from the moment it is
sent until:
- the fake model's first token: the model is called (its first event follows at once);
- the first words in Slack: the streamed message holds text; posted whole, the reply's
  chat.postMessage;
and the Slack calls the reply took are counted (start, appends, stop; or one post). Medians of
the rounds; the whole-message service is a second service whose workspace refused streaming
(`not_allowed`), run in turns with the streaming one.
"""

from __future__ import annotations

import argparse
import asyncio
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

from adapters.serve.service import Server  # noqa: E402
from adapters.serve.settings import Settings  # noqa: E402
from bot.store import upgrade  # noqa: E402
from tests.fakes.anthropic_api import FakeAnthropic, Turn, reply_text  # noqa: E402
from tests.fakes.slack_api import BOT_USER_ID, FakeSlack  # noqa: E402
from tests.fakes.slack_signing import event_callback, message_event, post_signed  # noqa: E402

SECRET = "bench-signing-secret"
CHANNEL = "C0BENCH001"
ACTOR = "U0ACTOR001"
MODEL = "claude-sonnet-4-6"
WAIT = 60.0
STREAM_METHODS = ("chat.startStream", "chat.appendStream", "chat.stopStream")


@dataclass
class Side:
    """One service and its fakes: streaming, or posting whole."""

    name: str
    server: Server
    slack: FakeSlack
    model: FakeAnthropic
    reply: str
    rate: float  # the model's tokens a second
    asked_at: list[float] = field(default_factory=list)  # when the model was called
    first_token_ms: list[float] = field(default_factory=list)
    first_words_ms: list[float] = field(default_factory=list)
    calls: list[int] = field(default_factory=list)

    def answer(self, body: dict[str, Any]) -> Turn:
        """The fake model's reply, its start noted (its first token follows at once)."""
        self.asked_at.append(time.perf_counter())
        return reply_text(self.reply, delay=1 / self.rate)


async def start_side(name: str, folder: Path, *, stream: bool, reply: str, rate: float) -> Side:
    slack = FakeSlack(users={ACTOR: "actor"})
    model = FakeAnthropic()
    await slack.__aenter__()
    await model.__aenter__()
    url = f"sqlite+aiosqlite:///{folder / f'{name}.db'}"
    await upgrade(url)
    settings = Settings(
        _env_file=None,
        HITL_DATABASE_URL=url, HITL_HOST="127.0.0.1", HITL_PORT=0, HITL_MODEL=MODEL,
        SLACK_BOT_TOKEN=slack.token, SLACK_SIGNING_SECRET=SECRET,
        SLACK_API_URL=slack.base_url, ANTHROPIC_API_KEY="bench",
        ANTHROPIC_BASE_URL=model.base_url,
    )  # fmt: skip
    server = await Server.start(settings)
    if not stream:
        slack.fail("chat.startStream", "not_allowed")  # the workspace's first answer: kept
    return Side(name, server, slack, model, reply, rate)


async def one_round(side: Side, http: aiohttp.ClientSession, reply: str) -> None:
    slack = side.slack
    side.model.script(side.answer)
    before = len(slack.calls)
    root = slack.add_message(CHANNEL, f"<@{BOT_USER_ID}> go", user=ACTOR)
    event = message_event(f"<@{BOT_USER_ID}> go", user=ACTOR, channel=CHANNEL, ts=root["ts"],
                          event_type="app_mention")  # fmt: skip
    sent = time.perf_counter()
    response = await post_signed(http, f"{side.server.url}/slack/events", event_callback(event),
                                 SECRET)  # fmt: skip
    assert response.status == 200

    def words_shown() -> bool:
        return any(
            m.get("user") == BOT_USER_ID and m["ts"] != root["ts"] and m.get("text")
            for m in slack.thread(CHANNEL, root["ts"])
        )

    await slack.wait_for(words_shown, WAIT)
    side.first_words_ms.append((time.perf_counter() - sent) * 1000)
    side.first_token_ms.append((side.asked_at[-1] - sent) * 1000)

    def whole() -> bool:
        texts = [m.get("text") for m in slack.thread(CHANNEL, root["ts"])]
        done = [m for m in slack.thread(CHANNEL, root["ts"])
                if slack.streaming(CHANNEL, m["ts"]) is not True]  # fmt: skip
        return reply in texts and len(done) == len(texts)

    await slack.wait_for(whole, WAIT)
    made = [name for name, _ in slack.calls[before:]]
    side.calls.append(sum(made.count(m) for m in (*STREAM_METHODS, "chat.postMessage")))


def report(side: Side) -> None:
    def med(values: list[float]) -> str:
        return f"{statistics.median(values):8.1f}"

    print(f"{side.name:>14}: model's first token {med(side.first_token_ms)} ms, "
          f"first words in Slack {med(side.first_words_ms)} ms, "
          f"Slack calls per reply {statistics.median(side.calls):.0f} "
          f"(min {min(side.calls)}, max {max(side.calls)})")  # fmt: skip


async def main(rounds: int, tokens: int, rate: float) -> None:
    reply = " ".join(f"word{i}" for i in range(tokens))
    with tempfile.TemporaryDirectory() as folder:
        streamed = await start_side("streamed", Path(folder), stream=True, reply=reply, rate=rate)
        whole = await start_side("posted whole", Path(folder), stream=False, reply=reply,
                                 rate=rate)  # fmt: skip
        async with aiohttp.ClientSession() as http:
            for _ in range(rounds):  # in turns, so both see the same machine
                await one_round(streamed, http, reply)
                await one_round(whole, http, reply)
        print(f"{rounds} rounds, a reply of {tokens} tokens at {rate:g} tokens/s")
        for side in (streamed, whole):
            report(side)
            await side.server.stop()
            await side.model.__aexit__(None, None, None)
            await side.slack.__aexit__(None, None, None)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--tokens", type=int, default=500)
    parser.add_argument("--rate", type=float, default=250.0)
    args = parser.parse_args()
    asyncio.run(main(args.rounds, args.tokens, args.rate))
