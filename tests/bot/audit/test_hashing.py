"""The chain walk, pure: a chain built by hand verifies; each kind of damage is named."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from bot.audit.hashing import GENESIS, ChainRow, ChainWalk, row_hash

T0 = datetime(2026, 12, 1, tzinfo=UTC)


def chain(count: int) -> list[ChainRow]:
    rows, prev = [], GENESIS
    for n in range(1, count + 1):
        row = ChainRow(n, T0 + timedelta(seconds=n), "request.created", f"r{n}", "U1", {"n": n})
        digest = row_hash(row, n, prev)
        rows.append(dataclasses.replace(row, chain_seq=n, prev_hash=prev, hash=digest))
        prev = digest
    return rows


def walked(rows: list[ChainRow]) -> ChainWalk:
    walk = ChainWalk()
    for row in rows:
        if not walk.step(row):
            break
    return walk


def test_an_intact_chain() -> None:
    rows = chain(5)
    report = walked(rows).report()
    assert report.intact and report.checked == 5 and report.head_hash == rows[-1].hash


def test_the_hash_covers_content_place_and_predecessor() -> None:
    row = chain(1)[0]
    digest = row_hash(row, 1, GENESIS)
    assert row_hash(dataclasses.replace(row, detail={"n": 2}), 1, GENESIS) != digest
    assert row_hash(dataclasses.replace(row, actor_id="U2"), 1, GENESIS) != digest
    assert row_hash(row, 2, GENESIS) != digest
    assert row_hash(row, 1, "1" * 64) != digest
    # Key order is not content: the canonical encoding sorts keys.
    assert row_hash(dataclasses.replace(row, detail={"b": 1, "a": 2}), 1, GENESIS) == row_hash(
        dataclasses.replace(row, detail={"a": 2, "b": 1}), 1, GENESIS
    )


def test_damage_is_named_at_its_first_row() -> None:
    rows = chain(6)
    changed = [*rows[:2], dataclasses.replace(rows[2], detail={"n": 99}), *rows[3:]]
    walk = walked(changed)
    assert walk.first_bad_id == 3 and walk.checked == 2 and "hash mismatch" in str(walk.problem)
    gap = walked([*rows[:2], *rows[4:]])
    assert gap.first_bad_id == 5 and "chain_seq 3 to 4 missing" in str(gap.problem)
    late = rows[5]
    backdated = dataclasses.replace(late, at=T0 - timedelta(days=1))
    backdated = dataclasses.replace(backdated, hash=row_hash(backdated, 6, rows[4].hash or ""))
    walk = walked([*rows[:5], backdated])
    assert walk.first_bad_id == 6 and "inserted after the fact" in str(walk.problem)
