"""Who may see the admin console, and signing in and out (docs/audit-and-console.md).

Every page but the sign-in form and the style sheet needs a session signed in with an admin
token: one made by `hitl-bridge tokens create --admin` (still live: revoking it ends its
sessions) or HITL_ADMIN_TOKEN (compared in constant time). While neither exists, the console
is open without sign-in to requests from this machine itself (loopback, not through a proxy),
and refused elsewhere with a page that says why. Sign-in and sign-out are POSTs with a CSRF
token. A wrong token is audited; past five from one address in five minutes it is answered
429 (audited once), while the right token is always checked and signs in (auth.py). Sign-out
deletes the session's row: its cookie opens nothing afterwards, on any worker.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs

from aiohttp import web

from adapters.doors.admin.auth import (
    SESSION_COOKIE,
    SESSION_SECONDS,
    Session,
    Sessions,
    SessionStore,
    SignInThrottle,
    is_loopback,
    same_secret,
)
from adapters.serve.http_limits import BodyTooLarge, read_body
from bot.doors.tokens import Tokens
from bot.records import AuditEntry
from bot.reports.request_log import RequestLogStore

PREFIX = "/admin"
SIGN_IN = f"{PREFIX}/signin"
STATIC = f"{PREFIX}/static/"
MAX_FORM = 4096  # bytes of a sign-in or sign-out form
LOOPBACK = "loopback (no admin token exists)"
ENV_HOLDER = "env:"  # a session of HITL_ADMIN_TOKEN: "env:" and the token's fingerprint
TOKEN_HOLDER = "token:"  # noqa: S105 (a prefix, not a secret)
# Who is looking, and their session if any, on the request.
HOLDER: web.RequestKey[str] = web.RequestKey("holder")
SESSION: web.RequestKey[Session | None] = web.RequestKey("session")

Render = Callable[..., web.Response]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def shown_holder(holder: str) -> str:
    return "HITL_ADMIN_TOKEN" if holder.startswith(ENV_HOLDER) else holder


class Access:
    """The console's gate (`middleware`) and its sign-in and sign-out handlers."""

    def __init__(
        self,
        log: RequestLogStore,
        tokens: Tokens,
        sessions: Sessions,
        open_sessions: SessionStore,
        render: Render,
        *,
        admin_token: str | None,
        cookie_secure: bool | None,
        throttle: SignInThrottle | None = None,
    ) -> None:
        self.log, self.tokens, self.sessions, self.render = log, tokens, sessions, render
        self.open_sessions = open_sessions
        self.admin_token = admin_token
        self.cookie_secure = cookie_secure
        self.throttle = throttle or SignInThrottle()
        self._env_holder = (
            ENV_HOLDER + hashlib.sha256(admin_token.encode()).hexdigest()[:16]
            if admin_token
            else None
        )

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path == PREFIX:  # the console's address as typed: its overview
            raise web.HTTPFound(f"{PREFIX}/")
        if request.path.startswith(STATIC):
            request[SESSION] = None
            return await handler(request)
        session = await self._session(request.cookies.get(SESSION_COOKIE))
        request[SESSION] = session
        if request.path == SIGN_IN:
            return await handler(request)
        if session is not None and await self._still_valid(session.holder):
            request[HOLDER] = session.holder
            return await handler(request)
        if await self.configured():
            raise web.HTTPSeeOther(SIGN_IN)
        if not is_loopback(request.remote, _forwarded(request)):
            message = (
                "No admin token exists yet, so the admin console answers this machine only "
                "(loopback). Make one with `hitl-bridge tokens create --name NAME --admin` or "
                "set HITL_ADMIN_TOKEN, then sign in."
            )
            return self.render(request, "message.html", 403, heading="Refused", message=message)
        request[HOLDER] = LOOPBACK
        return await handler(request)

    async def configured(self) -> bool:
        """Whether any admin token exists (then everyone signs in, loopback too)."""
        return self.admin_token is not None or await self.tokens.has_admin()

    async def sign_in_form(self, request: web.Request) -> web.StreamResponse:
        session = request[SESSION]
        if session is not None and await self._still_valid(session.holder):
            raise web.HTTPSeeOther(f"{PREFIX}/")
        return self._form_page(request, session, 200)

    async def sign_in(self, request: web.Request) -> web.StreamResponse:
        form = await self._form(request)
        if isinstance(form, web.Response):
            return form
        session: Session | None = request[SESSION]
        if not self.sessions.csrf_ok(session, form.get("csrf")):
            error = "The sign-in form had expired: sign in again."
            return self._form_page(request, None, 403, error=error)
        address = request.remote or "unknown"
        holder = await self._holder_of(form.get("token", ""))  # always checked: see auth.py
        if holder is None:
            return await self._refused(request, session, address)
        await self._audit("admin.signed_in", shown_holder(holder), remote=address)
        signed, cookie = self.sessions.issue(holder)
        now = datetime.now(UTC)
        await self.open_sessions.open_session(signed.key, holder, now, signed.expires_at)
        response = web.Response(status=303, headers={"Location": f"{PREFIX}/"})
        self._set_cookie(request, response, cookie)
        return response

    async def sign_out(self, request: web.Request) -> web.StreamResponse:
        form = await self._form(request)
        if isinstance(form, web.Response):
            return form
        session: Session | None = request[SESSION]
        if not self.sessions.csrf_ok(session, form.get("csrf")):
            message = "The sign-out form had expired: reload the page and sign out again."
            return self.render(request, "message.html", 403, heading="Refused", message=message)
        assert session is not None  # csrf_ok says so
        await self.open_sessions.close_session(session.key)
        await self._audit("admin.signed_out", shown_holder(session.holder))
        response = web.Response(status=303, headers={"Location": SIGN_IN})
        response.del_cookie(SESSION_COOKIE, path=PREFIX)
        return response

    def csrf(self, request: web.Request) -> str:
        session: Session | None = request.get(SESSION)
        return self.sessions.csrf(session) if session is not None else ""

    async def _refused(
        self, request: web.Request, session: Session | None, address: str
    ) -> web.Response:
        """A wrong token: 401 and audited; past the throttle's limit 429, audited once a burst
        (a client hammering the form writes a bounded number of audit rows)."""
        counted = self.throttle.failed(address)
        if not self.throttle.over(counted):
            await self._audit("admin.sign_in_refused", None, remote=address)
            error = "That token does not sign in here (an admin token, live, is needed)."
            return self._form_page(request, session, 401, error=error)
        if counted == self.throttle.limit + 1:
            await self._audit("admin.sign_in_throttled", None, remote=address)
        error = "Too many wrong tokens from your address: wait a few minutes."
        response = self._form_page(request, session, 429, error=error)
        response.headers["Retry-After"] = str(int(self.throttle.window))
        return response

    async def _session(self, cookie: str | None) -> Session | None:
        """The cookie's session; a signed-in one only while its row is open (not signed out)."""
        session = self.sessions.read(cookie)
        if session is None or not session.signed_in:
            return session
        holder = await self.open_sessions.session_holder(session.key, datetime.now(UTC))
        return session if holder == session.holder else None

    async def _holder_of(self, presented: str) -> str | None:
        if self.admin_token and same_secret(presented, self.admin_token):
            return self._env_holder
        token = await self.tokens.check_admin(presented)
        return TOKEN_HOLDER + token.name if token is not None else None

    async def _still_valid(self, holder: str) -> bool:
        if holder.startswith(TOKEN_HOLDER):
            return await self.tokens.is_live_admin(holder.removeprefix(TOKEN_HOLDER))
        return bool(holder) and holder == self._env_holder

    def _form_page(
        self, request: web.Request, session: Session | None, status: int, *, error: str = ""
    ) -> web.Response:
        """The sign-in form, with a CSRF token of the visitor's session (a new one if none)."""
        cookie = None
        if session is None or session.holder:
            session, cookie = self.sessions.issue()
        request[SESSION] = session
        response = self.render(request, "signin.html", status, error=error)
        if cookie is not None:
            self._set_cookie(request, response, cookie)
        return response

    async def _form(self, request: web.Request) -> dict[str, str] | web.Response:
        """The POSTed form's fields (the first of each), or the page refusing it."""
        try:
            body = await read_body(request, MAX_FORM)
            fields = parse_qs(body.decode(), max_num_fields=10, strict_parsing=False)
        except BodyTooLarge:
            return self.render(request, "message.html", 413, heading="Refused",
                               message="That form is too large.")  # fmt: skip
        except ValueError:  # not UTF-8, too many fields
            return self.render(request, "message.html", 400, heading="Refused",
                               message="That form could not be read.")  # fmt: skip
        return {name: values[0] for name, values in fields.items()}

    def _set_cookie(self, request: web.Request, response: web.StreamResponse, value: str) -> None:
        secure = self.cookie_secure if self.cookie_secure is not None else request.secure
        response.set_cookie(
            SESSION_COOKIE, value, path=PREFIX, max_age=SESSION_SECONDS, httponly=True,
            samesite="Strict", secure=secure,
        )  # fmt: skip

    async def _audit(self, action: str, actor: str | None, **detail: Any) -> None:
        await self.log.append_audit(AuditEntry(action, datetime.now(UTC), None, actor, detail))


def _forwarded(request: web.Request) -> bool:
    return any(name in request.headers for name in ("Forwarded", "X-Forwarded-For", "X-Real-IP"))
