"""The audit log's chain in SQL: sealing unsealed rows, and reading sealed ones in chain order.

Rows are inserted without their place in the chain (the writers' hot path stays one INSERT);
`seal` gives the oldest unsealed rows theirs, under a lock so that two workers sealing at once
extend one chain: PostgreSQL's transaction-scoped advisory lock (per schema), SQLite's write
lock (every writer begins IMMEDIATE). Places are a counter of their own, not the ids: on
PostgreSQL a lower id can commit after a higher one, and is then simply sealed later.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Row, Select, bindparam, func, select, update

from bot.audit.hashing import GENESIS, ChainRow, row_hash
from bot.store.tables import audit

SEAL_BATCH = 2000  # rows per sealing transaction: short enough not to hold the lock long
CHAIN_LOCK = 0x68697470  # the advisory lock's first key ("hitp"); the second is the schema's
LOCK_CHAIN = select(func.pg_advisory_xact_lock(CHAIN_LOCK, func.hashtext(func.current_schema())))

CONTENT = (audit.c.id, audit.c.at, audit.c.action, audit.c.request_id, audit.c.actor_id,
           audit.c.detail)  # fmt: skip
HEAD = (
    select(audit.c.chain_seq, audit.c.hash)
    .where(audit.c.chain_seq.is_not(None))
    .order_by(audit.c.chain_seq.desc())
    .limit(1)
)
UNSEALED: Select[Any] = (
    select(*CONTENT).where(audit.c.chain_seq.is_(None)).order_by(audit.c.id).limit(bindparam("n"))
)
ANY_UNSEALED = select(audit.c.id).where(audit.c.chain_seq.is_(None)).limit(1)
SEAL = (
    update(audit)
    .where(audit.c.id == bindparam("b_id"))
    .values(chain_seq=bindparam("b_seq"), prev_hash=bindparam("b_prev"), hash=bindparam("b_hash"))
)
SEALED_AFTER: Select[Any] = (
    select(*CONTENT, audit.c.chain_seq, audit.c.prev_hash, audit.c.hash)
    .where(audit.c.chain_seq > bindparam("after"))
    .order_by(audit.c.chain_seq)
    .limit(bindparam("n"))
)


def chain_row(row: Row[Any]) -> ChainRow:
    mapping = row._mapping
    return ChainRow(
        id=row.id, at=row.at, action=row.action, request_id=row.request_id,
        actor_id=row.actor_id, detail=row.detail or {}, chain_seq=mapping.get("chain_seq"),
        prev_hash=mapping.get("prev_hash"), hash=mapping.get("hash"),
    )  # fmt: skip


def seal(conn: Connection, limit: int = SEAL_BATCH) -> int:
    """Seal up to `limit` of the oldest unsealed rows after the chain's head; how many."""
    if conn.dialect.name == "postgresql":
        conn.execute(LOCK_CHAIN)  # held to commit: the next sealer reads the head we leave
    rows = conn.execute(UNSEALED, {"n": limit}).all()
    if not rows:
        return 0
    head = conn.execute(HEAD).first()
    seq, prev = (0, GENESIS) if head is None else (int(head.chain_seq), str(head.hash))
    sealed = []
    for row in rows:
        seq += 1
        digest = row_hash(chain_row(row), seq, prev)
        sealed.append({"b_id": row.id, "b_seq": seq, "b_prev": prev, "b_hash": digest})
        prev = digest
    conn.execute(SEAL, sealed)
    return len(sealed)


def any_unsealed(conn: Connection) -> bool:
    """Whether there is anything to seal: a read, so an idle sealer takes no lock."""
    return conn.execute(ANY_UNSEALED).first() is not None


def sealed_after(conn: Connection, after: int, limit: int) -> list[ChainRow]:
    """Up to `limit` sealed rows after place `after`, in chain order."""
    return [chain_row(row) for row in conn.execute(SEALED_AFTER, {"after": after, "n": limit})]
