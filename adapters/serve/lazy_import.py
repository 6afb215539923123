"""An SDK that `serve` does not need to be ready (MCP's, A2A's), imported once it is: in a
thread, so the event loop keeps answering meanwhile (the import takes the GIL in turns)."""

from __future__ import annotations

import asyncio
import importlib
import logging
from types import ModuleType

log = logging.getLogger(__name__)


async def import_after_ready(module: str, what: str) -> ModuleType:
    """`module`, imported in a thread; should that fail (two threads importing one module
    round can deadlock on the import locks), imported once more here, on the loop."""
    try:
        return await asyncio.to_thread(importlib.import_module, module)
    except Exception as err:
        log.info("%s: the SDK's import in a thread failed (%s); importing it here", what, err)
        return importlib.import_module(module)
