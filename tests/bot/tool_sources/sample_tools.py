"""Python callables an agent file names as tools
(`python: tests.bot.tool_sources.sample_tools:...`)."""

from __future__ import annotations

import asyncio
import threading
from typing import Annotated, Literal

from pydantic import BaseModel, Field


def restart_service(
    service: Annotated[str, Field(description="The service to restart.")],
    mode: Literal["graceful", "hard"] = "graceful",
) -> str:
    """Restart a service."""
    return f"restarted {service} ({mode}) on {threading.current_thread().name}"


class Load(BaseModel):
    service: str
    requests_per_second: float


async def measure_load(service: str, window_seconds: int = 60) -> Load:
    """How busy a service is."""
    await asyncio.sleep(0)
    return Load(service=service, requests_per_second=window_seconds * 1.5)


def broken(service: str) -> str:
    raise RuntimeError("the restart script is missing")


def spread(*services: str) -> str:
    return ", ".join(services)


NOT_CALLABLE = 42
