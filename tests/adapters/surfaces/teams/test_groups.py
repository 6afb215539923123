"""Entra ID groups read from Microsoft Graph: EntraGroups over httpx against a fake Graph on
loopback (transitive members cast to users, paged by `@odata.nextLink`, Graph's errors), and
with the Teams SDK App's own token provider and cloud (`for_app`)."""

from __future__ import annotations

import dataclasses
import socket
from collections import deque
from collections.abc import AsyncIterator, Callable
from types import TracebackType
from typing import Any, Self

import httpx
import jwt
import pytest
from aiohttp import web
from microsoft_teams.api.auth.cloud_environment import PUBLIC

from adapters.surfaces.teams.groups import EntraGroups
from adapters.surfaces.teams.http_adapter import close_app, new_app
from bot.policies.directory import Directory, GroupUnreadable

GROUP_ID = "6f1c3f5e-0000-4000-8000-0000000000a1"
OPS = f"entra:{GROUP_ID}"
TOKEN = "graph-app-token"
USERS = [f"aad-user-{n}" for n in range(5)]
TENANT = "00000000-0000-0000-0000-0000000te4a7"
MEMBERS = "/v1.0/groups/{id}/transitiveMembers/microsoft.graph.user"

JSON = dict[str, Any]


def graph_error(status: int, code: str, **headers: str) -> web.Response:
    body = {"error": {"code": code, "message": f"{code}: said by the fake Graph"}}
    return web.json_response(body, status=status, headers=headers)


class FakeGraph:
    """`GET /v1.0/groups/{id}/transitiveMembers/microsoft.graph.user`, `page_size` members a
    page, for the bearer `token`; `faults` answer the next requests instead."""

    def __init__(self, token: str = TOKEN, page_size: int = 2) -> None:
        self.token, self.page_size = token, page_size
        self.groups: dict[str, list[str]] = {}
        self.requests: list[tuple[str, dict[str, str], dict[str, str]]] = []  # path, query, hdrs
        self.faults: deque[Callable[[], web.Response]] = deque()
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_get(MEMBERS, self._members)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        host, port = self._runner.addresses[0][:2]
        self.url = f"http://{host}:{port}"
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _members(self, request: web.Request) -> web.Response:
        self.requests.append((request.path, dict(request.query), dict(request.headers)))
        if self.faults:
            return self.faults.popleft()()
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            return graph_error(401, "InvalidAuthenticationToken")
        members = self.groups.get(request.match_info["id"])
        if members is None:
            return graph_error(404, "Request_ResourceNotFound")
        skip = int(request.query.get("$skiptoken", "0"))
        page = members[skip : skip + self.page_size]
        body: JSON = {"@odata.count": len(members), "value": [
            {"@odata.type": "#microsoft.graph.user", "id": user} for user in page
        ]}  # fmt: skip
        if skip + self.page_size < len(members):
            query = {**request.query, "$skiptoken": str(skip + self.page_size)}
            body["@odata.nextLink"] = str(request.url.with_query(query))
        return web.json_response(body)


@pytest.fixture
async def graph() -> AsyncIterator[FakeGraph]:
    async with FakeGraph() as graph:
        graph.groups[GROUP_ID] = list(USERS)
        yield graph


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as http:
        yield http


def entra(graph: FakeGraph, http: httpx.AsyncClient, token: str | None = TOKEN) -> EntraGroups:
    async def token_for() -> str | None:
        return token

    return EntraGroups(token_for, http, graph_url=graph.url)


async def test_the_transitive_users_are_read_page_by_page(
    graph: FakeGraph, http: httpx.AsyncClient
) -> None:
    assert await entra(graph, http).members(OPS) == frozenset(USERS)
    assert len(graph.requests) == 3  # five members, two a page
    path, query, headers = graph.requests[0]
    assert path == MEMBERS.format(id=GROUP_ID)
    assert query == {"$select": "id", "$top": "999", "$count": "true"}
    assert headers["Authorization"] == f"Bearer {TOKEN}"
    assert headers["ConsistencyLevel"] == "eventual"  # the cast is an advanced query
    assert [q.get("$skiptoken") for _, q, _ in graph.requests] == [None, "2", "4"]


async def test_a_directory_reads_entra_groups(graph: FakeGraph, http: httpx.AsyncClient) -> None:
    directory = Directory({"entra:": entra(graph, http)})
    assert await directory.is_member("aad-user-4", OPS)
    assert not await directory.is_member("aad-mallory", OPS)
    assert len(graph.requests) == 3  # one read of the three pages, for both lookups


async def test_an_unknown_group_is_unreadable(graph: FakeGraph, http: httpx.AsyncClient) -> None:
    unknown = "entra:6f1c3f5e-0000-4000-8000-00000000dead"
    with pytest.raises(GroupUnreadable) as raised:
        await entra(graph, http).members(unknown)
    assert str(raised.value) == (
        f"the members of {unknown} cannot be read: "
        "Microsoft Graph answered HTTP 404 Request_ResourceNotFound"
    )
    assert len(graph.requests) == 1


async def test_a_missing_permission_is_unreadable_at_once(
    graph: FakeGraph, http: httpx.AsyncClient
) -> None:
    graph.faults.append(lambda: graph_error(403, "Authorization_RequestDenied"))
    with pytest.raises(GroupUnreadable, match=r"HTTP 403 Authorization_RequestDenied$"):
        await entra(graph, http).members(OPS)
    assert len(graph.requests) == 1


async def test_throttling_is_waited_out(graph: FakeGraph, http: httpx.AsyncClient) -> None:
    graph.faults.append(lambda: graph_error(429, "TooManyRequests", **{"Retry-After": "0"}))
    assert await entra(graph, http).members(OPS) == frozenset(USERS)
    assert len(graph.requests) == 4


async def test_an_outage_is_unreadable_after_the_retries(
    graph: FakeGraph, http: httpx.AsyncClient
) -> None:
    graph.faults.extend([lambda: graph_error(503, "ServiceUnavailable")] * 3)
    with pytest.raises(GroupUnreadable, match=r"HTTP 503 ServiceUnavailable$"):
        await entra(graph, http).members(OPS)
    assert len(graph.requests) == 3


async def test_graph_unreachable_is_unreadable(http: httpx.AsyncClient) -> None:
    with socket.socket() as closed:  # a loopback port nobody listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]

    async def token() -> str:
        return TOKEN

    groups = EntraGroups(token, http, graph_url=f"http://127.0.0.1:{port}", attempts=1)
    with pytest.raises(GroupUnreadable, match=r"Microsoft Graph unreachable \(ConnectError\)$"):
        await groups.members(OPS)


async def test_an_answer_that_is_not_graphs_is_unreadable(
    graph: FakeGraph, http: httpx.AsyncClient
) -> None:
    graph.faults.append(lambda: web.Response(text="<html>proxy</html>", content_type="text/html"))
    with pytest.raises(GroupUnreadable, match="answer is not a list of members"):
        await entra(graph, http).members(OPS)


async def test_a_next_page_on_another_host_is_not_followed(
    graph: FakeGraph, http: httpx.AsyncClient
) -> None:
    elsewhere = {"value": [{"id": "aad-user-0"}], "@odata.nextLink": "http://127.0.0.2:9/steal"}
    graph.faults.append(lambda: web.json_response(elsewhere))
    with pytest.raises(GroupUnreadable, match="next page is on another host"):
        await entra(graph, http).members(OPS)
    assert len(graph.requests) == 1


async def test_without_credentials_nothing_is_asked(
    graph: FakeGraph, http: httpx.AsyncClient
) -> None:
    with pytest.raises(GroupUnreadable, match="no Microsoft Graph access configured"):
        await entra(graph, http, token=None).members(OPS)
    assert graph.requests == []


async def test_a_token_that_cannot_be_had_is_unreadable(
    graph: FakeGraph, http: httpx.AsyncClient
) -> None:
    async def refused() -> str:
        raise ValueError("AADSTS7000215: Invalid client secret provided.")

    groups = EntraGroups(refused, http, graph_url=graph.url)
    with pytest.raises(GroupUnreadable, match=r"no Microsoft Graph token \(ValueError\)$"):
        await groups.members(OPS)
    assert graph.requests == []


@pytest.mark.parametrize("group", ["entra:../../users", "entra:", "entra:S0OPSTEAM"])
async def test_a_group_id_that_is_not_a_guid_is_refused(
    graph: FakeGraph, http: httpx.AsyncClient, group: str
) -> None:
    with pytest.raises(GroupUnreadable, match="an Entra group id is a GUID"):
        await entra(graph, http).members(group)
    assert graph.requests == []


async def test_the_teams_apps_token_and_cloud_are_used(graph: FakeGraph) -> None:
    asked: list[tuple[str | list[str], str | None]] = []
    token = jwt.encode({"aud": "graph"}, "k" * 40, algorithm="HS256")  # the SDK decodes it

    def provider(scope: str | list[str], tenant_id: str | None) -> str:
        asked.append((scope, tenant_id))
        return token

    graph.token = token
    cloud = dataclasses.replace(PUBLIC, graph_scope=f"{graph.url}/.default")
    app = new_app(client_id="app-id", tenant_id=TENANT, token=provider, cloud=cloud)
    try:
        assert await EntraGroups.for_app(app).members(OPS) == frozenset(USERS)
    finally:
        await close_app(app)
    assert asked[0] == (f"{graph.url}/.default", TENANT)


async def test_a_teams_app_without_credentials_reads_no_groups(graph: FakeGraph) -> None:
    cloud = dataclasses.replace(PUBLIC, graph_scope=f"{graph.url}/.default")
    app = new_app(cloud=cloud)  # HITL_TEAMS_ALLOW_UNAUTHENTICATED: development only
    try:
        with pytest.raises(GroupUnreadable, match="no Microsoft Graph access configured"):
            await EntraGroups.for_app(app).members(OPS)
    finally:
        await close_app(app)
    assert graph.requests == []
