"""The admin console over HTTP (aiohttp's client against the served app): who may see it,
signing in and out, the pages, the CSV export, the security headers."""

from __future__ import annotations

import asyncio
import csv
import io
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass

import aiohttp
import pytest
from sqlalchemy import update

from adapters.doors.admin import app as admin_app
from adapters.doors.admin.app import SECURITY_HEADERS
from bot.audit.chain import ChainCheck as AuditChainCheck
from bot.audit.chain import ChainReport
from bot.store import SqlStore
from bot.store.tables import audit
from tests.adapters.doors.admin.conftest import ENV_TOKEN, SCRIPT, Serve, Served, fill


@pytest.fixture
async def client() -> AsyncIterator[aiohttp.ClientSession]:
    # unsafe=True: keep cookies of an IP address host (127.0.0.1), as a browser does.
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        yield session


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found is not None, page
    return found.group(1)


async def sign_in(
    client: aiohttp.ClientSession, served: Served, token: str
) -> aiohttp.ClientResponse:
    async with client.get(f"{served.url}/admin/signin") as form:
        csrf = csrf_of(await form.text())
    data = {"csrf": csrf, "token": token}
    async with client.post(f"{served.url}/admin/signin", data=data, allow_redirects=False) as r:
        await r.read()
        return r


def assert_secured(response: aiohttp.ClientResponse) -> None:
    for name, value in SECURITY_HEADERS.items():
        assert response.headers.get(name) == value, name
    assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]


async def test_without_an_admin_token_loopback_sees_it_and_others_are_refused(
    serve: Serve, client: aiohttp.ClientSession
) -> None:
    served = await serve()
    await fill(served.store)
    async with client.get(f"{served.url}/admin/") as page:
        assert page.status == 200
        text = await page.text()
        assert_secured(page)
    assert "chain verification: not configured" in text
    assert "loopback (no admin token exists)" in text
    assert "/admin/signout" not in text  # nobody signed in: nothing to sign out of
    relayed = {"X-Forwarded-For": "203.0.113.9"}  # a proxy's request: not this machine
    async with client.get(f"{served.url}/admin/requests", headers=relayed) as refused:
        assert refused.status == 403
        assert "tokens create --name NAME --admin" in await refused.text()
        assert_secured(refused)


async def test_every_admin_response_carries_the_headers(
    serve: Serve, client: aiohttp.ClientSession
) -> None:
    served = await serve()
    for path in ("/admin/static/console.css", "/admin/nothing-here", "/admin/requests.csv",
                 "/admin/signin", "/admin/requests/none"):  # fmt: skip
        async with client.get(served.url + path, allow_redirects=False) as response:
            await response.read()
            assert_secured(response)
    async with client.get(f"{served.url}/admin", allow_redirects=False) as bare:
        assert bare.status == 302 and bare.headers["Location"] == "/admin/"
    async with client.get(f"{served.url}/admin/static/console.css") as css:
        assert css.status == 200 and css.content_type == "text/css"


async def test_an_admin_token_signs_in_and_out_a_plain_one_does_not(
    serve: Serve, client: aiohttp.ClientSession
) -> None:
    served = await serve()
    plain, _ = await served.tokens.create("ci")
    admin, _ = await served.tokens.create("alice", admin=True)
    async with client.get(f"{served.url}/admin/requests", allow_redirects=False) as away:
        assert away.status == 303 and away.headers["Location"] == "/admin/signin"
        assert_secured(away)
    refused = await sign_in(client, served, plain)
    assert refused.status == 401
    (entry,) = [e for e in await served.store.list_audit() if e.action == "admin.sign_in_refused"]
    assert entry.detail == {"remote": "127.0.0.1"} and plain not in str(entry)
    signed = await sign_in(client, served, admin)
    assert signed.status == 303
    cookie = signed.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/admin" in cookie
    assert "Secure" not in cookie  # plain http, not configured
    async with client.get(f"{served.url}/admin/requests") as page:
        assert page.status == 200
        text = await page.text()
    assert "token:alice" in text
    audit = [(e.action, e.actor_id) for e in await served.store.list_audit(limit=3)]
    assert ("admin.signed_in", "token:alice") in audit
    # Sign-out needs the page's CSRF token: without it, refused; with it, signed out.
    async with client.post(f"{served.url}/admin/signout", data={}) as forged:
        assert forged.status == 403
    data = {"csrf": csrf_of(text)}
    async with client.post(f"{served.url}/admin/signout", data=data, allow_redirects=False) as out:
        assert out.status == 303 and out.headers["Location"] == "/admin/signin"
    async with client.get(f"{served.url}/admin/requests", allow_redirects=False) as again:
        assert again.status == 303


async def test_a_cookie_saved_before_sign_out_opens_nothing_on_any_worker(
    serve: Serve, client: aiohttp.ClientSession
) -> None:
    """Two workers on one database and one session key: signing out on the first ends the
    session on both, though the saved cookie is still correctly signed and unexpired."""
    key = b"k" * 32
    first, second = await serve(session_key=key), await serve(session_key=key)
    admin, _ = await first.tokens.create("alice", admin=True)
    signed = await sign_in(client, first, admin)
    assert signed.status == 303
    saved = {"Cookie": f"hitl_admin={signed.cookies['hitl_admin'].value}"}

    async def status(served: Served) -> int:
        async with (
            aiohttp.ClientSession() as bare,
            bare.get(f"{served.url}/admin/requests", headers=saved, allow_redirects=False) as page,
        ):
            return page.status

    assert await status(first) == 200 and await status(second) == 200
    async with client.get(f"{first.url}/admin/") as page:
        data = {"csrf": csrf_of(await page.text())}
    async with client.post(f"{first.url}/admin/signout", data=data, allow_redirects=False) as out:
        assert out.status == 303
    assert await status(first) == 303 and await status(second) == 303


async def test_revoking_the_token_ends_its_sessions(
    serve: Serve, client: aiohttp.ClientSession
) -> None:
    served = await serve()
    admin, _ = await served.tokens.create("alice", admin=True)
    assert (await sign_in(client, served, admin)).status == 303
    await served.tokens.revoke("alice")
    async with client.get(f"{served.url}/admin/", allow_redirects=False) as page:
        # No admin token is left: loopback sees the console again, as nobody.
        assert page.status == 200 and "token:alice" not in await page.text()
    await served.tokens.create("bob", admin=True)
    async with client.get(f"{served.url}/admin/", allow_redirects=False) as page:
        assert page.status == 303


async def test_wrong_tokens_are_throttled_and_the_right_one_still_signs_in(
    serve: Serve, client: aiohttp.ClientSession
) -> None:
    """Past five wrong tokens from an address, wrong ones are answered 429 (audited once a
    burst); the right token from that same address signs in at once: no lockout."""
    served = await serve(admin_token=ENV_TOKEN)
    statuses = [(await sign_in(client, served, f"wrong-{n}")).status for n in range(8)]
    assert statuses == [401] * 5 + [429] * 3
    actions = [e.action for e in await served.store.list_audit()]
    assert actions.count("admin.sign_in_refused") == 5
    assert actions.count("admin.sign_in_throttled") == 1  # bounded: not one row per attempt
    signed = await sign_in(client, served, ENV_TOKEN)
    assert signed.status == 303
    async with client.get(f"{served.url}/admin/") as page:
        assert 'signed in as <span id="holder">HITL_ADMIN_TOKEN</span>' in await page.text()


async def test_secure_cookies_when_configured(serve: Serve, client: aiohttp.ClientSession) -> None:
    served = await serve(admin_token=ENV_TOKEN, cookie_secure=True)
    async with client.get(f"{served.url}/admin/signin") as form:
        assert "Secure" in form.headers["Set-Cookie"]


async def test_a_form_without_its_csrf_token_is_refused(
    serve: Serve, client: aiohttp.ClientSession
) -> None:
    served = await serve(admin_token=ENV_TOKEN)
    async with client.post(f"{served.url}/admin/signin", data={"token": ENV_TOKEN}) as r:
        assert r.status == 403 and "expired" in await r.text()
    big = {"csrf": "x", "token": "y" * 5000}
    async with client.post(f"{served.url}/admin/signin", data=big) as r:
        assert r.status == 413


@dataclass
class Report:
    checked: int
    problem: str | None
    first_bad_id: int | None

    @property
    def intact(self) -> bool:
        return self.problem is None


async def overview(client: aiohttp.ClientSession, served: Served) -> str:
    async with client.get(f"{served.url}/admin/") as page:
        assert page.status == 200
        return await page.text()


async def test_the_chain_status_as_reported(serve: Serve, client: aiohttp.ClientSession) -> None:
    async def intact() -> Report:
        return Report(42, None, None)

    async def broken() -> Report:
        return Report(7, "row 7's hash does not match its content", 7)

    async def failing() -> Report:
        raise RuntimeError("database gone")

    assert "intact, 42 rows checked" in await overview(client, await serve(chain=intact))
    text = await overview(client, await serve(chain=broken))
    assert "BROKEN at row 7: row 7&#39;s hash does not match its content" in text
    text = await overview(client, await serve(chain=failing))
    assert "could not run: RuntimeError: database gone" in text


async def test_filters_pages_and_a_timeline(serve: Serve, client: aiohttp.ClientSession) -> None:
    served = await serve()
    await fill(served.store)

    async def table(query: str) -> tuple[int, str]:
        async with client.get(f"{served.url}/admin/requests?{query}") as page:
            return page.status, await page.text()

    status, text = await table("status=declined")
    assert status == 200 and re.findall(r'class="request-link"[^>]*>([^<]+)<', text) == [
        "r-script", "r1",
    ]  # fmt: skip
    _, text = await table("text=deploy&actor=U9")
    assert re.findall(r'class="request-link"[^>]*>([^<]+)<', text) == ["r1", "r0"]
    status, text = await table("since=yesterday")
    assert status == 400 and "since: a date (2026-12-01) or an ISO time" in text
    _, text = await table("")
    assert SCRIPT not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    async with client.get(f"{served.url}/admin/requests/r-script") as page:
        text = await page.text()
    assert SCRIPT not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    events = re.findall(
        r'<tr class="event">\s*<td>\d+</td>\s*<td class="when"[^>]*>[^<]+</td>\s*<td>([^<]+)<', text
    )
    assert events == ["request.created", "request.rejected"]
    async with client.get(f"{served.url}/admin/requests/%3Cb%3E") as missing:
        assert missing.status == 404 and "&lt;b&gt;" in await missing.text()


async def test_the_csv_export_follows_the_filter(
    serve: Serve, client: aiohttp.ClientSession
) -> None:
    served = await serve()
    await fill(served.store)
    async with client.get(f"{served.url}/admin/requests.csv?tool=approve_deploy") as export:
        assert export.status == 200 and export.content_type == "text/csv"
        assert "attachment" in export.headers["Content-Disposition"]
        rows = list(csv.DictReader(io.StringIO(await export.text())))
    assert [row["id"] for row in rows] == ["r3", "r1", "r0"]
    assert [row["outcome"] for row in rows] == ["answered", "declined", "answered"]
    async with client.get(f"{served.url}/admin/requests.csv?status=nope") as bad:
        assert bad.status == 400


async def test_the_overview_names_the_first_tampered_row(
    serve: Serve, store: SqlStore, client: aiohttp.ClientSession
) -> None:
    """The chain's status as `audit verify` reads it: intact, then the edited row named."""
    served = await serve(chain=AuditChainCheck(store, max_age=0))
    await fill(store)

    async def overview() -> str:
        async with client.get(f"{served.url}/admin/") as page:
            return await page.text()

    assert "chain verification: intact" in await overview()
    first = (await store.list_audit(limit=1_000))[-1]
    await store.write(
        lambda conn: conn.execute(
            update(audit).where(audit.c.id == first.id).values(detail={"forged": True})
        )
    )
    status = await overview()
    assert f"row id {first.id} (chain_seq 1, {first.action}" in status
    assert "content changed" in status


async def test_a_long_walk_does_not_hold_the_page(
    serve: Serve,
    store: SqlStore,
    client: aiohttp.ClientSession,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The overview waits a moment for the chain's walk, then shows that it is under way;
    the walk goes on, and the next page shows what it found."""
    check = AuditChainCheck(store, max_age=0)
    release = asyncio.Event()

    async def slow_walk() -> ChainReport:
        await release.wait()  # a million rows take about half a minute
        return await check()

    monkeypatch.setattr(admin_app, "CHAIN_WAIT", 0.05)
    served = await serve(chain=slow_walk)
    async with client.get(f"{served.url}/admin/") as page:
        assert "chain verification: under way" in await page.text()
    release.set()
    async with client.get(f"{served.url}/admin/") as page:
        assert "chain verification: intact" in await page.text()
