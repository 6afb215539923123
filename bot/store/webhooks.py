"""The webhooks' store (adapters/api/webhooks.py) on a SqlStore: each method one transaction
running the SQL of bot/store/webhook_rows.py."""

from __future__ import annotations

from datetime import datetime

from bot.records import AuditEntry
from bot.store import webhook_rows
from bot.store.sql_store import SqlStore
from bot.store.webhook_rows import Delivery

__all__ = ["Delivery", "WebhookTables"]


class WebhookTables:
    """Webhook deliveries, on `store`."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store

    async def add(self, delivery: Delivery) -> bool:
        """False if the delivery's request has one already (another worker enqueued it)."""
        return await self.store.write(webhook_rows.add, delivery)

    async def claim_due(
        self, worker: str, now: datetime, lease_until: datetime, limit: int
    ) -> list[Delivery]:
        return await self.store.write(webhook_rows.claim_due, worker, now, lease_until, limit)

    async def finish(self, delivery: Delivery, worker: str, audit: list[AuditEntry]) -> bool:
        return await self.store.write(webhook_rows.finish, delivery, worker, audit)

    async def release(self, delivery: Delivery, worker: str) -> None:
        await self.store.write(webhook_rows.release, delivery, worker)

    async def next_due(self) -> datetime | None:
        """When the earliest delivery not done can be claimed (its lease's end, if held)."""
        return await self.store.read(webhook_rows.next_due)

    async def delivery(self, request_id: str) -> Delivery | None:
        return await self.store.read(webhook_rows.delivery, request_id)
