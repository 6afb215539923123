"""The TypeScript client's side of its tests: the package (clients/typescript) built with its
own `tsc`, and the real `hitl-bridge serve` (a worker process, tests/adapters/workers.py) with
a person in the fake Slack who answers each request the moment it is posted, as its words ask.

The Node tests (clients/typescript/test/) and the Vercel AI SDK example run as processes
against that service, told where it is by HITL_URL, HITL_TOKEN and HITL_TO. They need no hook
into the person: what they ask says how it is answered (`Person.answer`).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import shutil
import subprocess
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bot.doors.tokens import Tokens
from bot.store.doors import DoorTables
from tests.adapters.workers import (
    ALICE,
    CHANNEL,
    ROOT,
    Cluster,
    Worker,
    cluster,
    has_actions,
    request_id_of,
)
from tests.fakes.slack_api import TEAM_ID
from tests.fakes.slack_signing import view_submission_payload

PACKAGE = ROOT / "clients" / "typescript"
EXAMPLE = ROOT / "examples" / "vercel_ai"
TO = f"slack:{CHANNEL}/{ALICE}"
IDLE = 3600.0  # the person waits for the next request this long: the test ends it sooner
NODE_TIMEOUT = 120.0  # a Node run takes seconds; only a hung one reaches this

# What the person answers, by tool; words in a request change it (see `Person.answer`).
ANSWER = "Blue, please"
DECLINED = "not on a Friday"
FORM = {"name": "Ada", "age": "36", "email": "ada@example.com"}
LEFT_ALONE = "nobody answers"  # a request whose text says this is never answered
DECLINE = "decline"  # a request whose text says this is declined, with DECLINED


def npm_ready(folder: Path) -> Path:
    """`folder`'s installed packages, or the test fails saying how to install them."""
    if shutil.which("node") is None or not (folder / "node_modules").is_dir():
        pytest.fail(f"{folder.relative_to(ROOT)} is not installed: run `make install-dev`")
    return folder / "node_modules" / ".bin"


@contextlib.asynccontextmanager
async def exclusive() -> AsyncIterator[None]:
    """The packages' builds to this test alone until it exits: tsc rewrites every file of dist/
    (the client's, the example's `npm start` its own), which a test running beside it on
    another pytest-xdist worker would read half-written."""
    with (npm_ready(PACKAGE).parent / ".tests.lock").open("w") as lock:
        await asyncio.to_thread(fcntl.flock, lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def build(folder: Path) -> None:
    """Compile `folder`'s TypeScript with its own tsc (strict; a type error fails the test)."""
    tsc = npm_ready(folder) / "tsc"
    done = subprocess.run([str(tsc), "-p", str(folder)], capture_output=True, text=True,
                          timeout=NODE_TIMEOUT, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


async def node(*args: str, cwd: Path, env: Mapping[str, str]) -> tuple[int, str]:
    """Run `node args` to its end; (exit code, what it printed, stdout and stderr as one)."""
    process = await asyncio.create_subprocess_exec(
        "node", *args, cwd=cwd, env={**os.environ, **env},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    try:
        async with asyncio.timeout(NODE_TIMEOUT):
            out, _ = await process.communicate()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    return process.returncode or 0, out.decode(errors="replace")


@dataclass
class Person:
    """Alice in Slack: answers each request of the channel once it is posted, by its tool —
    AskUserQuestion with ANSWER, an approval with Approve, the second option, the form with
    FORM, a PDF, Confirm — and declines (with DECLINED) one whose text says DECLINE, or whose
    tool is in `declines`; one whose text says LEFT_ALONE stays unanswered."""

    cluster: Cluster
    worker: Worker
    seen: set[str] = field(default_factory=set)
    answered: list[str] = field(default_factory=list)  # the tools of those answered, in order
    views: int = 0  # the modals opened before the last click
    declines: set[str] = field(default_factory=set)  # tools whose every request is declined

    async def run(self) -> None:
        slack = self.cluster.slack
        while True:
            message = await slack.wait_for(self._next, IDLE)
            request_id = request_id_of(message)
            self.seen.add(request_id)
            record = await self.cluster.store.get_request(request_id)
            assert record is not None
            words = str(record.arguments).lower()
            if LEFT_ALONE in words:
                continue
            if DECLINE in words or record.tool_name in self.declines:
                await self._click(message, "hitl_decline")
                await self._submit({"reason": {"reason": DECLINED}})
            else:
                await self.answer(message, record.tool_name, record.arguments)
            self.answered.append(record.tool_name)

    def _next(self) -> dict[str, Any]:
        """The oldest live request message of the channel not yet seen ({} if none is)."""
        for message in self.cluster.slack.messages(CHANNEL):
            if has_actions(message) and request_id_of(message) not in self.seen:
                return message
        return {}

    async def answer(self, message: dict[str, Any], tool: str, arguments: Any) -> None:
        if tool == "AskUserQuestion":
            await self._click(message, "hitl_answer")
            await self._submit({"answer": {"answer": ANSWER}})
        elif tool == "selectOption":
            await self._click(message, "hitl_choose_1")
        elif tool == "collectUserData":
            await self._click(message, "hitl_submit")
            names = [f["name"] for f in arguments["fields"]]
            await self._submit({name: {name: FORM[name]} for name in names})
        elif tool == "uploadFile":
            await self._click(message, "hitl_submit")
            await self._submit({"file": {"file": {"type": "file_input", "files": [self._pdf()]}}})
        elif tool == "confirmAction":
            await self._click(message, "hitl_confirm")
        else:  # requestApproval, approveToolCall
            await self._click(message, "hitl_approve")

    async def _click(self, message: dict[str, Any], action_id: str) -> None:
        self.views = len(self.cluster.slack.views)
        await self.cluster.click(self.worker, message, action_id)

    async def _submit(self, values: Mapping[str, Mapping[str, Any]]) -> None:
        """Submit the modal the last click opened."""
        slack = self.cluster.slack
        await slack.wait_for(lambda: len(slack.views) > self.views, IDLE)
        view = list(slack.views.values())[-1]
        payload = view_submission_payload(view=view, user_id=ALICE, values=values)
        await self.cluster.post(self.worker, payload)

    def _pdf(self) -> dict[str, Any]:
        file_id, name = f"F0PDF{len(self.answered):05d}", "contract.pdf"
        file = self.cluster.slack.add_file(file_id, name, b"%PDF-1.7 fake",
                                           mimetype="application/pdf")  # fmt: skip
        url = f"{self.cluster.slack.url}/files-pri/{TEAM_ID}-{file_id}/{name}"
        return {**file, "url_private": url, "url_private_download": url}


@dataclass
class Service:
    """The running service, the person answering there, and how a Node process finds it."""

    cluster: Cluster
    worker: Worker
    person: Person
    token: str
    webhook_secret: str

    @property
    def env(self) -> dict[str, str]:
        return {"HITL_URL": self.worker.url, "HITL_TOKEN": self.token, "HITL_TO": TO,
                "HITL_WEBHOOK_SECRET": self.webhook_secret}  # fmt: skip


@contextlib.asynccontextmanager
async def service(folder: Path) -> AsyncIterator[Service]:
    """`hitl-bridge serve` on a SQLite file in `folder`, an API token, and the person."""
    async with cluster(f"sqlite+aiosqlite:///{folder / 'hitl.db'}", folder) as running:
        running.slack.channels.add(CHANNEL)
        plain, token = await Tokens(DoorTables(running.store)).create("ts-client")
        worker = await running.start_worker("ts", HITL_WEBHOOK_ALLOW_PRIVATE=1)
        person = Person(running, worker)
        answering = asyncio.create_task(person.run())
        try:
            yield Service(running, worker, person, plain, token.webhook_secret)
        finally:
            answering.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await answering
