"""The webhooks' store (adapters/api/webhooks.py) on a SqlStore: each method one transaction
running the SQL of bot/store/webhook_rows.py."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from bot.records import AuditEntry
from bot.store import webhook_rows
from bot.store.sql_store import SqlStore
from bot.store.webhook_rows import Added, Choose, Delivery

__all__ = ["Added", "Choose", "Delivery", "WebhookTables"]


class WebhookTables:
    """Webhook deliveries, on `store`."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store

    async def add(
        self, delivery: Delivery, cap: int | None = None, dropped: AuditEntry | None = None
    ) -> Added:
        """Added; EXISTS if the delivery's request has one already (another worker enqueued
        it); DROPPED, with `dropped` audited, if its token has `cap` deliveries not done."""
        return await self.store.write(webhook_rows.add, delivery, cap, dropped)

    async def claim_due(
        self,
        worker: str,
        now: datetime,
        lease_until: datetime,
        limit: int,
        choose: Choose | None = None,
        skipped: Collection[str] = (),
    ) -> list[Delivery]:
        """See webhook_rows.claim_due; `choose` runs in the store's thread (on its own data)."""
        chooser = choose if choose is not None else webhook_rows.take_all
        return await self.store.write(
            webhook_rows.claim_due, worker, now, lease_until, limit, chooser, skipped
        )

    async def finish(self, delivery: Delivery, worker: str, audit: list[AuditEntry]) -> bool:
        return await self.store.write(webhook_rows.finish, delivery, worker, audit)

    async def release(self, delivery: Delivery, worker: str) -> None:
        await self.store.write(webhook_rows.release, delivery, worker)

    async def next_due(self, after: datetime | None = None) -> datetime | None:
        """When the earliest delivery not done can be claimed (its lease's end, if held);
        with `after`, the earliest not claimable by then."""
        return await self.store.read(webhook_rows.next_due, after)

    async def delivery(self, request_id: str) -> Delivery | None:
        return await self.store.read(webhook_rows.delivery, request_id)
