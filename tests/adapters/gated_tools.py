"""A tool the end-to-end tests gate (their agent file names it): it counts its runs. And what
the Slack and Teams tests of it share: the call, the agent file, the runs fixture (served by
tests/adapters/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest

RUNS: list[dict[str, Any]] = []

FINAL = "Deployed."
TOKEN = "s3cr3t-t0ken-value"
CALL = {"service": "api", "env": "production", "token": TOKEN, "replicas": 1}
AGENT_FILE = """\
tools:
  - python: tests.adapters.gated_tools:deploy
    approval: [deploy]
    redact: [token]
"""


async def deploy(
    service: str, env: Literal["staging", "production"], token: str, replicas: int = 1
) -> str:
    """Deploy a service to an environment."""
    RUNS.append({"service": service, "env": env, "token": token, "replicas": replicas})
    return f"deployed {service} to {env} ({replicas} replicas)"


@pytest.fixture
def runs() -> Iterator[list[dict[str, Any]]]:
    """The runs of `deploy` during one test (the gated tests' modules use it for every test)."""
    RUNS.clear()
    yield RUNS
    RUNS.clear()


def agent_file(folder: Path) -> dict[str, str]:
    """The service's environment for the agent file gating `deploy`, written in `folder`."""
    path = folder / "agent.yaml"
    path.write_text(AGENT_FILE)
    return {"HITL_AGENT_FILE": str(path)}
