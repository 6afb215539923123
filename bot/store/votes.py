"""The votes' store (bot.policies.tally.VoteBox) on a SqlStore: each method one transaction
running the SQL of bot/store/vote_rows.py."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.records import Vote
from bot.store import vote_rows
from bot.store.sql_store import SqlStore


class VoteTables:
    """Votes, on `store`: every worker reads the same rows, so any of them counts them."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store

    async def cast(self, vote: Vote, detail: Mapping[str, Any] | None = None) -> bool:
        """Write `vote` with its audit line (`vote.cast`, `detail` added to it); False if
        this person has voted on the request already."""
        return await self.store.write(vote_rows.cast, vote, dict(detail or {}))

    async def votes(self, request_id: str) -> list[Vote]:
        """The request's votes, oldest first."""
        return await self.store.read(vote_rows.votes_on, request_id)
