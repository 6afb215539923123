"""The admin console under /admin (docs/audit-and-console.md): the requests and their
decisions, filtered, paginated and exported as CSV or JSON (people by display name,
bot/bridge/people.py, the id on hover); each request's timeline; the audit chain's status; the
charts.

Server-rendered with Jinja2 (autoescape on: every value a model or a person wrote is escaped),
no script at all. Every /admin response carries the headers of SECURITY_HEADERS (a strict CSP
among them). Access and sessions: adapters/doors/admin/access.py.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlencode

from aiohttp import web
from jinja2 import Environment, FileSystemLoader, StrictUndefined

from adapters.doors.admin.access import HOLDER, PREFIX, SESSION, Access, shown_holder
from adapters.doors.admin.auth import Sessions, SessionStore
from adapters.doors.admin.charts import counted, decision_chart, duration, outcomes_chart
from adapters.doors.admin.export import json_items, lines
from adapters.serve.http_limits import one_line
from adapters.serve.settings import Settings
from bot.bridge.people import PeopleNames
from bot.doors.tokens import Tokens
from bot.reports.figures import decision_times, outcomes_per_tool
from bot.reports.request_log import (
    OUTCOMES,
    FilterError,
    LoggedRequest,
    RequestFilter,
    RequestLogStore,
    filter_query,
    read_filter,
    room_text,
    surface_of,
)
from bot.store import SqlStore
from bot.store.admin_sessions import AdminSessionTables
from bot.store.doors import DoorTables
from bot.store.request_log import RequestLog

HERE = Path(__file__).parent
PAGE_SIZE = 50
CSV_BATCH = 500  # requests read per query while a CSV streams: memory stays flat
DEFAULT_DAYS, MAX_DAYS = 30, 366
FIGURE_ROWS = 200_000  # requests the charts are computed from, at most (the newest)
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'none'; object-src 'none'; base-uri 'none'; "
        "form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


CHAIN_WAIT = 2.0  # seconds the overview waits for the audit chain's walk


class ChainStatus(Protocol):
    """What the audit chain's verification reports (bot/audit/chain.py's ChainReport)."""

    @property
    def checked(self) -> int: ...

    @property
    def problem(self) -> str | None: ...

    @property
    def first_bad_id(self) -> int | None: ...

    @property
    def intact(self) -> bool: ...


VerifyChain = Callable[[], Awaitable[ChainStatus]]


@dataclass(frozen=True, slots=True)
class ChainShown:
    """The chain's status as the overview shows it; `failed` when the check could not run."""

    checked: int = 0
    intact: bool = False
    problem: str | None = None
    first_bad_id: int | None = None
    failed: str | None = None
    running: bool = False  # a walk is under way (a long chain): its result shows next time


class AdminConsole:
    """The console's pages over a request log; `mount` adds them to the server's app."""

    def __init__(
        self,
        log: RequestLogStore,
        tokens: Tokens,
        open_sessions: SessionStore,
        *,
        admin_token: str | None = None,
        session_key: bytes | None = None,
        cookie_secure: bool | None = None,
        chain: VerifyChain | None = None,
        people: PeopleNames | None = None,
    ) -> None:
        self.log = log
        self.chain = chain
        self.people = people  # display names of people (ids shown when None or unknown)
        self._walk: asyncio.Future[ChainStatus] | None = None  # the chain's latest walk
        self.templates = Environment(
            loader=FileSystemLoader(HERE / "templates"), autoescape=True,
            undefined=StrictUndefined,
        )  # fmt: skip
        self.templates.filters["tojson_text"] = _json_text
        self.templates.filters["duration"] = lambda s: "" if s is None else duration(s)
        self.templates.filters["counted"] = counted
        # A moment to the second, UTC as every page says (the exact one on hover).
        self.templates.filters["moment"] = lambda at: at.astimezone(UTC).strftime(
            "%Y-%m-%d %H:%M:%S"
        )
        self.templates.filters["room"] = room_text
        self.templates.filters["surface"] = surface_of
        sessions = Sessions(session_key or secrets.token_bytes(32))
        self.access = Access(log, tokens, sessions, open_sessions, self.render,
                             admin_token=admin_token, cookie_secure=cookie_secure)  # fmt: skip

    def mount(self, app: web.Application) -> None:
        console = web.Application(middlewares=[self.access.middleware])
        console.on_response_prepare.append(_secure_headers)
        console.router.add_get("/", self.overview)
        console.router.add_get("/requests", self.requests)
        console.router.add_get("/requests.csv", self.export)
        console.router.add_get("/requests.json", self.export)
        console.router.add_get("/requests/{request_id}", self.request)
        console.router.add_get("/signin", self.access.sign_in_form)
        console.router.add_post("/signin", self.access.sign_in)
        console.router.add_post("/signout", self.access.sign_out)
        console.router.add_static("/static", HERE / "static", append_version=False)
        app.add_subapp(PREFIX, console)

    def render(self, request: web.Request, name: str, status: int, **context: Any) -> web.Response:
        holder = request.get(HOLDER)
        session = request.get(SESSION)
        page = self.templates.get_template(name).render(
            holder=shown_holder(holder) if holder else None,
            # A sign-out form only for a session signed in (not for loopback's open access).
            signed_in=holder is not None and session is not None and session.signed_in,
            csrf=self.access.csrf(request),
            error=context.pop("error", ""),
            **context,
        )
        return web.Response(text=page, status=status, content_type="text/html")

    async def overview(self, request: web.Request) -> web.Response:
        days = _int(request.query.get("days"), DEFAULT_DAYS, 1, MAX_DAYS)
        since = datetime.now(UTC) - timedelta(days=days)
        rows = await self.log.settled_since(since, FIGURE_ROWS)
        return self.render(
            request, "overview.html", 200, chain=await self._chain(), days=days,
            max_days=MAX_DAYS, rows=len(rows), capped=len(rows) >= FIGURE_ROWS,
            decision_chart=decision_chart(decision_times(rows)),
            outcomes_chart=outcomes_chart(outcomes_per_tool(rows)),
        )  # fmt: skip

    async def requests(self, request: web.Request) -> web.Response:
        query = {name: request.query.get(name, "") for name in _FILTER_FIELDS}
        try:
            where = read_filter(query)
        except FilterError as err:
            return self.render(request, "requests.html", 400, error=str(err),
                               **_table(query, RequestFilter(), [], 0, 1))  # fmt: skip
        total = await self.log.count(where)
        pages = max(1, -(-total // PAGE_SIZE))
        page = _int(request.query.get("page"), 1, 1, pages)
        rows = await self.log.page(where, (page - 1) * PAGE_SIZE, PAGE_SIZE)
        names = await self._names(who for row in rows for who in _people(row))
        return self.render(request, "requests.html", 200, names=names,
                           **_table(query, where, rows, total, page))  # fmt: skip

    async def request(self, request: web.Request) -> web.Response:
        request_id = request.match_info["request_id"]
        row = await self.log.logged(request_id)
        if row is None:
            return self.render(request, "message.html", 404, heading="Not found",
                               message=f"No request has the id {request_id}.")  # fmt: skip
        arguments = json.dumps(row.record.arguments, ensure_ascii=False, indent=2, sort_keys=True)
        timeline = await self.log.timeline(request_id)
        names = await self._names([*_people(row), *(entry.actor_id for entry in timeline)])
        return self.render(request, "request.html", 200, row=row, arguments=arguments,
                           timeline=timeline, names=names)  # fmt: skip

    async def export(self, request: web.Request) -> web.StreamResponse:
        """The filtered table as CSV or JSON (an array), streamed a batch at a time (newest
        first)."""
        try:
            where = read_filter({name: request.query.get(name, "") for name in _FILTER_FIELDS})
        except FilterError as err:
            return self.render(request, "message.html", 400, heading="Bad filter",
                               message=str(err))  # fmt: skip
        as_json = request.path.endswith(".json")
        kind, extension = ("application/json", "json") if as_json else ("text/csv", "csv")
        response = web.StreamResponse(headers={
            "Content-Type": f"{kind}; charset=utf-8",
            "Content-Disposition": f'attachment; filename="hitl-requests.{extension}"',
        })  # fmt: skip
        await response.prepare(request)
        try:
            await response.write(b"[\n" if as_json else lines([], header=True).encode())
            mark: tuple[datetime, str] | None = None
            while batch := await self.log.after(where, mark, CSV_BATCH):
                text = json_items(batch, first=mark is None) if as_json else lines(batch)
                await response.write(text.encode())
                mark = (batch[-1].record.created_at, batch[-1].record.id)
            await response.write(b"\n]\n" if as_json else b"")
            await response.write_eof()
        except ConnectionResetError:  # the admin stopped the download: nothing to answer
            pass
        return response

    async def _names(self, ids: Iterable[str | None]) -> dict[str, str]:
        """People's display names by id (those known within the directory's short wait)."""
        return await self.people.names(ids) if self.people is not None else {}

    async def _chain(self) -> ChainShown | None:
        """The chain's status, waiting at most CHAIN_WAIT seconds: a million rows take half a
        minute to walk, and the page must not. The walk goes on, and a later page shows it."""
        if self.chain is None:
            return None
        if self._walk is None or self._walk.done():
            self._walk = asyncio.ensure_future(self.chain())
        try:
            report = await asyncio.wait_for(asyncio.shield(self._walk), CHAIN_WAIT)
        except TimeoutError:
            return ChainShown(running=True)
        except Exception as err:  # the page still shows, saying the check failed and why
            return ChainShown(failed=one_line(f"{type(err).__name__}: {err}"))
        return ChainShown(report.checked, report.intact, report.problem, report.first_bad_id)


_FILTER_FIELDS = ("text", "status", "actor", "tool", "room", "since", "until")


def _people(row: LoggedRequest) -> list[str | None]:
    """The people a row names (a door's token is no person)."""
    asked = row.asked_by if row.requester is None else None
    return [asked, row.asked_for, row.record.settled_by]


def _table(
    query: dict[str, str], where: RequestFilter, rows: list[LoggedRequest], total: int, page: int
) -> dict[str, Any]:
    """The requests page's context: the form as typed, and links that keep the filter."""
    kept = filter_query(where)
    pages = max(1, -(-total // PAGE_SIZE))

    def link(to: int) -> str:
        return "?" + urlencode({**kept, "page": str(to)})

    return {
        "query": query, "rows": rows, "total": total, "page": page, "pages": pages,
        "outcomes": list(OUTCOMES.values()),
        "csv_query": "?" + urlencode(kept) if kept else "",
        "previous": link(page - 1) if page > 1 else None,
        "next": link(page + 1) if page < pages else None,
    }  # fmt: skip


def _int(value: str | None, default: int, low: int, high: int) -> int:
    try:
        number = int(value) if value else default
    except ValueError:
        number = default
    return min(max(number, low), high)


def _json_text(value: object) -> str:
    """JSON as text (escaped by the template like any text, never marked safe)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


async def _secure_headers(_: web.Request, response: web.StreamResponse) -> None:
    response.headers.update(SECURITY_HEADERS)


def open_console(
    settings: Settings,
    store: SqlStore,
    chain: VerifyChain | None = None,
    people: PeopleNames | None = None,
) -> AdminConsole:
    """The console of `serve`, on its store, configured by HITL_ADMIN_*
    (adapters/serve/settings.py)."""
    key = settings.admin_session_key
    token = settings.admin_token
    return AdminConsole(
        RequestLog(store), Tokens(DoorTables(store)), AdminSessionTables(store),
        admin_token=token.get_secret_value() if token is not None else None,
        session_key=key.get_secret_value().encode() if key is not None else None,
        cookie_secure=settings.admin_cookie_secure, chain=chain, people=people,
    )  # fmt: skip
