"""The audit log's hash chain, pure: a row's hash and the walk that checks a chain.

Each sealed row has a place (`chain_seq`: 1, 2, 3, ... with no gap), the hash of the row before
it (`prev_hash`; GENESIS for the first) and its own `hash`: SHA-256 over a canonical encoding
(sorted-key JSON) of its content, its place and `prev_hash`. Changing a row breaks its hash;
deleting one leaves a gap; moving one breaks the `prev_hash` of the row after it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

GENESIS = "0" * 64
# A row dated further back than this before the latest row sealed before it was not written
# when it says: it was inserted after the fact (workers' clocks and commits differ by less).
GRACE = timedelta(minutes=5)


@dataclass(frozen=True, slots=True)
class ChainRow:
    """An audit row as the chain sees it (`chain_seq`, `prev_hash`, `hash` None: unsealed)."""

    id: int
    at: datetime
    action: str
    request_id: str | None
    actor_id: str | None
    detail: dict[str, Any]
    chain_seq: int | None = None
    prev_hash: str | None = None
    hash: str | None = None

    def __str__(self) -> str:
        return (
            f"row id {self.id} (chain_seq {self.chain_seq}, {self.action}, {self.at.isoformat()})"
        )


def row_hash(row: ChainRow, chain_seq: int, prev_hash: str) -> str:
    content = {
        "id": row.id,
        "at": row.at.isoformat(),
        "action": row.action,
        "request_id": row.request_id,
        "actor_id": row.actor_id,
        "detail": row.detail,
        "chain_seq": chain_seq,
        "prev_hash": prev_hash,
    }
    encoded = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(encoded.encode()).hexdigest()


@dataclass(frozen=True)
class ChainReport:
    """What `audit verify` found: how many rows it walked and the first bad one, if any."""

    checked: int
    problem: str | None
    first_bad_id: int | None
    head_hash: str = GENESIS  # the last row's hash: keep it elsewhere to notice truncation

    @property
    def intact(self) -> bool:
        return self.problem is None

    def line(self) -> str:
        if self.problem is not None:
            return self.problem
        return f"{self.checked} rows checked, chain intact (head {self.head_hash[:16]})"


class ChainWalk:
    """Checks sealed rows fed in `chain_seq` order; stops at the first bad one."""

    def __init__(self, grace: timedelta = GRACE) -> None:
        self.grace = grace
        self.checked = 0
        self.prev_hash = GENESIS
        self.latest: datetime | None = None
        self.problem: str | None = None
        self.first_bad_id: int | None = None

    def step(self, row: ChainRow) -> bool:
        """Check `row`; False (and `problem` set) if it is the first bad one."""
        problem = self._problem(row)
        if problem is not None:
            self.problem = f"{row}: {problem}"
            self.first_bad_id = row.id
            return False
        self.checked += 1
        self.prev_hash = row.hash or GENESIS
        self.latest = row.at if self.latest is None else max(self.latest, row.at)
        return True

    def report(self) -> ChainReport:
        return ChainReport(self.checked, self.problem, self.first_bad_id, self.prev_hash)

    def _problem(self, row: ChainRow) -> str | None:
        expected = self.checked + 1
        if row.chain_seq != expected:
            last = (row.chain_seq or expected) - 1
            gap = f"{expected}" if last == expected else f"{expected} to {last}"
            return f"chain_seq {gap} missing before it: deleted"
        if row.prev_hash != self.prev_hash:
            return "prev_hash is not the hash of the row before it: a row was deleted or reordered"
        if row.hash != row_hash(row, expected, self.prev_hash):
            return "content changed since it was sealed (hash mismatch)"
        if self.latest is not None and row.at < self.latest - self.grace:
            return (
                f"dated {self.latest - row.at} before the row sealed before it: "
                "inserted after the fact"
            )
        return None
