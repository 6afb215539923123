"""Where the copies of a request were posted: the rooms a policy's `deliver` adds to the
request's own (bot/policies/delivery.py), two of which may be on one surface (a Slack thread
and a Slack approvals channel). Keyed by request, surface and room; the request's own room's
message stays the request's `message_refs`."""

from __future__ import annotations

from typing import Any, Protocol


class CopyRefs(Protocol):
    """Copies' message references: bot.store.copies.CopyTables, or `MemoryCopies`."""

    async def keep(self, request_id: str, surface: str, room_id: str, ref: dict[str, Any]) -> None:
        """Record where `surface` posted the copy of the request in `room_id`."""
        ...

    async def ref(self, request_id: str, surface: str, room_id: str) -> dict[str, Any] | None:
        """Where the copy in `room_id` was posted; None if it was not."""
        ...


class MemoryCopies:
    """Copies' references in this process's memory (a surface without a SQL store)."""

    def __init__(self) -> None:
        self._refs: dict[tuple[str, str, str], dict[str, Any]] = {}

    async def keep(self, request_id: str, surface: str, room_id: str, ref: dict[str, Any]) -> None:
        self._refs[request_id, surface, room_id] = dict(ref)

    async def ref(self, request_id: str, surface: str, room_id: str) -> dict[str, Any] | None:
        return self._refs.get((request_id, surface, room_id))
