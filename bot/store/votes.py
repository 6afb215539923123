"""The `votes` table (the votes bot/policies/tally.py counts), and `VoteTables`
(bot.policies.tally.VoteBox) over it on a SqlStore, each method one transaction.

A vote is written with its audit line in one transaction. One per person and request (the
primary key): a second is refused, unless the first was of arguments that have changed since
(such a vote no longer counts, so the person may vote again): that one is replaced.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection, Executable, Row, bindparam, select, update
from sqlalchemy.dialects import postgresql, sqlite

from bot.records import Vote
from bot.store.journal import INSERT_AUDIT
from bot.store.sql_store import SqlStore
from bot.store.tables import votes

CAST = "vote.cast"  # the audit line of a vote

VOTES = (
    select(votes)
    .where(votes.c.request_id == bindparam("request_id"))
    .order_by(votes.c.at, votes.c.voter)
)
REPLACE_STALE = (
    update(votes)
    .where(
        votes.c.request_id == bindparam("b_request_id"),
        votes.c.voter == bindparam("b_voter"),
        votes.c.arguments_digest != bindparam("b_arguments_digest"),
    )
    .values(
        approve=bindparam("b_approve"),
        reason=bindparam("b_reason"),
        arguments_digest=bindparam("b_arguments_digest"),
        at=bindparam("b_at"),
    )
)


def vote_of(row: Row[Any]) -> Vote:
    return Vote(
        request_id=row.request_id,
        voter=row.voter,
        approve=bool(row.approve),
        arguments_digest=row.arguments_digest,
        at=row.at,
        reason=row.reason,
    )


def _values(vote: Vote) -> dict[str, Any]:
    return {
        "request_id": vote.request_id, "voter": vote.voter, "approve": vote.approve,
        "reason": vote.reason, "arguments_digest": vote.arguments_digest, "at": vote.at,
    }  # fmt: skip


def _insert_new(conn: Connection) -> Executable:
    """INSERT … ON CONFLICT (request_id, voter) DO NOTHING in the connection's dialect."""
    dialect_insert: Any = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
    statement: Executable = dialect_insert(votes).on_conflict_do_nothing(
        index_elements=[votes.c.request_id, votes.c.voter]
    )
    return statement


def cast(conn: Connection, vote: Vote, detail: Mapping[str, Any]) -> bool:
    """Write `vote` and its audit line; False (nothing written) if this person has voted on
    the request already, on the same arguments."""
    values = _values(vote)
    if conn.execute(_insert_new(conn), values).rowcount != 1:
        replaced = conn.execute(REPLACE_STALE, {f"b_{k}": v for k, v in values.items()})
        if replaced.rowcount != 1:
            return False
    said = {"approve": vote.approve, **({"reason": vote.reason} if vote.reason else {})}
    conn.execute(INSERT_AUDIT, {
        "at": vote.at,
        "action": CAST,
        "request_id": vote.request_id,
        "actor_id": vote.voter,
        "detail": {**said, "arguments_digest": vote.arguments_digest, **detail},
    })  # fmt: skip
    return True


def votes_on(conn: Connection, request_id: str) -> list[Vote]:
    """The request's votes, oldest first."""
    return [vote_of(row) for row in conn.execute(VOTES, {"request_id": request_id})]


class VoteTables:
    """Votes, on `store`: every worker reads the same rows, so any of them counts them."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store

    async def cast(self, vote: Vote, detail: Mapping[str, Any] | None = None) -> bool:
        """Write `vote` with its audit line (`vote.cast`, `detail` added to it); False if
        this person has voted on the request already."""
        return await self.store.write(cast, vote, dict(detail or {}))

    async def votes(self, request_id: str) -> list[Vote]:
        """The request's votes, oldest first."""
        return await self.store.read(votes_on, request_id)
