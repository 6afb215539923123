"""The audit lines a surface writes itself (the store writes those of requests and settles)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bot.records import AuditEntry, RequestRecord, RequestStore

ANSWER_REFUSED = "answer_refused"


async def record_refused_answer(
    store: RequestStore, request: RequestRecord, user_id: str, surface: str, **detail: Any
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
