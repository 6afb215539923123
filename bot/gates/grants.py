"""Grants: "approve and allow `<tool>` here for 1 hour".

A grant lets later calls of one tool, in one room (a conversation), by one actor run without
asking, until it expires or is revoked; an approval rule may scope it further to the values of
named arguments (`deploy` to `env=staging` only). Grants are rows: made when a person approves
with the grant control, used by the gate (bot/gates/gate.py), listed and revoked by admins
(`hitl-bridge grants`, `/hitl grants`); each of those is an audit line. A redacted argument a
grant is scoped to is kept as a digest, never as its value.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from bot.gates.approvals import MASK
from bot.records import AuditEntry, Grant

GRANT_SECONDS = 3600.0
DIGEST = "sha256:"

Clock = Callable[[], datetime]


class GrantStore(Protocol):
    """What grants need of the store (bot.store.SqlStore has it)."""

    async def add_grant(self, grant: Grant) -> Grant: ...

    async def live_grants(
        self, room_id: str, actor_id: str | None, tool_name: str, now: datetime
    ) -> list[Grant]: ...

    async def list_grants(
        self, *, room_prefix: str | None = None, live_at: datetime | None = None, limit: int = 100
    ) -> list[Grant]: ...

    async def get_grant(self, grant_id: str) -> Grant | None: ...

    async def revoke_grant(self, grant_id: str, by: str | None, at: datetime) -> Grant | None: ...

    async def append_audit(self, entry: AuditEntry) -> None: ...


class GrantError(LookupError):
    """A grant that cannot be revoked: `str(err)` says why, in one line."""


def _now() -> datetime:
    return datetime.now(UTC)


class Grants:
    """Make, find, list and revoke grants on `store`."""

    def __init__(self, store: GrantStore, *, clock: Clock = _now) -> None:
        self.store = store
        self.clock = clock

    async def grant(
        self,
        *,
        room_id: str,
        actor_id: str | None,
        tool_name: str,
        arguments: Mapping[str, Any],
        scope: Iterable[str] = (),
        redact: Iterable[str] = (),
        seconds: float = GRANT_SECONDS,
        granted_by: str | None,
        request_id: str | None = None,
    ) -> Grant:
        """Allow `tool_name` for `actor_id` in `room_id` for `seconds`, scoped to the values
        `arguments` has for the `scope` names; one grant per approval (`request_id`)."""
        now = self.clock()
        made = Grant(
            id=f"g-{secrets.token_hex(6)}",
            room_id=room_id,
            actor_id=actor_id,
            tool_name=tool_name,
            arguments=scope_of(arguments, scope, redact),
            created_at=now,
            expires_at=now + timedelta(seconds=seconds),
            granted_by=granted_by,
            request_id=request_id,
        )
        return await self.store.add_grant(made)

    async def covering(
        self,
        room_id: str,
        actor_id: str | None,
        tool_name: str,
        arguments: Mapping[str, Any],
    ) -> Grant | None:
        """A live grant this call runs under, if any."""
        live = await self.store.live_grants(room_id, actor_id, tool_name, self.clock())
        return next((g for g in live if covers(g, arguments)), None)

    async def used(self, grant: Grant, *, tool_call_id: str = "") -> None:
        """Write down that a call ran under `grant` (nobody was asked)."""
        detail = {"grant": grant.id, "tool_name": grant.tool_name, "room_id": grant.room_id}
        if tool_call_id:
            detail["tool_call_id"] = tool_call_id
        entry = AuditEntry("grant.used", self.clock(), grant.request_id, grant.actor_id, detail)
        await self.store.append_audit(entry)

    async def list(
        self, *, room_prefix: str | None = None, ended: bool = False, limit: int = 100
    ) -> list[Grant]:
        """Grants, newest first: live ones only unless `ended` (expired and revoked too)."""
        live_at = None if ended else self.clock()
        return await self.store.list_grants(room_prefix=room_prefix, live_at=live_at, limit=limit)

    async def revoke(
        self, grant_id: str, *, by: str | None, allowed: Callable[[Grant], bool] | None = None
    ) -> Grant:
        """Revoke a live grant (audited); GrantError if there is none by that id, or
        `allowed(grant)` says this person may not."""
        grant = await self.store.get_grant(grant_id)
        now = self.clock()
        if grant is None:
            raise GrantError(f"no grant {grant_id}")
        if not grant.live(now):
            ended = "was revoked" if grant.revoked_at is not None else "has expired"
            raise GrantError(f"grant {grant_id} {ended} already")
        if allowed is not None and not allowed(grant):
            raise GrantError(f"you may not revoke grant {grant_id}")
        revoked = await self.store.revoke_grant(grant_id, by, now)
        if revoked is None:  # it ended meanwhile
            raise GrantError(f"grant {grant_id} has ended already")
        return revoked


# -- scopes ------------------------------------------------------------------------------------


def digest(value: Any) -> str:
    """A redacted value as a grant keeps it: the digest of its JSON."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return DIGEST + hashlib.sha256(text.encode()).hexdigest()


def scope_of(
    arguments: Mapping[str, Any], scope: Iterable[str], redact: Iterable[str]
) -> dict[str, Any]:
    """The values a grant is scoped to: each `scope` argument's (a redacted one's digest, and
    so is a value that looks like one); an argument the call lacks is scoped to being absent."""
    hidden = frozenset(redact)
    scoped: dict[str, Any] = {}
    for key in sorted(set(scope)):
        value = arguments.get(key)
        looks_hashed = isinstance(value, str) and value.startswith(DIGEST)
        scoped[key] = digest(value) if key in hidden or looks_hashed else value
    return scoped


def covers(grant: Grant, arguments: Mapping[str, Any]) -> bool:
    """Whether a call with `arguments` is within the grant's scope."""
    for key, wanted in grant.arguments.items():
        value = arguments.get(key)
        if isinstance(wanted, str) and wanted.startswith(DIGEST):
            if digest(value) != wanted:
                return False
        elif _canonical(value) != _canonical(wanted):
            return False
    return True


def shown_scope(grant: Grant) -> str:
    """`env=staging, token=•••`, or "" for a grant of every call."""
    parts = []
    for key, value in grant.arguments.items():
        if isinstance(value, str) and value.startswith(DIGEST):
            parts.append(f"{key}={MASK}")
        else:
            parts.append(f"{key}={value if isinstance(value, str) else json.dumps(value)}")
    return ", ".join(parts)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)
