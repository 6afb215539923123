"""examples/curl/: the README's commands, run as it says against the real service on
loopback, print the request answered (or declined) by the person in (fake) Slack."""

from __future__ import annotations

import asyncio
import json
import os
import shutil

import pytest

from tests.examples.bridge import TO, Answer, Asked, Decline, bridge
from tests.examples.readme import PATIENCE, ROOT, port_of, serve_port, told

pytestmark = [
    pytest.mark.subprocess,  # the README's commands run as processes
    pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed"),
]


async def run_session(person: Answer | Decline) -> tuple[dict[str, object], list[Asked]]:
    readme = told("curl")
    assert readme.install == ["chmod", "+x", "examples/curl/session.sh"]
    assert port_of(readme.env["HITL_URL"]) == serve_port()
    async with bridge(lambda asked: person) as hitl:
        env = {**os.environ, **readme.env, "HITL_URL": hitl.url, "HITL_TOKEN": hitl.token,
               "HITL_TO": TO}  # fmt: skip
        process = await asyncio.create_subprocess_exec(
            "sh", *readme.run, cwd=ROOT, env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(process.communicate(), PATIENCE)
    assert process.returncode == 0, err.decode()
    assert err.decode().startswith("asked: request ")
    request: dict[str, object] = json.loads(out)
    return request, hitl.asked


async def test_the_session_prints_the_approval() -> None:
    request, asked = await run_session(Answer({"approved": True}))
    assert [(a.tool, a.to) for a in asked] == [("requestApproval", TO)]
    assert (request["status"], request["answer"]) == ("answered", {"approved": True})


async def test_the_session_prints_a_decline_with_its_reason() -> None:
    request, _ = await run_session(Decline("Not on a Friday"))
    assert (request["status"], request["reason"]) == ("declined", "Not on a Friday")
