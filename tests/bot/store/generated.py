"""Requests and their audit rows made in bulk (one executemany each), as the store writes them:
for tests of the audit log on thousands of rows."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, insert

from bot.store import SqlStore
from bot.store.tables import audit, requests

TOOLS = ("deploy", "rollback", "requestApproval", "confirmAction")
ROOMS = tuple(f"slack:C{n}:1.0" for n in range(5))
ACTORS = tuple(f"U{n:02d}" for n in range(10))
ENDINGS = ("resolved", "rejected", "timed_out", "cancelled", "pending")
START = datetime(2026, 11, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Generated:
    """Request number `n`'s values: what the filters are checked against."""

    n: int

    @property
    def id(self) -> str:
        return f"gen-{self.n:06d}"

    @property
    def tool(self) -> str:
        return TOOLS[self.n % len(TOOLS)]

    @property
    def room(self) -> str:
        return ROOMS[self.n % len(ROOMS)]

    @property
    def actor(self) -> str:
        return ACTORS[self.n % len(ACTORS)]

    @property
    def status(self) -> str:
        return ENDINGS[(self.n // 3) % len(ENDINGS)]

    @property
    def at(self) -> datetime:  # ten days, in order: one request a minute and a bit
        return START + timedelta(seconds=self.n * 86.4)


def _rows(wanted: list[Generated]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    request_rows, audit_rows = [], []
    for one in wanted:
        settled = one.status != "pending"
        request_rows.append({
            "id": one.id, "tool_name": one.tool, "arguments": {"n": one.n}, "room_id": one.room,
            "tool_call_id": f"toolu_{one.n}", "channel_id": "slack", "channel_type": "ai",
            "actor_id": one.actor, "detached": False, "status": one.status,
            "result": '{"ok":true}' if one.status == "resolved" else None, "reason": None,
            "settled_by": one.actor if settled else None,
            "settled_at": one.at + timedelta(seconds=30) if settled else None,
            "created_at": one.at, "expires_at": None, "message_refs": {},
        })  # fmt: skip
        audit_rows.append({
            "at": one.at, "action": "request.created", "request_id": one.id,
            "actor_id": one.actor,
            "detail": {"tool_name": one.tool, "room_id": one.room, "arguments": {"n": one.n}},
        })  # fmt: skip
        if settled:
            audit_rows.append({
                "at": one.at + timedelta(seconds=30), "action": f"request.{one.status}",
                "request_id": one.id, "actor_id": one.actor, "detail": {},
            })  # fmt: skip
    return request_rows, audit_rows


async def generate(store: SqlStore, count: int) -> list[Generated]:
    """`count` requests, settled as `Generated.status` says, with their audit rows (unsealed)."""
    made = [Generated(n) for n in range(count)]
    request_rows, audit_rows = _rows(made)

    def write(conn: Connection) -> None:
        conn.execute(insert(requests), request_rows)
        conn.execute(insert(audit), audit_rows)

    await store.write(write)
    return made
