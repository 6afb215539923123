"""The MCP door's fixtures: a bridge serving it on loopback (tests/adapters/doors/mcp/served.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.adapters.doors.mcp.served import Served, served


@pytest.fixture
async def bridge(tmp_path: Path) -> AsyncIterator[Served]:
    async with served(tmp_path) as running:
        yield running
