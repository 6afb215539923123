"""The audit lines a surface writes itself (the store writes those of requests and settles)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Protocol

from bot.human_input import RequestRows
from bot.records import AuditEntry, RequestRecord

ANSWER_REFUSED = "answer_refused"


class AuditLog(Protocol):
    """The store's port for the audit log (the `audit_log` table, append-only)."""

    async def append_audit(self, entry: AuditEntry) -> None: ...

    async def list_audit(
        self,
        *,
        request_id: str | None = None,
        actor_id: str | None = None,
        tool: str | None = None,
        since: datetime | None = None,
        limit: int = 100,
    ) -> list[AuditEntry]:
        """The latest `limit` audit lines, newest first: of one request, by one actor, about
        the requests of tools matching a glob (`*`, `?`), at or after `since`, when given."""
        ...


class AuditedRequests(RequestRows, AuditLog, Protocol):
    """Requests' rows and the audit log: for those who read requests and audit what they
    refuse (the router, the `hitl` commands)."""


async def record_refused_answer(
    store: AuditLog, request: RequestRecord, user_id: str, surface: str, **detail: Any
) -> None:
    """Someone who may not answer `request` tried to: who, on which surface, whose it was."""
    entry = AuditEntry(
        action=ANSWER_REFUSED,
        at=datetime.now(UTC),
        request_id=request.id,
        actor_id=user_id,
        detail={"surface": surface, "request_actor": request.actor_id, **detail},
    )
    await store.append_audit(entry)
