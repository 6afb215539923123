"""The `webhook_deliveries` table, and `WebhookTables` over it on a SqlStore (each method one
transaction) for the sender, adapters/doors/api/webhooks.py. A request has one delivery to its
callback URL and one to each of its A2A push configs (`push_config`).

A delivery is claimed for one attempt with a compare-and-set on its attempt count and lease,
so two workers never send the same attempt at once; a worker that dies mid-attempt leaves a
lease that lapses, and the row is claimed again. An attempt's outcome is written with its audit
lines in one transaction, and only by the worker still holding that attempt.

Fairness is the sender's (adapters/doors/api/webhooks.py): what is due is read at most
`PER_TOKEN_DUE`
rows a token, its tokens at their cap left out, so one token's backlog never hides another's
rows; the sender chooses among them (`Choose`), and may postpone some (a host whose circuit is
open) without counting an attempt.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import asdict, dataclass, fields, replace
from datetime import datetime
from enum import Enum
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Executable,
    Row,
    bindparam,
    case,
    func,
    not_,
    or_,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite

from bot.records import AuditEntry
from bot.store.journal import INSERT_AUDIT, audit_values
from bot.store.sql_store import SqlStore
from bot.store.tables import webhook_deliveries as deliveries


@dataclass(frozen=True, slots=True)
class WebhookDelivery:
    """One webhook delivery as stored. `attempts` counts the attempts claimed so far (the one
    in progress included); `first_at` is when the first of them was claimed."""

    id: str
    request_id: str
    requester: str
    url: str
    body: str  # the exact JSON sent
    attempts: int
    first_at: datetime
    next_at: datetime
    lease_until: datetime | None = None
    worker: str | None = None
    done_at: datetime | None = None
    outcome: str | None = None
    push_config: str = ""  # an A2A push config's id; "": the request's callback URL
    push_token: str | None = None  # sent as X-A2A-Notification-Token (never logged)
    push_authorization: str | None = None  # sent as Authorization (never logged)


_COLUMNS = tuple(field.name for field in fields(WebhookDelivery))
PER_TOKEN_DUE = 16  # due rows read a token per claim: a backlog is not read whole each round
# The sender's choice among the due rows read (in next_at order): the ones to claim, in order,
# and the ones to postpone, with when to.
Choose = Callable[[list[WebhookDelivery]], tuple[list[WebhookDelivery], dict[str, datetime]]]


class Added(Enum):
    """What `add` did with a delivery."""

    ADDED = "added"
    EXISTS = "exists"  # its request has one already (another worker enqueued it)
    DROPPED = "dropped"  # its token's queue is full: not written, its audit line is


def _claimable(now: str) -> ColumnElement[bool]:
    """Not done, and nobody holds it (no lease, or a lapsed one)."""
    lease = deliveries.c.lease_until
    return deliveries.c.done_at.is_(None) & or_(lease.is_(None), lease < bindparam(now))


def _due(skipped: Collection[str]) -> Executable:
    """Due rows, earliest first, at most PER_TOKEN_DUE a token; none of the `skipped` tokens'."""
    rank = func.row_number().over(
        partition_by=deliveries.c.requester, order_by=(deliveries.c.next_at, deliveries.c.id)
    )
    due = select(deliveries, rank.label("rank")).where(
        _claimable("now"), deliveries.c.next_at <= bindparam("now")
    )
    if skipped:
        due = due.where(not_(deliveries.c.requester.in_(sorted(skipped))))
    ranked = due.subquery()
    return (
        select(*(ranked.c[name] for name in _COLUMNS))
        .where(ranked.c.rank <= PER_TOKEN_DUE)
        .order_by(ranked.c.next_at, ranked.c.id)
        .limit(bindparam("limit"))
    )


# A row as it was read: the attempt count unchanged, still claimable (another worker may
# have won it meanwhile).
_AS_READ = (
    deliveries.c.id == bindparam("b_id"),
    deliveries.c.attempts == bindparam("b_seen"),
    _claimable("b_now"),
)
TAKE = (
    update(deliveries)
    .where(*_AS_READ)
    .values(
        attempts=bindparam("b_attempts"),
        first_at=bindparam("b_first"),
        lease_until=bindparam("b_lease"),
        worker=bindparam("b_worker"),
    )
)
_HELD = (
    deliveries.c.id == bindparam("b_id"),
    deliveries.c.worker == bindparam("b_worker"),
    deliveries.c.attempts == bindparam("b_attempts"),
    deliveries.c.done_at.is_(None),
)
FINISH = (
    update(deliveries)
    .where(*_HELD)
    .values(
        next_at=bindparam("b_next"),
        done_at=bindparam("b_done"),
        outcome=bindparam("b_outcome"),
        lease_until=None,
        worker=None,
    )
)
RELEASE = update(deliveries).where(*_HELD).values(lease_until=None, worker=None)
POSTPONE = update(deliveries).where(*_AS_READ).values(next_at=bindparam("b_next"))
WAITING = (
    select(func.count())
    .select_from(deliveries)
    .where(deliveries.c.done_at.is_(None), deliveries.c.requester == bindparam("requester"))
)
# When the next delivery can be claimed: its next_at, or its lease's end if that is later.
_FREE_AT = case(
    (deliveries.c.lease_until > deliveries.c.next_at, deliveries.c.lease_until),
    else_=deliveries.c.next_at,
)
NEXT_DUE = select(func.min(_FREE_AT)).where(deliveries.c.done_at.is_(None))
# The same, of the rows not claimable by `after` (what is due already and left unclaimed waits
# for room, and an attempt that ends makes some: it wakes the sender).
NEXT_LATER = NEXT_DUE.where(bindparam("after") < _FREE_AT)


def delivery_of(row: Row[Any]) -> WebhookDelivery:
    values = row._mapping
    return WebhookDelivery(**{name: values[name] for name in _COLUMNS})


def add(
    conn: Connection,
    delivery: WebhookDelivery,
    cap: int | None = None,
    dropped: AuditEntry | None = None,
) -> Added:
    """Insert the delivery, unless its request has one already or its token has `cap` not
    done: then it is dropped, and `dropped` (its audit line) written instead."""
    if delivery_id(conn, delivery.request_id, delivery.push_config) is not None:
        return Added.EXISTS
    if cap is not None and _waiting(conn, delivery.requester) >= cap:
        if dropped is not None:
            conn.execute(INSERT_AUDIT, audit_values(dropped))
        return Added.DROPPED
    dialect_insert: Any = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
    keys = [deliveries.c.request_id, deliveries.c.push_config]
    statement: Executable = dialect_insert(deliveries).on_conflict_do_nothing(index_elements=keys)
    inserted = conn.execute(statement, asdict(delivery)).rowcount == 1
    return Added.ADDED if inserted else Added.EXISTS


def _waiting(conn: Connection, requester: str) -> int:
    """How many of the token's deliveries are not done."""
    count: int = conn.execute(WAITING, {"requester": requester}).scalar_one()
    return count


def _of(request_id: str, push_config: str) -> ColumnElement[bool]:
    return (deliveries.c.request_id == request_id) & (deliveries.c.push_config == push_config)


def delivery_id(conn: Connection, request_id: str, push_config: str = "") -> str | None:
    query = select(deliveries.c.id).where(_of(request_id, push_config))
    found: str | None = conn.execute(query).scalar()
    return found


def take_all(due: list[WebhookDelivery]) -> tuple[list[WebhookDelivery], dict[str, datetime]]:
    """The `Choose` that claims every row read."""
    return due, {}


def claim_due(
    conn: Connection,
    worker: str,
    now: datetime,
    lease_until: datetime,
    limit: int,
    choose: Choose = take_all,
    skipped: Collection[str] = (),
) -> list[WebhookDelivery]:
    """Claim due deliveries for one attempt each, as many as `choose` picks among `limit` read
    (none of the `skipped` tokens'): returned as claimed (their attempt counted, leased to
    `worker`). The ones `choose` postpones get their new next_at."""
    due = [delivery_of(row) for row in conn.execute(_due(skipped), {"now": now, "limit": limit})]
    chosen, postponed = choose(due)
    for seen in due:
        if seen.id in postponed:
            binds = {"b_id": seen.id, "b_seen": seen.attempts, "b_now": now,
                     "b_next": postponed[seen.id]}  # fmt: skip
            conn.execute(POSTPONE, binds)
    claimed = []
    for seen in chosen:
        first_at = now if seen.attempts == 0 else seen.first_at
        taken = replace(seen, attempts=seen.attempts + 1, first_at=first_at,
                        lease_until=lease_until, worker=worker)  # fmt: skip
        binds = {
            "b_id": seen.id, "b_seen": seen.attempts, "b_now": now, "b_attempts": taken.attempts,
            "b_first": first_at, "b_lease": lease_until, "b_worker": worker,
        }  # fmt: skip
        if conn.execute(TAKE, binds).rowcount == 1:
            claimed.append(taken)
    return claimed


def finish(
    conn: Connection, delivery: WebhookDelivery, worker: str, audit: list[AuditEntry]
) -> bool:
    """Write an attempt's outcome (`delivery`'s next_at, done_at, outcome) and its audit lines,
    if `worker` still holds that attempt; False (nothing written) if not."""
    binds = {
        "b_id": delivery.id, "b_worker": worker, "b_attempts": delivery.attempts,
        "b_next": delivery.next_at, "b_done": delivery.done_at, "b_outcome": delivery.outcome,
    }  # fmt: skip
    if conn.execute(FINISH, binds).rowcount != 1:
        return False
    for entry in audit:
        conn.execute(INSERT_AUDIT, audit_values(entry))
    return True


def release(conn: Connection, delivery: WebhookDelivery, worker: str) -> None:
    """Give an attempt back unfinished: the delivery is due again, for any worker."""
    binds = {"b_id": delivery.id, "b_worker": worker, "b_attempts": delivery.attempts}
    conn.execute(RELEASE, binds)


def next_due(conn: Connection, after: datetime | None = None) -> datetime | None:
    if after is None:
        due: datetime | None = conn.execute(NEXT_DUE).scalar()
    else:
        due = conn.execute(NEXT_LATER, {"after": after}).scalar()
    return due


def delivery(conn: Connection, request_id: str, push_config: str = "") -> WebhookDelivery | None:
    query = select(deliveries).where(_of(request_id, push_config))
    row = conn.execute(query).first()
    return delivery_of(row) if row is not None else None


__all__ = ["Added", "Choose", "WebhookDelivery", "WebhookTables"]


class WebhookTables:
    """Webhook deliveries, on `store`."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store

    async def add(
        self, delivery: WebhookDelivery, cap: int | None = None, dropped: AuditEntry | None = None
    ) -> Added:
        """Added; EXISTS if the delivery's request has one already, to the same push config
        (another worker enqueued it); DROPPED, with `dropped` audited, if its token has `cap`
        deliveries not done."""
        return await self.store.write(add, delivery, cap, dropped)

    async def claim_due(
        self,
        worker: str,
        now: datetime,
        lease_until: datetime,
        limit: int,
        choose: Choose | None = None,
        skipped: Collection[str] = (),
    ) -> list[WebhookDelivery]:
        """See claim_due; `choose` runs in the store's thread (on its own data)."""
        chooser = choose if choose is not None else take_all
        return await self.store.write(claim_due, worker, now, lease_until, limit, chooser, skipped)

    async def finish(self, delivery: WebhookDelivery, worker: str, audit: list[AuditEntry]) -> bool:
        return await self.store.write(finish, delivery, worker, audit)

    async def release(self, delivery: WebhookDelivery, worker: str) -> None:
        await self.store.write(release, delivery, worker)

    async def next_due(self, after: datetime | None = None) -> datetime | None:
        """When the earliest delivery not done can be claimed (its lease's end, if held);
        with `after`, the earliest not claimable by then."""
        return await self.store.read(next_due, after)

    async def delivery(self, request_id: str, push_config: str = "") -> WebhookDelivery | None:
        """The request's delivery to its callback URL, or to its A2A push config's URL."""
        return await self.store.read(delivery, request_id, push_config)
