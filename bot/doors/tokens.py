"""Bearer tokens of the doors (the HTTP API, the MCP server).

`hitl-bridge tokens create --name NAME` prints a token once; the store keeps its SHA-256 (a
token is 32 random bytes: a fast hash is enough, and a lookup by it costs one indexed read).
Each token has a webhook secret, shown with it, that signs the callbacks of its requests. The
token's name is the requester in the audit log. Revoked tokens are refused from then on.
`--admin` makes a token that may also sign in to the admin console (`check_admin`).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import UTC, datetime
from typing import Protocol

from bot.records import AuditEntry, Token

PREFIX = "hitl_"
SECRET_PREFIX = "whsec_"  # noqa: S105 (a prefix, not a secret)
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
MAX_TOKEN = 200  # characters: longer is no token of ours, and is not hashed


class TokenStore(Protocol):
    """What tokens need of the store (bot/store/doors.py gives it on SqlStore)."""

    async def add_token(self, token: Token) -> bool: ...

    async def token_by_hash(self, token_hash: str) -> Token | None: ...

    async def token_named(self, name: str) -> Token | None: ...

    async def list_tokens(self) -> list[Token]: ...

    async def has_admin_token(self) -> bool: ...

    async def revoke_token(self, name: str, at: datetime) -> bool: ...

    async def append_audit(self, entry: AuditEntry) -> None: ...


class TokenError(ValueError):
    """A token that cannot be made or revoked: `str(err)` says why, in one line."""


def bearer(authorization: str | None) -> str | None:
    """The token an `Authorization` header's value presents: `Bearer <token>`, the scheme in
    any case (RFC 7235: auth schemes are case-insensitive); None for any other value."""
    scheme, _, presented = (authorization or "").strip().partition(" ")
    token = presented.strip()
    return token if scheme.lower() == "bearer" and token else None


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class Tokens:
    """Make, check, list and revoke tokens (see the module's docstring)."""

    def __init__(self, store: TokenStore) -> None:
        self.store = store

    async def create(self, name: str, *, admin: bool = False) -> tuple[str, Token]:
        """A new token named `name`, an admin token if `admin`: (the token, shown once; its
        stored form)."""
        if not NAME.fullmatch(name):
            raise TokenError(
                "a token's name is 1 to 64 letters, digits, '.', '_' or '-', starting with a "
                "letter or digit"
            )
        plain = PREFIX + secrets.token_urlsafe(32)
        token = Token(name, digest(plain), SECRET_PREFIX + secrets.token_urlsafe(32),
                      datetime.now(UTC), admin=admin)  # fmt: skip
        if not await self.store.add_token(token):
            raise TokenError(f"a token named {name} exists already (names are never reused)")
        detail = {"token": name, "admin": admin}
        await self.store.append_audit(
            AuditEntry("token.created", token.created_at, None, None, detail)
        )
        return plain, token

    async def check(self, presented: str) -> Token | None:
        """The live token `presented` is, or None."""
        if not presented.startswith(PREFIX) or len(presented) > MAX_TOKEN:
            return None
        return await self.store.token_by_hash(digest(presented))

    async def check_admin(self, presented: str) -> Token | None:
        """The live admin token `presented` is, or None (a live non-admin token too)."""
        token = await self.check(presented)
        return token if token is not None and token.admin else None

    async def is_live_admin(self, name: str) -> bool:
        """Whether `name` is an admin token still live (a console session made with it ends
        when it is revoked)."""
        token = await self.store.token_named(name)
        return token is not None and token.admin and token.revoked_at is None

    async def has_admin(self) -> bool:
        """Whether a live admin token exists."""
        return await self.store.has_admin_token()

    async def list(self) -> list[Token]:
        return await self.store.list_tokens()

    async def revoke(self, name: str, *, by: str | None = None) -> Token:
        """Revoke a live token; TokenError if there is none by that name."""
        token = await self.store.token_named(name)
        if token is None:
            raise TokenError(f"no token named {name}")
        now = datetime.now(UTC)
        if token.revoked_at is not None or not await self.store.revoke_token(name, now):
            raise TokenError(f"the token {name} was revoked already")
        await self.store.append_audit(AuditEntry("token.revoked", now, None, by, {"token": name}))
        return token
