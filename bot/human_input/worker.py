"""This process as the other workers on its database see it (bot/human_input/holding.py).

Its name, its store (None: the handler lives in memory only), how many pending requests it
holds, and the loop time until which the others surely see it alive (its heartbeat's doing).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import socket
from collections.abc import Mapping
from datetime import UTC, datetime

from bot.human_input.ledger import FOREIGN, HELD, Entry
from bot.human_input.ports import HandlerStore
from bot.records import RequestStatus, Settlement


def worker_name() -> str:
    """Unique per process: host, pid and a random part (pids are reused after restarts)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


# How long other workers wait for a silent holder before settling its requests themselves.
HOLD_SECONDS = 4.0


class Worker:
    """One worker's identity and hold: what every part settling or holding requests reads."""

    def __init__(
        self, worker_id: str | None, hold_seconds: float, store: HandlerStore | None
    ) -> None:
        self.id = worker_id or worker_name()
        self.hold_seconds = hold_seconds
        self.store = store
        self.holding = 0  # pending requests held here: the heartbeat runs while there are any
        self.alive_until = 0.0

    def attach(self, store: HandlerStore) -> None:
        """A store for a worker made without one (a Bridge adopting the handler): requests
        made before it stay in memory only, and settle there."""
        self.store = store

    def mark(self, entry: Entry, *, held: bool) -> None:
        """Mark a pending request as held here (this worker decides it) or by another."""
        if held and not entry.flags & HELD:
            self.holding += 1
        elif not held and entry.flags & HELD:
            self.holding -= 1
        flags = entry.flags & ~(HELD | FOREIGN)
        entry.flags = flags | (HELD if held else FOREIGN)

    def vouches(self) -> bool:
        """Whether the other workers surely see this one alive now (a recent heartbeat)."""
        return asyncio.get_running_loop().time() < self.alive_until

    def settlement(
        self,
        request_id: str,
        status: RequestStatus,
        result: str | None = None,
        reason: str | None = None,
        by: str | None = None,
        at: datetime | None = None,
        proposal: str | None = None,
        by_detail: Mapping[str, str] | None = None,
    ) -> Settlement:
        """The settle this worker asks for (now, unless `at`)."""
        return Settlement(
            request_id, status, at or datetime.now(UTC), result, reason, by,
            self.id, proposal, by_detail,
        )  # fmt: skip
