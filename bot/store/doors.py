"""The doors' store (bot.doors.service.DoorStore, bot.doors.tokens.TokenStore) on a SqlStore: each
method one transaction running the SQL of bot/store/door_rows.py."""

from __future__ import annotations

from datetime import datetime

from bot.records import Asked, AuditEntry, RequestRecord, RequestStatus, Token
from bot.store import door_rows
from bot.store.sql_store import SqlStore


class DoorTables:
    """Tokens and door requests, on `store`."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store

    async def add_token(self, token: Token) -> bool:
        return await self.store.write(door_rows.add_token, token)

    async def token_by_hash(self, token_hash: str) -> Token | None:
        return await self.store.read(door_rows.token_by_hash, token_hash)

    async def token_named(self, name: str) -> Token | None:
        return await self.store.read(door_rows.token_named, name)

    async def list_tokens(self) -> list[Token]:
        return await self.store.read(door_rows.list_tokens)

    async def has_admin_token(self) -> bool:
        return await self.store.read(door_rows.has_admin_token)

    async def revoke_token(self, name: str, at: datetime) -> bool:
        return await self.store.write(door_rows.revoke_token, name, at)

    async def reserve_door(self, row: Asked) -> Asked:
        return await self.store.write(door_rows.reserve, row)

    async def drop_door(self, request_id: str) -> None:
        await self.store.write(door_rows.drop, request_id)

    async def door(self, request_id: str) -> tuple[RequestRecord | None, Asked] | None:
        return await self.store.read(door_rows.door, request_id)

    async def settled_among(self, request_ids: list[str]) -> list[str]:
        return await self.store.read(door_rows.settled_among, request_ids)

    async def list_doors(
        self,
        requester: str,
        *,
        status: RequestStatus | None,
        address: str | None,
        since: datetime | None,
        before: str | None,
        limit: int,
    ) -> list[tuple[RequestRecord, Asked]]:
        return await self.store.read(
            door_rows.list_doors, requester, status, address, since, before, limit
        )

    async def append_audit(self, entry: AuditEntry) -> None:
        await self.store.append_audit(entry)
