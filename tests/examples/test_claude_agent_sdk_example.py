"""examples/claude_agent_sdk/agent.py with the real Claude Agent SDK and the `claude` CLI it
ships, the CLI's model a scripted fake of the Anthropic API on loopback (tests/fakes/
anthropic_api.py; the CLI's other traffic turned off: traced, it connects to 127.0.0.1 only),
and the real bridge: Claude's `Write` is asked of the person in (fake) Slack through the
`can_use_tool` callback."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import claude_agent_sdk
import pytest

from examples.claude_agent_sdk import agent
from hitl_client import HitlClient
from tests.examples.bridge import TO, Answer, Asked, Decline, Edit, bridge
from tests.examples.readme import checked, run_as_told
from tests.fakes.anthropic_api import FakeAnthropic, Turn, reply, reply_text, tool_use_block

CLI = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
pytestmark = [
    pytest.mark.subprocess,  # the SDK starts the claude CLI
    pytest.mark.slow,  # a run of the CLI, a second or two
    pytest.mark.skipif(not CLI.exists() and shutil.which("claude") is None,
                       reason="no claude CLI: claude-agent-sdk ships none for this platform"),
]  # fmt: skip

WITHIN = 60.0  # seconds a run may take here: a bound on a hang, not a speed requirement
DRAFT = "Payments v2: payouts settle in one day.\n"
EDITED = "Payments v2: payouts settle within 24 hours.\n"


def claude_model(body: dict[str, Any]) -> Turn:
    """The model: asked with tools and no result yet, it writes the note; given the result,
    it repeats it (the CLI's other requests, without tools, get a word)."""
    results = [
        block for message in body.get("messages", []) if isinstance(message["content"], list)
        for block in message["content"] if block.get("type") == "tool_result"
    ]  # fmt: skip
    if results:
        content = results[-1].get("content")
        text = content if isinstance(content, str) else " ".join(b["text"] for b in content)
        return reply_text(f"Write: {text.split(chr(10))[0]}")
    if any(tool.get("name") == "Write" for tool in body.get("tools", [])):
        path = working_directory(body) / agent.NOTE
        return reply(tool_use_block("Write", {"file_path": str(path), "content": DRAFT}))
    return reply_text("ok")


def working_directory(body: dict[str, Any]) -> Path:
    """The folder the CLI runs in, as its prompt tells the model."""
    found = re.search(r"Primary working directory: ([^\s\\]+)", json.dumps(body))
    assert found is not None, "the CLI's prompt names no working directory"
    return Path(found.group(1))


@contextlib.asynccontextmanager
async def claude_on_loopback(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[dict[str, str]]:
    """The fake Anthropic API, and the environment that points the CLI at it (and its home,
    its settings, away from the user's): yields that environment."""
    with tempfile.TemporaryDirectory() as home:
        async with FakeAnthropic() as fake:
            fake.script(*[claude_model] * 20)
            env = {
                "ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "test",
                # A model the fake speaks the wire format of (the CLI's default sends
                # `system` turns among the messages, which the fake does not take).
                "ANTHROPIC_MODEL": "claude-sonnet-4-5",
                "HOME": home, "CLAUDE_CONFIG_DIR": str(Path(home) / ".claude"),
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
                "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1",
            }  # fmt: skip
            for name, value in env.items():
                monkeypatch.setenv(name, value)
            yield env


async def run_in_folder(client: HitlClient) -> agent.Outcome:
    with tempfile.TemporaryDirectory() as folder:
        return await asyncio.wait_for(agent.run(client, TO, Path(folder)), WITHIN)


def approver(asked: Asked) -> Answer:
    return Answer({"approved": True})


async def test_an_approved_write_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    async with (
        claude_on_loopback(monkeypatch), bridge(approver) as hitl,
        HitlClient(hitl.url, hitl.token) as client,
    ):  # fmt: skip
        outcome = await run_in_folder(client)
    [asked] = hitl.asked
    assert (asked.tool, asked.arguments["tool"]) == ("approveToolCall", "Write")
    assert asked.arguments["arguments"]["content"] == DRAFT
    assert outcome.written == DRAFT
    assert outcome.said.startswith("Write: File created successfully")


async def test_an_edited_write_runs_as_the_person_wrote_it(monkeypatch: pytest.MonkeyPatch) -> None:
    async with (
        claude_on_loopback(monkeypatch), bridge(lambda a: Edit({"content": EDITED})) as hitl,
        HitlClient(hitl.url, hitl.token) as client,
    ):  # fmt: skip
        outcome = await run_in_folder(client)
    assert outcome.written == EDITED


async def test_a_declined_write_never_runs_and_claude_reads_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with (
        claude_on_loopback(monkeypatch), bridge(lambda a: Decline("wait for the FAQ")) as hitl,
        HitlClient(hitl.url, hitl.token) as client,
    ):  # fmt: skip
        outcome = await run_in_folder(client)
    assert outcome.written is None
    assert outcome.said.startswith("Write: Declined by ")
    assert outcome.said.endswith(": wait for the FAQ")


async def test_the_readme_s_commands_run_the_agent_against_serve(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    readme = checked("claude_agent_sdk", "claude-agent-sdk")
    async with claude_on_loopback(monkeypatch) as claude, bridge(approver) as hitl:
        to_this_bridge = {"HITL_URL": hitl.url, "HITL_TOKEN": hitl.token, "HITL_TO": TO}
        ran = await run_as_told(readme.run, {**readme.env, **to_this_bridge, **claude})
    assert ran.status == 0, ran.err
    said, written = ran.out.split("\n", 1)
    assert said.startswith("Write: File created successfully")
    assert written == DRAFT + "\n"
