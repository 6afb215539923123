"""PostgreSQL's group commit: calls of one kind that queue up share one statement.

A create or a settle is one statement in autocommit (bot/store/request_rows.py). When all of
the held connections are busy, the calls that arrive queue for one; the first of them to get
it takes every call of its kind waiting then (up to `limit`, one per request) and sends them
as one statement whose values are arrays, column by column (`unnest`): one round trip and one
commit for all of them. A lone call never waits for company: with a connection free it goes
alone, as the single statement. Each caller hears after the commit that made its write
durable. If the shared statement fails (one call's row breaks a constraint, say), each call is
run alone so that only the failing one sees its error; if it fails for an outage (its outcome
unknown), every call gets that error.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Executable

from bot.store.outages import unavailable

Rows = list[dict[str, Any]]
Run = Callable[[Executable, Mapping[str, Any]], Awaitable[Rows]]


@dataclass(slots=True)
class Call:
    values: Mapping[str, Any]
    future: asyncio.Future[Rows]
    taken: bool = False  # by the caller that sends it (its own, or another's statement)


@dataclass
class Group:
    """One kind of call: alone, `one` with the call's values; together, `many` with
    `arrays` (each the list of those values over the calls; named `<key>s`) and `shared`
    (values every call has alike, taken from the first). `many` returns a row per call that
    wrote, `key` its column naming the call (the request's id), as `one` returns its rows."""

    one: Executable
    many: Executable
    key: str
    arrays: tuple[str, ...]
    shared: tuple[str, ...] = ()
    limit: int = 100
    queue: deque[Call] = field(default_factory=deque)

    def take(self, first: Call) -> list[Call]:
        """`first` and the calls queued behind it, at most one per key, up to `limit`."""
        first.taken = True
        batch, keys = [first], {first.values[self.key]}
        left: deque[Call] = deque()
        while self.queue:
            call = self.queue.popleft()
            if call.taken:
                continue
            if len(batch) < self.limit and call.values[self.key] not in keys:
                call.taken = True
                batch.append(call)
                keys.add(call.values[self.key])
            else:
                left.append(call)
        self.queue = left
        return batch

    def values_of(self, batch: Sequence[Call]) -> dict[str, Any]:
        values = {f"{name}s": [call.values[name] for call in batch] for name in self.arrays}
        values.update({name: batch[0].values[name] for name in self.shared})
        return values


async def run_grouped(group: Group, calls: list[Call], run: Run) -> None:
    """Send `calls` (taken from `group`'s queue) and answer each of them."""
    if len(calls) > 1:
        try:
            rows = await run(group.many, group.values_of(calls))
        except Exception as err:
            if unavailable(err):  # the database is away, or its outcome unknown: not again
                for call in calls:
                    _fail(call, err)
                return
            # Else one call's row broke something: each alone, below, gets its own outcome.
        else:
            by_key: dict[Any, Rows] = {}
            for row in rows:
                by_key.setdefault(row[group.key], []).append(row)
            for call in calls:
                _answer(call, by_key.get(call.values[group.key], []))
            return
    for call in calls:
        try:
            _answer(call, await run(group.one, call.values))
        except Exception as err:
            _fail(call, err)


def _fail(call: Call, err: Exception) -> None:
    if not call.future.done():
        call.future.set_exception(err)


def _answer(call: Call, rows: Rows) -> None:
    if not call.future.done():
        call.future.set_result(rows)
