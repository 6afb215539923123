"""The admin console's sessions, CSRF tokens and sign-in throttle. Pure but for the clock.

A session is a signed cookie (HMAC-SHA256 over its nonce, holder and expiry), so any worker
with the same key reads it: set HITL_ADMIN_SESSION_KEY when several workers serve /admin,
else each process makes its own key (and a restart signs everyone out). A signed-in session
is open only while its row is in the store (SessionStore, keyed by `Session.key`): signing
out deletes the row, so a cookie saved before sign-out opens nothing afterwards, on any worker.
A visitor who has not signed in gets a session with no holder: its nonce keys the sign-in
form's CSRF token. Signing in issues a new nonce (no session fixation). A form's CSRF token
is an HMAC of the session's nonce: a page of another site can neither read nor forge it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import json
import secrets
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

SESSION_COOKIE = "hitl_admin"
SESSION_SECONDS = 8 * 3600
MAX_COOKIE = 1024  # characters: a longer cookie is none of ours and is not decoded


class SessionStore(Protocol):
    """Where signed-in sessions are kept open (bot/store/admin_sessions.py on SqlStore)."""

    async def open_session(
        self, key: str, holder: str, now: datetime, expires_at: datetime
    ) -> None: ...

    async def session_holder(self, key: str, now: datetime) -> str | None: ...

    async def close_session(self, key: str) -> bool: ...


@dataclass(frozen=True, slots=True)
class Session:
    nonce: str
    holder: str  # who signed in ("token:NAME", "HITL_ADMIN_TOKEN"); "" before sign-in
    expires: float

    @property
    def signed_in(self) -> bool:
        return bool(self.holder)

    @property
    def key(self) -> str:
        """The session's row in the SessionStore: its nonce's SHA-256 (a leaked table names no
        cookie)."""
        return hashlib.sha256(self.nonce.encode()).hexdigest()

    @property
    def expires_at(self) -> datetime:
        return datetime.fromtimestamp(self.expires, UTC)


class Sessions:
    """Issue and read session cookies, make and check CSRF tokens, under one key."""

    def __init__(
        self,
        key: bytes,
        *,
        lifetime: float = SESSION_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._key, self._lifetime, self._clock = key, lifetime, clock

    def issue(self, holder: str = "") -> tuple[Session, str]:
        """A new session (a new nonce) and its cookie value."""
        session = Session(secrets.token_urlsafe(18), holder, self._clock() + self._lifetime)
        payload = json.dumps([session.nonce, session.holder, session.expires]).encode()
        body = base64.urlsafe_b64encode(payload).decode().rstrip("=")
        return session, f"{body}.{self._sign('session', body)}"

    def read(self, cookie: str | None) -> Session | None:
        """The live session a cookie holds; None if it is missing, forged or expired."""
        if not cookie or len(cookie) > MAX_COOKIE or cookie.count(".") != 1:
            return None
        body, signature = cookie.split(".")
        if not same_secret(signature, self._sign("session", body)):
            return None
        try:
            payload = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
            nonce, holder, expires = json.loads(payload)
            session = Session(str(nonce), str(holder), float(expires))
        except (ValueError, TypeError):
            return None
        return session if session.expires > self._clock() else None

    def csrf(self, session: Session) -> str:
        return self._sign("csrf", session.nonce)

    def csrf_ok(self, session: Session | None, presented: str | None) -> bool:
        if session is None or not presented:
            return False
        return same_secret(presented, self.csrf(session))

    def _sign(self, purpose: str, value: str) -> str:
        message = f"{purpose}|{value}".encode()
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()


def same_secret(presented: str, expected: str) -> bool:
    """Whether two secrets are equal, in time that does not tell how much of them matched
    (as bytes: compare_digest refuses str with non-ASCII characters, which a client may send)."""
    return hmac.compare_digest(presented.encode(), expected.encode())


class SignInThrottle:
    """Counts the failed sign-ins per address: past `limit` in `window` seconds, a wrong token
    is answered 429 (the client told to wait) instead of 401. Only wrong tokens are counted and
    refused so: the right one is always checked and accepted, or anyone behind the same proxy
    could lock every admin out. Bounded: past `addresses` addresses the stalest is forgotten."""

    def __init__(
        self,
        limit: int = 5,
        window: float = 300.0,
        *,
        addresses: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit, self.window = limit, window
        self._addresses, self._clock = addresses, clock
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()

    def failed(self, address: str) -> int:
        """Count one failure; how many the address has in the window with it (at most
        `limit` + 2: `limit` + 1 is the first one over the limit, more are the ones after)."""
        now = self._clock()
        failures = self._failures.setdefault(address, deque())
        self._failures.move_to_end(address)
        while failures and failures[0] <= now - self.window:
            failures.popleft()
        failures.append(now)
        counted = len(failures)
        while len(failures) > self.limit + 1:
            failures.popleft()
        while len(self._failures) > self._addresses:
            self._failures.popitem(last=False)
        return counted

    def over(self, counted: int) -> bool:
        """Whether a failure counted so is past the limit (answered 429)."""
        return counted > self.limit


def is_loopback(remote: str | None, forwarded: bool) -> bool:
    """A request from this machine itself: a loopback address, not relayed by a proxy (a
    proxy on this machine would make everyone look local)."""
    if forwarded or not remote:
        return False
    try:
        return ipaddress.ip_address(remote).is_loopback
    except ValueError:
        return False
