"""What the store keeps beside requests: the audit log, agent transcripts and once-only claims."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Executable, Row, bindparam, delete, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite

from bot.audit.redaction import redact
from bot.records import AuditEntry
from bot.store.tables import audit, claims, health, requests, transcripts

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
# The readiness probe's one row (migration 0005 inserts it).
HEALTH_ROW = 1
TOUCH_HEALTH = (
    update(health)
    .where(health.c.id == HEALTH_ROW)
    .values(checked_at=bindparam("at"), checked_by=bindparam("by"))
)
INSERT_HEALTH = insert(health)


def upserts(dialect: str) -> tuple[Executable, Executable]:
    """The transcript upsert and the claim insert: ON CONFLICT, spelled per dialect."""
    dialect_insert: Any = postgresql.insert if dialect == "postgresql" else sqlite.insert
    transcript = dialect_insert(transcripts).values(
        {name: bindparam(name) for name in ("room_id", "channel_id", "messages", "updated_at")}
    )
    save_transcript = transcript.on_conflict_do_update(
        index_elements=[transcripts.c.room_id, transcripts.c.channel_id],
        set_={
            "messages": transcript.excluded.messages,
            "updated_at": transcript.excluded.updated_at,
        },
    )
    claim = dialect_insert(claims).on_conflict_do_nothing(index_elements=[claims.c.key])
    return save_transcript, claim


@dataclass(frozen=True, slots=True)
class AuditSearch:
    """Which audit lines to list: of one request, by one actor, about tools whose name
    matches a glob (`*` any characters, `?` one; any case), at or after a moment. Unset: any."""

    request_id: str | None = None
    actor_id: str | None = None
    tool: str | None = None
    since: datetime | None = None


def list_audit_query(where: AuditSearch, limit: int) -> Executable:
    """The latest `limit` lines `where` selects, newest first. A tool glob matches the lines
    of requests of those tools (joined on the request: an audit line holds no tool name)."""
    query = select(audit).order_by(audit.c.id.desc()).limit(limit)
    if where.request_id is not None:
        query = query.where(audit.c.request_id == where.request_id)
    if where.actor_id is not None:
        query = query.where(audit.c.actor_id == where.actor_id)
    if where.since is not None:
        query = query.where(audit.c.at >= where.since)
    if where.tool is not None:
        tools = select(requests.c.id).where(requests.c.tool_name.ilike(like(where.tool), "\\"))
        query = query.where(audit.c.request_id.in_(tools))
    return query


def like(glob: str) -> str:
    """A glob (`*`, `?`) as a LIKE pattern escaped with a backslash: a `%` or `_` in the
    glob is itself, not a wildcard."""
    escaped = glob.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped.replace("*", "%").replace("?", "_")


def claim(conn: Connection, statement: Executable, key: str, now: datetime, prune: bool) -> bool:
    if conn.execute(statement, {"key": key, "claimed_at": now}).rowcount != 1:
        return False
    if prune:
        conn.execute(PRUNE_CLAIMS, {"before": now - CLAIM_RETENTION})
    return True


def touch_health(conn: Connection, at: datetime, by: str | None) -> None:
    """Rewrite the health row (put it back if someone deleted it): a write, cheap and bounded."""
    if conn.execute(TOUCH_HEALTH, {"at": at, "by": by}).rowcount != 1:
        conn.execute(INSERT_HEALTH, {"id": HEALTH_ROW, "checked_at": at, "checked_by": by})


def audit_values(entry: AuditEntry, secret: frozenset[str] = frozenset()) -> dict[str, Any]:
    """An audit row's values, `secret` keys redacted from its detail at any depth."""
    return {
        "at": entry.at,
        "action": entry.action,
        "request_id": entry.request_id,
        "actor_id": entry.actor_id,
        "detail": redact(entry.detail, secret),
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
