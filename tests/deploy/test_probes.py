"""The recipes' probes ask the running service what they mean to: every path a manifest probes
answers 200 on a worker that is ready, and the image's HEALTHCHECK command exits 0 on it and
not on a worker that cannot take work (its database read-only: /readyz says 503)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from tests.adapters.surfaces.slack.conftest import Env, StartEnv
from tests.deploy.test_dockerfile import health_command

ROOT = Path(__file__).resolve().parents[2]
DEPLOYMENT = yaml.safe_load((ROOT / "deploy" / "kubernetes" / "deployment.yaml").read_text())
PROBES = ["readinessProbe", "livenessProbe", "startupProbe"]


@pytest.mark.parametrize("probe", PROBES)
async def test_each_probed_path_answers_200_once_started(env: Env, probe: str) -> None:
    (container,) = DEPLOYMENT["spec"]["template"]["spec"]["containers"]
    path = container[probe]["httpGet"]["path"]
    async with env.http.get(f"{env.server.url}{path}") as response:
        assert response.status == 200, await response.text()


async def health_check(env: Env) -> tuple[int, str]:
    """The HEALTHCHECK command, run by this Python, with the port in HITL_PORT as in the image."""
    _, flag, code = health_command()
    port = str(urlsplit(env.server.url).port)
    process = await asyncio.create_subprocess_exec(
        sys.executable, flag, code, env={**os.environ, "HITL_PORT": port},
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, err.decode()


@pytest.mark.subprocess
async def test_the_image_health_check_passes_on_a_ready_worker(env: Env) -> None:
    assert await health_check(env) == (0, "")


@pytest.mark.subprocess
async def test_the_image_health_check_fails_on_a_worker_that_cannot_write(
    start_env: StartEnv, tmp_path: Path
) -> None:
    read_only = f"sqlite+aiosqlite:///file:{tmp_path / 'hitl.db'}?mode=ro&uri=true"
    env = await start_env(HITL_DATABASE_URL=read_only)
    status, said = await health_check(env)
    assert status == 1
    assert said == "not ready: HTTP Error 503: Service Unavailable\n"
