"""A tool the end-to-end tests gate (their agent file names it): it counts its runs."""

from __future__ import annotations

from typing import Any, Literal

RUNS: list[dict[str, Any]] = []


async def deploy(
    service: str, env: Literal["staging", "production"], token: str, replicas: int = 1
) -> str:
    """Deploy a service to an environment."""
    RUNS.append({"service": service, "env": env, "token": token, "replicas": replicas})
    return f"deployed {service} to {env} ({replicas} replicas)"
