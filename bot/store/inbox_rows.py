"""The `inbox` table: interactions written before they are acked (bot/durable/inbox.py).

A row is inserted when a surface receives an interaction (its key: the signed request's, so a
replay of the same request finds it there), marked applied once the interaction has been
handed to the router (many at a time), and deleted some time after that. The mark is a
compare-and-set that says which rows it marked, so that whoever applies a left-over row claims
it first.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Executable, bindparam, delete, select, update
from sqlalchemy.dialects import postgresql, sqlite

from bot.records import InboxEntry
from bot.store.tables import inbox, unnested

MARK_APPLIED = (
    update(inbox)
    .where(inbox.c.key.in_(bindparam("b_keys", expanding=True)), inbox.c.applied_at.is_(None))
    .values(applied_at=bindparam("b_at"))
    .returning(inbox.c.key)
)
UNAPPLIED = (
    select(inbox.c.key, inbox.c.surface, inbox.c.payload, inbox.c.received_at)
    .where(
        inbox.c.applied_at.is_(None),
        inbox.c.received_at < bindparam("before"),
        inbox.c.surface == bindparam("surface"),
    )
    .order_by(inbox.c.received_at)
    .limit(bindparam("limit"))
)
PRUNE = delete(inbox).where(inbox.c.applied_at < bindparam("before"))


def insert_new(dialect: str) -> Executable:
    """INSERT … ON CONFLICT (key) DO NOTHING RETURNING key, spelled per dialect: the keys
    not known before come back."""
    dialect_insert: Any = postgresql.insert if dialect == "postgresql" else sqlite.insert
    statement: Executable = (
        dialect_insert(inbox).on_conflict_do_nothing(index_elements=[inbox.c.key])
    ).returning(inbox.c.key)
    return statement


INBOX_KEYS = ("key", "surface", "payload", "received_at", "applied_at")
_arrived = unnested("arrived", INBOX_KEYS, {key: inbox.c[key].type for key in INBOX_KEYS})
# PostgreSQL: a batch of any size in one (prepared) statement; the keys new to the inbox back.
RECEIVE_MANY = (
    postgresql.insert(inbox)
    .from_select(list(INBOX_KEYS), select(*(_arrived.c[key] for key in INBOX_KEYS)))
    .on_conflict_do_nothing(index_elements=[inbox.c.key])
    .returning(inbox.c.key)
)


def arrivals(
    surface: str, interactions: list[tuple[str, dict[str, Any] | None]], now: datetime
) -> list[dict[str, Any]]:
    """The rows of interactions arriving together; one handled before its ack (no payload)
    is applied already."""
    return [
        {
            "key": key,
            "surface": surface,
            "payload": payload,
            "received_at": now,
            "applied_at": now if payload is None else None,
        }
        for key, payload in interactions
    ]


def firsts(interactions: list[tuple[str, dict[str, Any] | None]], new: set[str]) -> list[bool]:
    """For each interaction, whether it is new: its key came back as inserted, and no earlier
    one of the same batch had it (a replay racing its original)."""
    first: list[bool] = []
    for key, _ in interactions:
        first.append(key in new)
        new.discard(key)
    return first


def receive(
    conn: Connection,
    statement: Executable,
    surface: str,
    interactions: list[tuple[str, dict[str, Any] | None]],
    now: datetime,
) -> list[bool]:
    """Every interaction in one statement (whatever arrived together); for each, whether it
    is new (a key seen before, or earlier in the same batch, is a replay)."""
    rows = arrivals(surface, interactions, now)
    new = {row.key for row in conn.execute(statement.values(rows))}  # type: ignore[attr-defined]
    return firsts(interactions, new)


def mark_applied(conn: Connection, keys: list[str], now: datetime) -> list[str]:
    return [row.key for row in conn.execute(MARK_APPLIED, {"b_keys": keys, "b_at": now})]


def unapplied(conn: Connection, surface: str, before: datetime, limit: int) -> list[InboxEntry]:
    values = {"surface": surface, "before": before, "limit": limit}
    return [
        InboxEntry(row.key, row.surface, row.payload or {}, row.received_at)
        for row in conn.execute(UNAPPLIED, values)
    ]
