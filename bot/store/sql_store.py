"""`SqlStore`: the `RequestStore` the core talks to, on SQLite (aiosqlite) or PostgreSQL (asyncpg).

Every public method is one transaction. A settle is a single compare-and-set UPDATE; its
transition and audit rows are written in the same transaction only when it won, so exactly one
settle of a request ever leaves a trace, whichever process or task raced for it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from datetime import UTC, datetime
from typing import Any

from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection, Row, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from bot.records import AuditEntry, RequestRecord, RequestStatus, Settlement
from bot.store.engine import WRITE_OPTION, create_engine
from bot.store.migrate import head_revision
from bot.store.schema import AuditRow, RequestRow, TranscriptRow, TransitionRow

_PENDING = RequestStatus.PENDING.value


class SqlStore:
    """A `RequestStore` over one SQLAlchemy async engine (which the store owns and disposes)."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._writer = engine.execution_options(**{WRITE_OPTION: True})
        # SQLite has one writer per database; queueing writers here, instead of letting them
        # spin in SQLite's busy handler, keeps concurrent tasks of one process fast.
        self._write_lock = asyncio.Lock() if engine.dialect.name == "sqlite" else None

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        schema: str | None = None,
        connect_args: Mapping[str, Any] | None = None,
    ) -> SqlStore:
        """A store for `url`; `schema` (PostgreSQL only) becomes the connection's search path."""
        return cls(create_engine(url, schema=schema, connect_args=connect_args))

    @property
    def engine(self) -> AsyncEngine:
        return self._engine

    async def create_request(self, record: RequestRecord) -> None:
        """Insert the request with its `created` transition and audit rows."""
        async with self._write() as conn:
            await conn.execute(insert(RequestRow).values(**_row_values(record)))
            await conn.execute(
                insert(TransitionRow).values(
                    request_id=record.id,
                    from_status=None,
                    to_status=record.status.value,
                    at=record.created_at,
                    by=record.actor_id,
                    detail={},
                )
            )
            await conn.execute(insert(AuditRow).values(**_created_audit(record)))

    async def settle(self, settlement: Settlement) -> bool:
        """Compare-and-set pending -> `settlement.status`; True only for the one settle that won."""
        if settlement.status is RequestStatus.PENDING:
            raise ValueError("a settle must leave 'pending'")
        async with self._write() as conn:
            won = await conn.execute(
                update(RequestRow)
                .where(RequestRow.id == settlement.request_id, RequestRow.status == _PENDING)
                .values(
                    status=settlement.status.value,
                    result=settlement.result,
                    reason=settlement.reason,
                    settled_by=settlement.by,
                    settled_at=settlement.at,
                )
            )
            if won.rowcount != 1:
                return False
            await conn.execute(insert(TransitionRow).values(**_settle_transition(settlement)))
            await conn.execute(insert(AuditRow).values(**_settle_audit(settlement)))
        return True

    async def get_request(self, request_id: str) -> RequestRecord | None:
        async with self._engine.connect() as conn:
            row = (
                await conn.execute(select(RequestRow).where(RequestRow.id == request_id))
            ).first()
        return None if row is None else _record(row)

    async def list_pending(self) -> list[RequestRecord]:
        """Pending requests, oldest first."""
        query = (
            select(RequestRow)
            .where(RequestRow.status == _PENDING)
            .order_by(RequestRow.created_at, RequestRow.id)
        )
        async with self._engine.connect() as conn:
            return [_record(row) for row in await conn.execute(query)]

    async def due_requests(self, now: datetime, limit: int = 500) -> list[RequestRecord]:
        """Pending requests whose `expires_at` is at or before `now`, earliest first."""
        query = (
            select(RequestRow)
            .where(RequestRow.status == _PENDING, RequestRow.expires_at <= now)
            .order_by(RequestRow.expires_at)
            .limit(limit)
        )
        async with self._engine.connect() as conn:
            return [_record(row) for row in await conn.execute(query)]

    async def next_deadline(self) -> datetime | None:
        """The earliest `expires_at` among pending requests: the first entry of an index range."""
        query = (
            select(RequestRow.expires_at)
            .where(RequestRow.status == _PENDING, RequestRow.expires_at.is_not(None))
            .order_by(RequestRow.expires_at)
            .limit(1)
        )
        async with self._engine.connect() as conn:
            value: datetime | None = await conn.scalar(query)
        return value

    async def set_message_ref(self, request_id: str, surface: str, ref: dict[str, Any]) -> None:
        """Record where `surface` posted the request; raises KeyError for an unknown request."""
        async with self._write() as conn:
            # FOR UPDATE (PostgreSQL) and BEGIN IMMEDIATE (SQLite) stop two surfaces that
            # post at once from overwriting each other's reference.
            refs = await conn.scalar(
                select(RequestRow.message_refs)
                .where(RequestRow.id == request_id)
                .with_for_update()
            )
            if refs is None:
                raise KeyError(request_id)
            await conn.execute(
                update(RequestRow)
                .where(RequestRow.id == request_id)
                .values(message_refs={**refs, surface: dict(ref)})
            )

    async def append_audit(self, entry: AuditEntry) -> None:
        """Append one audit line; the database assigns its id (`entry.id` is ignored)."""
        async with self._write() as conn:
            await conn.execute(
                insert(AuditRow).values(
                    at=entry.at,
                    action=entry.action,
                    request_id=entry.request_id,
                    actor_id=entry.actor_id,
                    detail=entry.detail,
                )
            )

    async def list_audit(
        self, *, request_id: str | None = None, limit: int = 100
    ) -> list[AuditEntry]:
        """The latest `limit` audit lines (of one request, if given), newest first."""
        query = select(AuditRow).order_by(AuditRow.id.desc()).limit(limit)
        if request_id is not None:
            query = query.where(AuditRow.request_id == request_id)
        async with self._engine.connect() as conn:
            return [_audit_entry(row) for row in await conn.execute(query)]

    async def save_transcript(
        self, room_id: str, channel_id: str, messages: list[dict[str, Any]]
    ) -> None:
        """Replace the agent transcript of one room (an upsert, safe against concurrent saves)."""
        values = {
            "room_id": room_id,
            "channel_id": channel_id,
            "messages": messages,
            "updated_at": datetime.now(UTC),
        }
        async with self._write() as conn:
            upsert = _insert_for(conn)(TranscriptRow).values(**values)
            await conn.execute(
                upsert.on_conflict_do_update(
                    index_elements=[TranscriptRow.room_id, TranscriptRow.channel_id],
                    set_={"messages": messages, "updated_at": values["updated_at"]},
                )
            )

    async def load_transcript(self, room_id: str, channel_id: str) -> list[dict[str, Any]]:
        """The saved transcript of one room, or [] if none was saved."""
        query = select(TranscriptRow.messages).where(
            TranscriptRow.room_id == room_id, TranscriptRow.channel_id == channel_id
        )
        async with self._engine.connect() as conn:
            messages: list[dict[str, Any]] | None = await conn.scalar(query)
        return messages or []

    async def current_revision(self) -> str | None:
        """The Alembic revision the database is at (None before the first migration)."""
        async with self._engine.connect() as conn:
            return await conn.run_sync(_revision_of)

    async def schema_revision_ok(self) -> bool:
        """True if the database is migrated to the newest revision this code knows."""
        return await self.current_revision() == head_revision()

    async def close(self) -> None:
        await self._engine.dispose()

    @contextlib.asynccontextmanager
    async def _write(self) -> AsyncIterator[AsyncConnection]:
        """One writing transaction, committed on exit and rolled back on error."""
        async with contextlib.AsyncExitStack() as stack:
            if self._write_lock is not None:
                await stack.enter_async_context(self._write_lock)
            yield await stack.enter_async_context(self._writer.begin())


def _revision_of(conn: Connection) -> str | None:
    return MigrationContext.configure(conn).get_current_revision()


def _insert_for(conn: AsyncConnection) -> Any:
    """The dialect's INSERT, which has ON CONFLICT DO UPDATE on both of ours."""
    return postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert


def _row_values(record: RequestRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "tool_name": record.tool_name,
        "arguments": record.arguments,
        "room_id": record.room_id,
        "tool_call_id": record.tool_call_id,
        "channel_id": record.channel_id,
        "channel_type": record.channel_type,
        "actor_id": record.actor_id,
        "detached": record.detached,
        "status": record.status.value,
        "result": record.result,
        "reason": record.reason,
        "settled_by": record.settled_by,
        "settled_at": record.settled_at,
        "created_at": record.created_at,
        "expires_at": record.expires_at,
        "message_refs": record.message_refs,
    }


def _created_audit(record: RequestRecord) -> dict[str, Any]:
    return {
        "at": record.created_at,
        "action": "request.created",
        "request_id": record.id,
        "actor_id": record.actor_id,
        "detail": {
            "tool_name": record.tool_name,
            "room_id": record.room_id,
            "channel_id": record.channel_id,
            "channel_type": record.channel_type,
            "detached": record.detached,
        },
    }


def _settle_transition(settlement: Settlement) -> dict[str, Any]:
    detail = {} if settlement.reason is None else {"reason": settlement.reason}
    return {
        "request_id": settlement.request_id,
        "from_status": _PENDING,
        "to_status": settlement.status.value,
        "at": settlement.at,
        "by": settlement.by,
        "detail": detail,
    }


def _settle_audit(settlement: Settlement) -> dict[str, Any]:
    detail = {
        key: value
        for key, value in (("result", settlement.result), ("reason", settlement.reason))
        if value is not None
    }
    return {
        "at": settlement.at,
        "action": f"request.{settlement.status.value}",
        "request_id": settlement.request_id,
        "actor_id": settlement.by,
        "detail": detail,
    }


def _record(row: Row[Any]) -> RequestRecord:
    return RequestRecord(
        id=row.id,
        tool_name=row.tool_name,
        arguments=row.arguments,
        room_id=row.room_id,
        tool_call_id=row.tool_call_id,
        channel_id=row.channel_id,
        channel_type=row.channel_type,
        actor_id=row.actor_id,
        detached=row.detached,
        created_at=row.created_at,
        expires_at=row.expires_at,
        status=RequestStatus(row.status),
        result=row.result,
        reason=row.reason,
        settled_by=row.settled_by,
        settled_at=row.settled_at,
        message_refs=row.message_refs or {},
    )


def _audit_entry(row: Row[Any]) -> AuditEntry:
    return AuditEntry(
        action=row.action,
        at=row.at,
        request_id=row.request_id,
        actor_id=row.actor_id,
        detail=row.detail or {},
        id=row.id,
    )
