"""The A2A TCK (a2aproject/a2a-tck, its A2A 1.0 branch) against `hitl-bridge serve`: its
MUST-level tests over JSON-RPC and HTTP+JSON, with pass counts per binding.

Run with `.venv/bin/python bench/a2a_tck.py --kit DIR --kit-python PY`: DIR is the kit's
checkout (or extracted archive), PY a Python with the kit's dependencies installed
(`python -m venv V && V/bin/pip install -e DIR`). It prints figures and asserts nothing.

The service runs as in production (`python -m adapters.cli.command serve` in a subprocess, SQLite,
HITL_PUBLIC_URL unset); this process runs the fake Slack and a scripted person in it who
answers each request the moment it is posted (a question typed into its modal, an approval
approved, the first option chosen), so a task the kit sends completes. The kit's messages name
nobody: HITL_A2A_DEFAULT_TO asks that person. HITL_WEBHOOK_ALLOW_PRIVATE lets push
notifications reach the kit's receiver on 127.0.0.1. bench/a2a_tck_plugin.py gives the kit the
door's token and works round two bugs of the kit (see there).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402

from bench.api_latency import ACTOR, CHANNEL  # noqa: E402
from bench.slack_ack_latency import SECRET, start_service  # noqa: E402
from bot.doors.tokens import Tokens  # noqa: E402
from bot.store import open_store, upgrade  # noqa: E402
from bot.store.doors import DoorTables  # noqa: E402
from tests.fakes.anthropic_api import FakeAnthropic  # noqa: E402
from tests.fakes.slack_api import FakeSlack  # noqa: E402
from tests.fakes.slack_signing import (  # noqa: E402
    block_actions_payload,
    post_signed,
    view_submission_payload,
)

ANSWERS = {"hitl_answer": "TCK answer", "hitl_approve": None, "hitl_confirm": None,
           "hitl_choose_0": None}  # fmt: skip
JSON = dict[str, Any]


class Person:
    """Answers each request posted in the channel, once, as soon as it is there."""

    def __init__(self, slack: FakeSlack, http: aiohttp.ClientSession, base: str) -> None:
        self.slack, self.http, self.base = slack, http, base
        self.done: set[str] = set()
        self.answered = 0

    async def run(self) -> None:
        while True:
            for message in list(self.slack.messages(CHANNEL)):
                if message["ts"] not in self.done and _actions(message):
                    self.done.add(message["ts"])
                    await self._answer(message)
            await asyncio.sleep(0.02)

    async def _answer(self, message: JSON) -> None:
        action = next((a for a in ANSWERS if a in _actions(message)), None)
        if action is None:
            return
        views = len(self.slack.views)
        click = block_actions_payload(
            message=message, channel_id=CHANNEL, action_id=action, user_id=ACTOR,
            trigger_id=self.slack.new_trigger_id(),
            response_url=self.slack.new_response_url(CHANNEL, message["ts"]),
        )  # fmt: skip
        await post_signed(self.http, f"{self.base}/slack/events", click, SECRET)
        if ANSWERS[action] is not None:  # typed into the modal the click opened
            for _ in range(500):
                if len(self.slack.views) > views:
                    break
                await asyncio.sleep(0.01)
            view = list(self.slack.views.values())[-1]
            values = {"answer": {"answer": ANSWERS[action]}}
            submit = view_submission_payload(view=view, user_id=ACTOR, values=values)
            await post_signed(self.http, f"{self.base}/slack/events", submit, SECRET)
        self.answered += 1


def _actions(message: JSON) -> list[str]:
    return [str(element.get("action_id")) for block in message.get("blocks") or []
            if block.get("type") == "actions" for element in block.get("elements", [])]  # fmt: skip


async def run_kit(args: argparse.Namespace, base: str, token: str) -> Path:
    """The kit's run against `base`; the path of its JUnit report."""
    env = {**os.environ, "TCK_BEARER": token, "TCK_JSONRPC_PATH": "/a2a",
           "PYTHONPATH": str(ROOT / "bench")}  # fmt: skip
    command = [
        args.kit_python, "run_tck.py", "--sut-host", base, "--transport", "jsonrpc,http_json",
        "--level", args.level, "--", "-p", "a2a_tck_plugin", "--webhook-host", "127.0.0.1",
        "-p", "no:cacheprovider",
    ]  # fmt: skip
    process = await asyncio.create_subprocess_exec(
        *command, cwd=args.kit, env=env, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await process.communicate()
    if args.verbose:
        print(out.decode(errors="replace"))
    return Path(args.kit) / "reports" / "junitreport.xml"


def binding_of(case: ET.Element) -> str:
    """Which binding a test case ran on, by its parameter or its module."""
    where = f"{case.get('classname', '')}::{case.get('name', '')}".lower()
    marks = (("grpc", "gRPC"), ("http_json", "HTTP+JSON"), ("jsonrpc", "JSON-RPC"),
             ("_rest", "HTTP+JSON"))  # fmt: skip
    for mark, binding in marks:
        if mark in where:
            return binding
    return "card"  # the AgentCard's own tests: no binding


def report(junit: Path) -> None:
    """Pass, fail and skip counts per binding (gRPC: not served, each of its tests skipped),
    then each test of JSON-RPC, HTTP+JSON or the card that did not pass, and why."""
    counts: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    others: list[str] = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        binding, outcome, why = binding_of(case), "passed", ""
        for kind in ("failure", "error", "skipped"):
            found = case.find(kind)
            if found is not None:
                outcome = "skipped" if kind == "skipped" else "failed"
                why = (found.get("message") or "").replace("\n", " ")[:160]
        counts[binding][outcome] += 1
        if outcome != "passed" and binding != "gRPC":
            name = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name', '')}"
            others.append(f"  {outcome:7} {name}  {why}")
    total: collections.Counter[str] = collections.Counter()
    for binding, counted in sorted(counts.items()):
        if binding != "gRPC":
            total.update(counted)
        print(f"{binding:10} passed {counted['passed']:3}  failed {counted['failed']:3}  "
              f"skipped {counted['skipped']:3}")  # fmt: skip
    print(f"{'served':10} passed {total['passed']:3}  failed {total['failed']:3}  "
          f"skipped {total['skipped']:3}  (JSON-RPC, HTTP+JSON and the card)")  # fmt: skip
    print("not passed:")
    print("\n".join(sorted(others)) or "  none")


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite+aiosqlite:///{Path(folder) / 'tck.db'}"
        await upgrade(url)
        store = await open_store(url)
        token, _ = await Tokens(DoorTables(store)).create("a2a-tck")
        await store.close()
        async with FakeSlack(users={ACTOR: "actor"}) as slack, FakeAnthropic() as model, \
                aiohttp.ClientSession() as http:  # fmt: skip
            slack.channels.add(CHANNEL)
            extra = {"HITL_A2A_DEFAULT_TO": f"slack:{CHANNEL}/{ACTOR}",
                     "HITL_WEBHOOK_ALLOW_PRIVATE": "1"}  # fmt: skip
            process, base = await start_service(url, slack, model, http, extra)
            person = Person(slack, http, base)
            answering = asyncio.create_task(person.run())
            try:
                junit = await run_kit(args, base, token)
            finally:
                answering.cancel()
                process.terminate()
                await process.wait()
            print(
                f"A2A TCK {args.kit_commit}, level {args.level}, against {base} "
                f"({person.answered} requests answered by the scripted person)"
            )
            report(junit)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kit", required=True, help="the kit's directory")
    parser.add_argument("--kit-python", required=True, help="a Python with the kit's deps")
    parser.add_argument("--kit-commit", default="357c4a8", help="the kit's commit, as told")
    parser.add_argument("--level", default="must", choices=["must", "should", "may"])
    parser.add_argument("--verbose", action="store_true", help="print the kit's own output")
    asyncio.run(main(parser.parse_args()))
