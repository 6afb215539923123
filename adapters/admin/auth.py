"""The admin console's sessions, CSRF tokens and sign-in throttle. Pure but for the clock.

A session is a signed cookie (HMAC-SHA256 over its nonce, holder and expiry), so any worker
with the same key reads it: set HITL_ADMIN_SESSION_KEY when several workers serve /admin,
else each process makes its own key (and a restart signs everyone out). A visitor who has not
signed in gets a session with no holder: its nonce keys the sign-in form's CSRF token. Signing
in issues a new nonce (no session fixation). A form's CSRF token is an HMAC of the session's
nonce: a page of another site can neither read nor forge it.
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

SESSION_COOKIE = "hitl_admin"
SESSION_SECONDS = 8 * 3600
MAX_COOKIE = 1024  # characters: a longer cookie is none of ours and is not decoded


@dataclass(frozen=True, slots=True)
class Session:
    nonce: str
    holder: str  # who signed in ("token:NAME", "HITL_ADMIN_TOKEN"); "" before sign-in
    expires: float

    @property
    def signed_in(self) -> bool:
        return bool(self.holder)


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
    """At most `limit` failed sign-ins per address in `window` seconds; then refused until
    the oldest ages out. Bounded: past `addresses` addresses the stalest is forgotten."""

    def __init__(
        self,
        limit: int = 5,
        window: float = 300.0,
        *,
        addresses: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._limit, self._window, self._addresses, self._clock = limit, window, addresses, clock
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()

    def blocked(self, address: str) -> bool:
        failures = self._failures.get(address)
        if failures is None:
            return False
        cutoff = self._clock() - self._window
        while failures and failures[0] <= cutoff:
            failures.popleft()
        if not failures:
            del self._failures[address]
        return len(failures) >= self._limit

    def failed(self, address: str) -> None:
        failures = self._failures.setdefault(address, deque())
        self._failures.move_to_end(address)
        failures.append(self._clock())
        while len(failures) > self._limit:
            failures.popleft()
        while len(self._failures) > self._addresses:
            self._failures.popitem(last=False)


def is_loopback(remote: str | None, forwarded: bool) -> bool:
    """A request from this machine itself: a loopback address, not relayed by a proxy (a
    proxy on this machine would make everyone look local)."""
    if forwarded or not remote:
        return False
    try:
        return ipaddress.ip_address(remote).is_loopback
    except ValueError:
        return False
