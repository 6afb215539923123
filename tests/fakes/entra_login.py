"""A fake of the Microsoft identity platform's token endpoint (the client-credentials grant),
on loopback: `POST /{tenant}/oauth2/v2.0/token` answers a token for the app's id and secret,
and what Entra answers otherwise (`invalid_client` for a wrong secret, `unauthorized_client`
for an unknown app). `cloud` is the public Teams cloud with its login endpoint here.

    async with FakeEntraLogin("app-id", "secret") as login:
        app = ...(cloud=login.cloud)
"""

from __future__ import annotations

import secrets
from dataclasses import replace
from types import TracebackType
from typing import Any, Self

from aiohttp import web
from microsoft_teams.api.auth.cloud_environment import PUBLIC, CloudEnvironment

__all__ = ["FakeEntraLogin"]


class FakeEntraLogin:
    """The token endpoint on 127.0.0.1; an async context manager. `asked` keeps each form
    posted (its secret included: the tests' own)."""

    def __init__(self, client_id: str, client_secret: str) -> None:
        self.client_id, self.client_secret = client_id, client_secret
        self.asked: list[dict[str, Any]] = []
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_post("/{tenant}/oauth2/v2.0/token", self._token)
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
            self._runner = None

    @property
    def cloud(self) -> CloudEnvironment:
        return replace(PUBLIC, login_endpoint=self.url)

    async def _token(self, request: web.Request) -> web.Response:
        form = {key: str(value) for key, value in (await request.post()).items()}
        self.asked.append({"tenant": request.match_info["tenant"], **form})
        if form.get("grant_type") != "client_credentials" or not form.get("scope"):
            return _error(400, "invalid_request", "AADSTS900144: The request body must contain "
                          "the following parameter: 'grant_type'.")  # fmt: skip
        if form.get("client_id") != self.client_id:
            return _error(
                400,
                "unauthorized_client",
                "AADSTS700016: Application with "
                f"identifier '{form.get('client_id')}' was not found in the directory.",
            )
        if form.get("client_secret") != self.client_secret:
            return _error(401, "invalid_client", "AADSTS7000215: Invalid client secret "
                          "provided.\r\nTrace ID: 0000")  # fmt: skip
        return web.json_response({"token_type": "Bearer", "expires_in": 3599,
                                  "access_token": secrets.token_urlsafe(24)})  # fmt: skip


def _error(status: int, error: str, description: str) -> web.Response:
    return web.json_response({"error": error, "error_description": description}, status=status)
