"""Benchmark: one approval round trip through each door of `hitl-bridge serve`, beside the
same request created, answered and read over the HTTP API.

Run with `.venv/bin/python bench/door_round_trips.py [--rounds N]`. It prints figures and
asserts nothing. The service runs as `hitl-bridge serve` in a subprocess (SQLite); this process
runs the fake Slack, the fake Anthropic API and the callers. The ways take turns round by round
(after three warm-up rounds), so the machine's noise falls on each alike:

- API: `POST /api/v1/requests`, a signed Slack click on Approve the moment its message is
  posted, and `GET /api/v1/requests/{id}?wait=60` reading the answer (the reference);
- A2A: SendMessage (blocking) with the a2a-sdk's own client, made once, the same click
  answering; the task returned completed;
- AG-UI: a run whose agent turn asks `requestApproval` (the fake model's tool call), read to
  its interrupt, then the resume that approves it, read to RUN_FINISHED. Its person answers in
  the resume, not in Slack; its turn calls the (fake, instant) model twice.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from a2a.client import (  # noqa: E402
    A2ACardResolver,
    AuthInterceptor,
    Client,
    ClientCallContext,
    ClientConfig,
    ClientFactory,
    InMemoryContextCredentialStore,
)
from a2a.helpers.proto_helpers import new_data_part  # noqa: E402
from a2a.types import Message, Role, SendMessageRequest, TaskState  # noqa: E402

from bench.api_latency import ACTOR, APPROVAL, CHANNEL, print_medians, served  # noqa: E402
from bench.client_round_trip import Person  # noqa: E402
from bench.slack_ack_latency import scripted_model  # noqa: E402

TO = f"slack:{CHANNEL}/{ACTOR}"
WARM_UP = 3
Round = Callable[[], Awaitable[None]]
SESSION = {"sessionId": "bench"}


async def a2a_client(http: httpx.AsyncClient, base: str, token: str) -> Client:
    credentials = InMemoryContextCredentialStore()
    await credentials.set_credentials("bench", "bearer", token)
    card = await A2ACardResolver(http, base).get_agent_card()
    config = ClientConfig(streaming=False, httpx_client=http,
                          supported_protocol_bindings=["JSONRPC"])  # fmt: skip
    return ClientFactory(config).create(card, [AuthInterceptor(credentials)])


async def sse_events(http: httpx.AsyncClient, url: str, body: Any, token: str) -> list[Any]:
    """The events of one AG-UI run, as JSON objects."""
    headers = {"Authorization": f"Bearer {token}"}
    response = await http.post(url, json=body, headers=headers)
    chunks = [c for c in response.text.split("\n\n") if c.startswith("data: ")]
    return [json.loads(c.removeprefix("data: ")) for c in chunks]


def ways(base: str, token: str, http: httpx.AsyncClient, a2a: Client,
         person: Person) -> dict[str, Round]:  # fmt: skip
    headers = {"Authorization": f"Bearer {token}"}
    body = {"tool": "requestApproval", "arguments": APPROVAL, "to": TO}

    async def by_api() -> None:
        async def ask() -> None:
            made = (await http.post(f"{base}/api/v1/requests", json=body, headers=headers)).json()
            url = f"{base}/api/v1/requests/{made['id']}"
            answer = (await http.get(url, params={"wait": 60}, headers=headers)).json()
            assert answer["status"] == "answered", answer

        await asyncio.gather(ask(), person.approve_next())

    async def by_a2a() -> None:
        async def ask() -> None:
            message = Message(role=Role.ROLE_USER, message_id=secrets.token_hex(8),
                              parts=[new_data_part(body)])  # fmt: skip
            context = ClientCallContext(state=SESSION)
            request = SendMessageRequest(message=message)
            (event,) = [e async for e in a2a.send_message(request, context=context)]
            assert event.task.status.state == TaskState.TASK_STATE_COMPLETED, event

        await asyncio.gather(ask(), person.approve_next())

    async def by_ag_ui() -> None:
        thread = secrets.token_hex(6)
        run = {"threadId": thread, "runId": secrets.token_hex(6), "state": {}, "tools": [],
               "context": [], "forwardedProps": {},
               "messages": [{"id": "m1", "role": "user", "content": "ship it"}]}  # fmt: skip
        first = await sse_events(http, f"{base}/ag-ui", run, token)
        (interrupt,) = first[-1]["outcome"]["interrupts"]
        entry = {"interruptId": interrupt["id"], "status": "resolved",
                 "payload": {"approved": True}}  # fmt: skip
        resume = {**run, "runId": secrets.token_hex(6), "messages": [], "resume": [entry]}
        second = await sse_events(http, f"{base}/ag-ui", resume, token)
        assert second[-1]["type"] == "RUN_FINISHED", second[-1]

    return {"API": by_api, "A2A": by_a2a, "AG-UI": by_ag_ui}


async def measure(rounds: int, base: str, token: str, person: Person) -> dict[str, list[float]]:
    async with httpx.AsyncClient(timeout=70) as http:
        a2a = await a2a_client(http, base, token)
        chosen = ways(base, token, http, a2a, person)
        times: dict[str, list[float]] = {name: [] for name in chosen}
        for n in range(rounds + WARM_UP):
            for name, way in chosen.items():
                started = time.perf_counter()
                await way()
                if n >= WARM_UP:
                    times[name].append((time.perf_counter() - started) * 1000)
        await a2a.close()
    return times


async def bench(rounds: int) -> None:
    async with served() as s:
        s.model.script(*[scripted_model] * 10_000)  # a turn: ask, then reply
        times = await measure(rounds, s.base, s.token, Person(s.slack, s.http, s.base))
    print_medians(f"one approval round trip, {rounds} rounds each, in turns:", times, "API")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30, help="rounds per door")
    asyncio.run(bench(parser.parse_args().rounds))


if __name__ == "__main__":
    main()
