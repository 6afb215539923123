"""bot/store/votes.py: one vote per person and request, each with its audit line, on both
dialects; a vote of arguments that have changed since may be given again."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.records import PendingInput, Vote
from bot.store import SqlStore
from bot.store.votes import VoteTables


async def ask(store: SqlStore, request_id: str) -> None:
    await store.create_request(PendingInput(request_id, "requestApproval", {"action": "a"}))


async def test_one_vote_per_person_each_audited(store: SqlStore) -> None:
    await ask(store, "r1")
    tables = VoteTables(store)
    now = datetime.now(UTC)
    assert await tables.cast(Vote("r1", "bob", True, "d1", now), {"surface": "slack"})
    assert not await tables.cast(Vote("r1", "bob", True, "d1", now + timedelta(seconds=1)))
    later = now + timedelta(seconds=2)
    assert await tables.cast(Vote("r1", "carol", False, "d1", later, reason="not today"))
    assert await tables.votes("r1") == [
        Vote("r1", "bob", True, "d1", now),
        Vote("r1", "carol", False, "d1", later, reason="not today"),
    ]
    assert await tables.votes("r2") == []
    cast = [e for e in await store.list_audit(request_id="r1") if e.action == "vote.cast"]
    assert [(e.actor_id, e.detail) for e in reversed(cast)] == [
        ("bob", {"approve": True, "arguments_digest": "d1", "surface": "slack"}),
        ("carol", {"approve": False, "reason": "not today", "arguments_digest": "d1"}),
    ]


async def test_a_vote_on_changed_arguments_replaces_the_stale_one(store: SqlStore) -> None:
    await ask(store, "r1")
    tables = VoteTables(store)
    now = datetime.now(UTC)
    assert await tables.cast(Vote("r1", "bob", True, "before", now))
    again = Vote("r1", "bob", False, "after", now + timedelta(seconds=1), reason="changed")
    assert await tables.cast(again)
    assert not await tables.cast(Vote("r1", "bob", True, "after", now + timedelta(seconds=2)))
    assert await tables.votes("r1") == [again]
