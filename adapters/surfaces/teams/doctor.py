"""`hitl-bridge doctor`'s Teams check: the credentials obtain a Bot Framework token, and the
policy's Entra groups are read with a Graph token got the same way.

The token is asked of the cloud's login endpoint (the client-credentials grant of
`{login}/{tenant}/oauth2/v2.0/token`, which the Teams SDK asks through MSAL) over httpx:
MSAL insists on https and on asking Microsoft's instance discovery first, so the SDK's own
path cannot be pointed at a stand-in. The cloud is the SDK's: the `CLOUD` variable, else the
public cloud.
"""

from __future__ import annotations

import os
from typing import Any

import httpx
from microsoft_teams.api.auth.cloud_environment import PUBLIC, CloudEnvironment, from_name

from adapters.ops.doctor.results import Result, failed, passed, shown_secret, skipped
from adapters.serve.settings import Settings
from adapters.surfaces.teams.config import TeamsConfig, teams_config
from adapters.surfaces.teams.groups import DEFAULT_TENANT, EntraGroups
from bot import ConfigurationError

TEAMS = "Teams credentials"
SDK_CLOUD = "CLOUD"  # the Teams SDK's variable naming its cloud (Public, USGov, …)
SAID_CHARS = 200  # of the login endpoint's error description
FIXES = {
    "invalid_client": "TEAMS_CLIENT_SECRET is wrong or expired: make a new client secret "
    "under Certificates & secrets of the app registration and set it",
    "unauthorized_client": "TEAMS_CLIENT_ID is not an app of that tenant: check TEAMS_CLIENT_ID "
    "and TEAMS_TENANT_ID",
    "invalid_request": "check TEAMS_TENANT_ID (a tenant id or domain) and TEAMS_CLIENT_ID",
}
OTHER_FIX = "check the network to the login endpoint, and the app registration"


class TokenRefusedError(Exception):
    """The login endpoint gave no token; `error` is its OAuth error code ("" if none)."""

    def __init__(self, error: str, said: str) -> None:
        super().__init__(said)
        self.error = error


def sdk_cloud() -> CloudEnvironment:
    """The cloud the Teams SDK's App uses when given none (`CLOUD`, else the public one)."""
    name = os.environ.get(SDK_CLOUD)
    return from_name(name) if name else PUBLIC


async def app_token(
    http: httpx.AsyncClient, cloud: CloudEnvironment, config: TeamsConfig, scope: str, tenant: str
) -> str:
    """An app-only token for `scope` (client credentials); TokenRefusedError if none."""
    url = f"{cloud.login_endpoint.rstrip('/')}/{tenant}/oauth2/v2.0/token"
    form = {
        "grant_type": "client_credentials", "client_id": config.client_id or "",
        "client_secret": config.client_secret or "", "scope": scope,
    }  # fmt: skip
    try:
        response = await http.post(url, data=form)
    except httpx.HTTPError as err:
        raise TokenRefusedError("", f"cannot reach {url} ({type(err).__name__})") from None
    body: Any = _json(response)
    if response.status_code == 200 and isinstance(body, dict) and body.get("access_token"):
        return str(body["access_token"])
    error = str(body.get("error", "")) if isinstance(body, dict) else ""
    description = str(body.get("error_description", "")) if isinstance(body, dict) else ""
    said = (description.strip().splitlines() or [""])[0][:SAID_CHARS]
    raise TokenRefusedError(error, f"HTTP {response.status_code} {error}: {said}".rstrip(": "))


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


async def credentials(
    settings: Settings, cloud: CloudEnvironment, http: httpx.AsyncClient
) -> list[Result]:
    try:
        config = teams_config(settings)
    except ConfigurationError as err:
        return [failed(TEAMS, str(err), "set both, or neither to leave Teams out")]
    if config is None:
        return [skipped(TEAMS, "TEAMS_CLIENT_ID and TEAMS_CLIENT_SECRET are unset: Teams is "
                        "not served")]  # fmt: skip
    if not config.authenticated:
        why = "HITL_TEAMS_ALLOW_UNAUTHENTICATED=1, no credentials: activities are not verified"
        fix = "set TEAMS_CLIENT_ID and TEAMS_CLIENT_SECRET (unauthenticated: development only)"
        return [failed(TEAMS, why, fix)]
    tenant = config.tenant_id or cloud.login_tenant
    shown = (
        f"TEAMS_CLIENT_ID {config.client_id} (secret {shown_secret(config.client_secret or '')})"
    )
    try:
        await app_token(http, cloud, config, cloud.bot_scope, tenant)
    except TokenRefusedError as err:
        return [failed(TEAMS, f"{shown} got no Bot Framework token from tenant {tenant}: {err}",
                       FIXES.get(err.error, OTHER_FIX))]  # fmt: skip
    return [passed(TEAMS, f"{shown} obtains a Bot Framework token from tenant {tenant}")]


def group_source(
    settings: Settings, cloud: CloudEnvironment, http: httpx.AsyncClient
) -> EntraGroups | None:
    """The policy's Entra groups, read from Graph with the app's token (None: no credentials)."""
    try:
        config = teams_config(settings)
    except ConfigurationError:
        return None
    if config is None or not config.authenticated:
        return None
    tenant = config.tenant_id or DEFAULT_TENANT

    async def token() -> str:
        return await app_token(http, cloud, config, cloud.graph_scope, tenant)

    graph = httpx.URL(cloud.graph_scope)  # "https://graph.microsoft.com/.default"
    return EntraGroups(token, http, graph_url=f"{graph.scheme}://{graph.netloc.decode()}")
