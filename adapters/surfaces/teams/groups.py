"""Entra ID groups (`entra:<group id>`) read for the directory (bot/policies/directory.py) from
Microsoft Graph: `GET {graph}/v1.0/groups/{id}/transitiveMembers/microsoft.graph.user`, so
the members of nested groups count too.

The token is app-only, for Graph's scope, from the Teams SDK's credentials (`for_app`); the
app registration needs the application permission GroupMember.Read.All, admin-consented.
The project has no Graph SDK (the Teams SDK's Graph client is an optional extra), so Graph is
called over HTTP with the App's own connection pool. Every failure (no token, a refusal, an
outage, an answer we cannot read) is GroupUnreadable naming Graph's error code: a group is
never taken as empty.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from adapters.surfaces.teams.http_adapter import App
from bot.policies.directory import GroupUnreadable

__all__ = ["GRAPH_URL", "PREFIX", "EntraGroups", "GraphToken"]

log = logging.getLogger(__name__)

PREFIX = "entra:"
GRAPH_URL = "https://graph.microsoft.com"
# The tenant the SDK's own App asks Graph tokens for when its credentials name none.
DEFAULT_TENANT = "common"
ATTEMPTS = 3
TIMEOUT = 5.0  # seconds per request: a click waits for this read (the cache spares most)
MAX_RETRY_AFTER = 5.0  # seconds: wait no longer than this for a 429's Retry-After
MAX_PAGES = 100  # of 999 members each: a group beyond that is not an approver list
# Graph documents the cast to users on transitiveMembers as an advanced query: eventual
# consistency with a count. A member added a moment ago may be missing for a moment.
QUERY = {"$select": "id", "$top": "999", "$count": "true"}
HEADERS = {"ConsistencyLevel": "eventual", "Accept": "application/json"}

GraphToken = Callable[[], Awaitable[str | None]]
"""An app-only access token for Graph; None when there are no credentials to get one with."""


class EntraGroups:
    """A `GroupSource` for Entra ID groups: `members("entra:<group id>")` is their users'
    object ids (what Teams reports a clicker as, its `aadObjectId`)."""

    def __init__(
        self,
        token: GraphToken,
        http: httpx.AsyncClient,
        *,
        graph_url: str = GRAPH_URL,
        attempts: int = ATTEMPTS,
        timeout: float = TIMEOUT,
    ) -> None:
        """`http` is the caller's to close; `graph_url` is Graph's scheme and host."""
        self._token, self._http = token, http
        self._graph = httpx.URL(graph_url.rstrip("/"))
        self._attempts, self._timeout = attempts, timeout

    @classmethod
    def for_app(cls, app: App, *, tenant_id: str | None = None) -> EntraGroups:
        """Read with the Teams SDK App's credentials (its token provider, for its cloud's Graph
        scope) and connection pool (closed with the App), at its cloud's Graph address."""
        credentials = app.credentials
        tenant = tenant_id or (credentials.tenant_id if credentials else None) or DEFAULT_TENANT
        scope = app.cloud.graph_scope

        async def token() -> str | None:
            got = await app.token_provider.get_app_token(scope, tenant)
            return None if got is None else str(got)

        graph = httpx.URL(scope)  # "https://graph.microsoft.com/.default": the host is Graph's
        return cls(
            token, app.http_client.http, graph_url=f"{graph.scheme}://{graph.netloc.decode()}"
        )

    async def members(self, group: str) -> frozenset[str]:
        group_id = _group_id(group)
        token = await self._token_for(group)
        url = self._graph.join(f"/v1.0/groups/{group_id}/transitiveMembers/microsoft.graph.user")
        url = url.copy_merge_params(QUERY)
        members: set[str] = set()
        for _ in range(MAX_PAGES):
            page = await self._get(group, url, token)
            members.update(_ids(group, page))
            next_link = page.get("@odata.nextLink")
            if not next_link:
                return frozenset(members)
            url = self._same_graph(group, next_link)
        raise GroupUnreadable(group, f"Microsoft Graph listed more than {MAX_PAGES} pages")

    async def _token_for(self, group: str) -> str:
        try:
            token = await self._token()
        except Exception as err:  # MSAL's refusals, the identity endpoint unreachable
            log.warning("no Microsoft Graph token for %s: %r", group, err)
            raise GroupUnreadable(
                group, f"no Microsoft Graph token ({type(err).__name__})"
            ) from None
        if not token:
            raise GroupUnreadable(group, "no Microsoft Graph access configured (no credentials)")
        return token

    def _same_graph(self, group: str, link: Any) -> httpx.URL:
        """The next page's link, only on Graph's own host: our token is sent with it."""
        url = httpx.URL(str(link))
        if (url.scheme, url.netloc) != (self._graph.scheme, self._graph.netloc):
            raise GroupUnreadable(group, "Microsoft Graph's next page is on another host")
        return url

    async def _get(self, group: str, url: httpx.URL, token: str) -> dict[str, Any]:
        """One page, retrying 429 (after Retry-After), 5xx and dropped connections."""
        headers = {**HEADERS, "Authorization": f"Bearer {token}"}
        for attempt in range(self._attempts):
            last = attempt == self._attempts - 1
            delay = 0.2 * 2**attempt
            try:
                response = await self._http.get(url, headers=headers, timeout=self._timeout)
            except httpx.TransportError as err:
                if last:
                    why = f"Microsoft Graph unreachable ({type(err).__name__})"
                    raise GroupUnreadable(group, why) from None
            else:
                status = response.status_code
                if status == 200:
                    return _page(group, response)
                if last or (status != 429 and status < 500):
                    raise GroupUnreadable(group, f"Microsoft Graph answered {_said(response)}")
                retry_after = _retry_after(response)
                delay = delay if retry_after is None else retry_after
            await asyncio.sleep(delay)
        raise GroupUnreadable(group, "Microsoft Graph was not asked")  # attempts < 1


def _group_id(group: str) -> str:
    """The group's object id, a GUID: checked before it becomes part of a URL's path."""
    try:
        return str(uuid.UUID(group.removeprefix(PREFIX)))
    except ValueError:
        raise GroupUnreadable(group, "an Entra group id is a GUID") from None


def _page(group: str, response: httpx.Response) -> dict[str, Any]:
    try:
        page = response.json()
    except ValueError:
        page = None
    if not isinstance(page, dict) or not isinstance(page.get("value"), list):
        raise GroupUnreadable(group, "Microsoft Graph's answer is not a list of members")
    return page


def _ids(group: str, page: dict[str, Any]) -> list[str]:
    ids = [item.get("id") for item in page["value"] if isinstance(item, dict)]
    if len(ids) != len(page["value"]) or not all(isinstance(i, str) and i for i in ids):
        raise GroupUnreadable(group, "Microsoft Graph listed a member without an id")
    return [str(i) for i in ids]


def _said(response: httpx.Response) -> str:
    """The HTTP status of a refusal, and Graph's error code when its body has one."""
    try:
        body = response.json()
    except ValueError:  # a proxy's page, not Graph's JSON
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    status = f"HTTP {response.status_code}"
    return f"{status} {code}" if isinstance(code, str) and code else status


def _retry_after(response: httpx.Response) -> float | None:
    """Retry-After in seconds (Graph sends a number), capped; None if absent or not a number."""
    try:
        seconds = float(response.headers.get("retry-after", ""))
    except ValueError:
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)
