"""The request log (bot.reports.request_log.RequestLogStore) on a SqlStore: each method one read
running the SQL of bot/store/request_log_rows.py."""

from __future__ import annotations

from datetime import datetime

from bot.records import AuditEntry
from bot.reports.request_log import LoggedRequest, RequestFilter, Settled
from bot.store import request_log_rows as rows
from bot.store.sql_store import SqlStore


class RequestLog:
    """The requests and their audit rows as an admin reads them, on `store`."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store

    async def page(self, where: RequestFilter, offset: int, limit: int) -> list[LoggedRequest]:
        return await self.store.read(rows.page, where, offset, limit)

    async def after(
        self, where: RequestFilter, mark: tuple[datetime, str] | None, limit: int
    ) -> list[LoggedRequest]:
        return await self.store.read(rows.after, where, mark, limit)

    async def count(self, where: RequestFilter) -> int:
        return await self.store.read(rows.count, where)

    async def logged(self, request_id: str) -> LoggedRequest | None:
        return await self.store.read(rows.logged, request_id)

    async def timeline(self, request_id: str) -> list[AuditEntry]:
        return await self.store.read(rows.timeline, request_id)

    async def settled_since(self, since: datetime, limit: int) -> list[Settled]:
        return await self.store.read(rows.settled_since, since, limit)

    async def append_audit(self, entry: AuditEntry) -> None:
        await self.store.append_audit(entry)
