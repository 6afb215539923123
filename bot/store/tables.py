"""The store's tables as SQLAlchemy Core objects, and the small bodies every repository runs.

A body is a synchronous function of a `Connection` run inside one transaction by `SqlStore`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from sqlalchemy import ARRAY, CTE, Connection, Executable, Row, Table, bindparam, func, select

from bot.records import RequestStatus
from bot.store.schema import (
    AdminSessionRow,
    AuditRow,
    ClaimRow,
    DoorRow,
    GateRunRow,
    GrantRow,
    HealthRow,
    HolderRow,
    InboxRow,
    MessageCopyRow,
    ProposalRow,
    PushConfigRow,
    RequestRow,
    RunRow,
    TokenRow,
    TranscriptRow,
    VoteRow,
    WebhookRow,
)

PENDING = RequestStatus.PENDING.value

requests = cast(Table, RequestRow.__table__)
audit = cast(Table, AuditRow.__table__)
transcripts = cast(Table, TranscriptRow.__table__)
claims = cast(Table, ClaimRow.__table__)
runs = cast(Table, RunRow.__table__)
holders = cast(Table, HolderRow.__table__)
proposals = cast(Table, ProposalRow.__table__)
health = cast(Table, HealthRow.__table__)
gate_runs = cast(Table, GateRunRow.__table__)
grants = cast(Table, GrantRow.__table__)
inbox = cast(Table, InboxRow.__table__)
api_tokens = cast(Table, TokenRow.__table__)
door_requests = cast(Table, DoorRow.__table__)
webhook_deliveries = cast(Table, WebhookRow.__table__)
votes = cast(Table, VoteRow.__table__)
message_copies = cast(Table, MessageCopyRow.__table__)
admin_sessions = cast(Table, AdminSessionRow.__table__)
push_configs = cast(Table, PushConfigRow.__table__)


def first(conn: Connection, query: Executable, values: dict[str, Any]) -> Row[Any] | None:
    return conn.execute(query, values).first()


def every(conn: Connection, query: Executable, values: dict[str, Any]) -> list[Row[Any]]:
    return list(conn.execute(query, values))


def execute(conn: Connection, statement: Executable, values: dict[str, Any]) -> None:
    conn.execute(statement, values)


def count(conn: Connection, statement: Executable, values: dict[str, Any]) -> int:
    return int(conn.execute(statement, values).rowcount)


def unnested(name: str, keys: tuple[str, ...], types: Mapping[str, Any]) -> CTE:
    """PostgreSQL: a CTE of one row per call of a grouped statement, `unnest` of one array
    per key (the parameter `<key>s`, of `types[key]`)."""
    arrays = [bindparam(f"{key}s", type_=ARRAY(types[key])) for key in keys]
    rows = func.unnest(*arrays).table_valued(*keys).render_derived(name=f"{name}_rows")
    return select(rows).cte(name)
