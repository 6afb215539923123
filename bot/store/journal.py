"""What the store keeps beside requests: the audit log, agent transcripts and once-only claims."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Executable, Row, bindparam, delete, insert, select
from sqlalchemy.dialects import postgresql, sqlite

from bot.records import AuditEntry
from bot.store.tables import audit, claims, transcripts

# A claim only has to outlive redeliveries of its event (Slack retries within minutes); older
# claims are deleted every CLAIM_PRUNE_EVERY claims so the table stays small.
CLAIM_RETENTION = timedelta(days=1)
CLAIM_PRUNE_EVERY = 1000

INSERT_AUDIT = insert(audit)
LOAD_TRANSCRIPT = select(transcripts.c.messages).where(
    transcripts.c.room_id == bindparam("room_id"),
    transcripts.c.channel_id == bindparam("channel_id"),
)
PRUNE_CLAIMS = delete(claims).where(claims.c.claimed_at < bindparam("before"))


def upserts(dialect: str) -> tuple[Executable, Executable]:
    """The transcript upsert and the claim insert: ON CONFLICT, spelled per dialect."""
    dialect_insert: Any = postgresql.insert if dialect == "postgresql" else sqlite.insert
    transcript = dialect_insert(transcripts)
    save_transcript = transcript.on_conflict_do_update(
        index_elements=[transcripts.c.room_id, transcripts.c.channel_id],
        set_={
            "messages": transcript.excluded.messages,
            "updated_at": transcript.excluded.updated_at,
        },
    )
    claim = dialect_insert(claims).on_conflict_do_nothing(index_elements=[claims.c.key])
    return save_transcript, claim


def list_audit_query(request_id: str | None, limit: int) -> Executable:
    query = select(audit).order_by(audit.c.id.desc()).limit(limit)
    return query if request_id is None else query.where(audit.c.request_id == request_id)


def claim(conn: Connection, statement: Executable, key: str, now: datetime, prune: bool) -> bool:
    if conn.execute(statement, {"key": key, "claimed_at": now}).rowcount != 1:
        return False
    if prune:
        conn.execute(PRUNE_CLAIMS, {"before": now - CLAIM_RETENTION})
    return True


def audit_values(entry: AuditEntry) -> dict[str, Any]:
    return {
        "at": entry.at,
        "action": entry.action,
        "request_id": entry.request_id,
        "actor_id": entry.actor_id,
        "detail": entry.detail,
    }


def audit_entry(row: Row[Any]) -> AuditEntry:
    return AuditEntry(
        action=row.action,
        at=row.at,
        request_id=row.request_id,
        actor_id=row.actor_id,
        detail=row.detail or {},
        id=row.id,
    )
