"""The `push_configs` table: A2A push notification configs, a few a door request (where its
task is POSTed once it settles), and `PushConfigTables` over it on a SqlStore, each method one
transaction. The A2A door (adapters/doors/a2a/push.py) checks who may see a task before asking."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, func, select, update

from bot.store.sql_store import SqlStore
from bot.store.tables import push_configs

__all__ = ["PushConfig", "PushConfigTables"]


@dataclass(frozen=True, slots=True)
class PushConfig:
    """One push config of a request: its `id` (unique within the request), the URL its task is
    POSTed to and the `token` sent with it."""

    request_id: str
    id: str
    requester: str
    url: str
    token: str | None
    created_at: datetime
    auth_scheme: str | None = None  # AuthenticationInfo's: "Bearer" or "Basic"
    auth_credentials: str | None = None  # sent after it as Authorization (never logged)

    @property
    def authorization(self) -> str | None:
        """The Authorization header each notification is sent with, if any."""
        if self.auth_scheme is None:
            return None
        return f"{self.auth_scheme} {self.auth_credentials or ''}".strip()


_COLUMNS = tuple(field.name for field in fields(PushConfig))


def _key(request_id: str, config_id: str) -> Any:
    return (push_configs.c.request_id == request_id) & (push_configs.c.id == config_id)


def put(conn: Connection, config: PushConfig, cap: int) -> bool:
    """Write `config` (replacing the request's config of the same id); False, nothing written,
    if it is new and the request has `cap` configs already."""
    values = asdict(config)
    changed = {k: values[k] for k in ("url", "token", "auth_scheme", "auth_credentials")}
    key = _key(config.request_id, config.id)
    if conn.execute(update(push_configs).where(key).values(**changed)).rowcount == 1:
        return True
    counted = select(func.count()).where(push_configs.c.request_id == config.request_id)
    if conn.execute(counted).scalar_one() >= cap:
        return False
    conn.execute(push_configs.insert().values(**values))
    return True


def of_request(conn: Connection, request_id: str) -> list[PushConfig]:
    query = (
        select(*(push_configs.c[name] for name in _COLUMNS))
        .where(push_configs.c.request_id == request_id)
        .order_by(push_configs.c.created_at, push_configs.c.id)
    )
    return [PushConfig(**row._mapping) for row in conn.execute(query)]


def remove(conn: Connection, request_id: str, config_id: str) -> bool:
    return conn.execute(delete(push_configs).where(_key(request_id, config_id))).rowcount == 1


class PushConfigTables:
    """Push configs, on `store`."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store

    async def put(self, config: PushConfig, cap: int) -> bool:
        """Keep `config` (a new id, or a new URL and token for an id); False if it is new and
        its request has `cap` configs already."""
        return await self.store.write(put, config, cap)

    async def of_request(self, request_id: str) -> list[PushConfig]:
        """The request's configs, oldest first."""
        return await self.store.read(of_request, request_id)

    async def get(self, request_id: str, config_id: str) -> PushConfig | None:
        found = [c for c in await self.of_request(request_id) if c.id == config_id]
        return found[0] if found else None

    async def remove(self, request_id: str, config_id: str) -> bool:
        """Delete the config; False if there was none."""
        return await self.store.write(remove, request_id, config_id)
