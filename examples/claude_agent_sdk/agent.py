"""A Claude Agent SDK agent whose tool calls wait for a person: `can_use_tool`
(hitl_client.frameworks.claude_agent_sdk) asks them in Slack or Teams, through the bridge,
before each call Claude's permission rules do not already allow.

    pip install ./clients/python 'claude-agent-sdk>=0.1'   # from the repository's root
    HITL_URL=http://localhost:3000 HITL_TOKEN=hitl_... HITL_TO=slack:U0123ABCD \\
        python examples/claude_agent_sdk/agent.py

Claude is asked to write a release note into a fresh folder; its `Write` is shown to the
person as the bridge's approval gate: Approve lets it run, Edit runs it with the person's
content, Decline denies it with their reason, which Claude reads. The script prints Claude's
last word, then the file as written (or that nothing was).

The SDK drives the `claude` CLI (shipped inside the package), which talks to Anthropic:
set ANTHROPIC_API_KEY (or log the CLI in).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, ResultMessage

from hitl_client import HitlClient
from hitl_client.frameworks.claude_agent_sdk import can_use_tool

NOTE = "release-note.md"
PROMPT = (
    f"Write a one-line release note for payments v2 (payouts settle in one day) to {NOTE}, "
    "with the Write tool, then say what you did."
)


@dataclass(frozen=True)
class Outcome:
    said: str  # Claude's last word
    written: str | None  # the note as written, or None


async def run(client: HitlClient, to: str, folder: Path, *, model: str | None = None) -> Outcome:
    """Run Claude in `folder` until it is done, each tool call it may not make unasked
    decided by `to` through the bridge."""
    options = ClaudeAgentOptions(
        can_use_tool=can_use_tool(client, to=to),
        cwd=folder,
        model=model,
        setting_sources=[],  # no settings of the user's or the project's: every call is asked
    )
    said = ""
    async with ClaudeSDKClient(options) as claude:
        await claude.query(PROMPT)
        async for message in claude.receive_response():
            if isinstance(message, ResultMessage):
                said = message.result or ""
    note = folder / NOTE
    return Outcome(said, note.read_text() if note.exists() else None)


async def main() -> None:
    async with HitlClient(os.environ["HITL_URL"], os.environ["HITL_TOKEN"]) as client:
        with tempfile.TemporaryDirectory() as folder:
            outcome = await run(client, os.environ["HITL_TO"], Path(folder))
    print(outcome.said)
    print(outcome.written if outcome.written is not None else f"({NOTE} was not written)")


if __name__ == "__main__":
    asyncio.run(main())
