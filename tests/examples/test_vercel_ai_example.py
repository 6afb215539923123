"""examples/vercel_ai (the Vercel AI SDK, TypeScript), run as its README says against the real
`hitl-bridge serve` with the AI SDK's mock model scripted in the example: the tool's question
and the deploy's approval are asked in the fake Slack, and a decline reaches the model as the
tool's result (tests/clients/typescript/node.py plays the person)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from tests.clients.typescript.node import (
    ANSWER,
    DECLINED,
    NODE_TIMEOUT,
    PACKAGE,
    build,
    exclusive,
    service,
)
from tests.examples.readme import ROOT, port_of, serve_port, told

pytestmark = pytest.mark.subprocess


async def run_as_the_readme_says(env: dict[str, str]) -> str:
    """The README's run command, from the repository's root, with `env` for the service."""
    readme = told("vercel_ai")
    assert readme.install[:3] == ["npm", "ci", "--prefix"]
    assert set(readme.env) == {"HITL_URL", "HITL_TOKEN", "HITL_TO"}
    assert port_of(readme.env["HITL_URL"]) == serve_port()
    process = await asyncio.create_subprocess_exec(
        *readme.run, cwd=ROOT, env={**os.environ, **env},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), NODE_TIMEOUT)
    assert process.returncode == 0, out.decode() + err.decode()
    return out.decode()


async def test_the_tool_asks_the_person_and_the_approved_deploy_runs(tmp_path: Path) -> None:
    async with exclusive(), service(tmp_path) as running:
        build(PACKAGE)  # the client the example imports (its own build is `npm start`'s)
        printed = await run_as_the_readme_says(running.env)
        assert running.person.answered == ["AskUserQuestion", "requestApproval"]
    assert f'The engineer said "{ANSWER}"' in printed
    assert f'"deployed":true,"service":"payments","version":"v2","region":"{ANSWER}"' in printed


async def test_a_declined_deploy_is_the_tools_result_for_the_model(tmp_path: Path) -> None:
    async with exclusive(), service(tmp_path) as running:
        build(PACKAGE)
        running.person.declines.add("requestApproval")
        printed = await run_as_the_readme_says(running.env)
    assert f'"deployed":false,"declined":"{DECLINED}"' in printed
