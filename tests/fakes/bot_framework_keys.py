"""A fake of Bot Framework's signing-key endpoint on loopback (aiohttp), and tokens signed by it.

The service finds the keys from its Teams cloud's OpenID metadata URL (the SDK derives the
JWKS URL from it: `.../openidconfiguration` -> `.../keys`); `cloud` is a `CloudEnvironment`
whose metadata URL is here. Every GET (whatever the path) answers the current key set and is
counted; `delay` seconds pass before each answer (a distant endpoint), `hold()` makes fetches
wait until `release()`, `rotate()` replaces the key.

    async with FakeBotFrameworkKeys(app_id) as keys:
        token = keys.token(service_url)
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import replace
from types import TracebackType
from typing import Any, Self

import jwt
from aiohttp import web
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from microsoft_teams.api.auth.cloud_environment import PUBLIC, CloudEnvironment

__all__ = ["FakeBotFrameworkKeys", "new_key"]

ISSUER = PUBLIC.token_issuer  # https://api.botframework.com


def new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


class FakeBotFrameworkKeys:
    """Signing keys on 127.0.0.1; an async context manager. See the module docstring."""

    def __init__(self, app_id: str, *, kid: str = "test-key") -> None:
        self.app_id = app_id
        self.kid = kid
        self.key = new_key()
        self.fetches = 0
        self.delay = 0.0
        self._released = asyncio.Event()
        self._released.set()
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_get("/{path:.*}", self._serve)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        host, port = self._runner.addresses[0][:2]
        self.url = f"http://{host}:{port}"
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @property
    def cloud(self) -> CloudEnvironment:
        """The public cloud, with its OpenID metadata (so its signing keys) here."""
        return replace(PUBLIC, openid_metadata_url=f"{self.url}/v1/.well-known/openidconfiguration")

    # -- set-up

    def hold(self) -> None:
        """Fetches wait (they are counted as they arrive) until `release()`."""
        self._released.clear()

    def release(self) -> None:
        self._released.set()

    def rotate(self, kid: str) -> rsa.RSAPrivateKey:
        """Sign with a new key named `kid` from now on; the old one is no longer served."""
        self.key, self.kid = new_key(), kid
        return self.key

    async def wait_for_fetches(self, count: int, timeout: float = 5.0) -> None:
        """Until `count` fetches have arrived."""
        async with self._changed, asyncio.timeout(timeout):
            await self._changed.wait_for(lambda: self.fetches >= count)

    # -- tokens

    def token(
        self,
        service_url: str,
        *,
        key: Any = None,
        kid: str | None = None,
        algorithm: str = "RS256",
        **claims: Any,
    ) -> str:
        """A Bot Framework token for the app (valid unless the arguments say otherwise):
        `key` signs it (this endpoint's key by default; a str for HS*), `kid` names a key."""
        now = int(time.time())
        payload = {
            "iss": ISSUER,
            "aud": self.app_id,
            "serviceurl": service_url,
            "iat": now,
            "nbf": now,
            "exp": now + 600,
            **claims,
        }
        payload = {name: value for name, value in payload.items() if value is not None}
        signer: Any = None if algorithm == "none" else self.key if key is None else key
        headers = {"kid": self.kid if kid is None else kid}
        return jwt.encode(payload, signer, algorithm=algorithm, headers=headers)

    # -- HTTP

    def _jwks(self) -> dict[str, Any]:
        jwk = json.loads(RSAAlgorithm.to_jwk(self.key.public_key()))
        return {"keys": [{**jwk, "kid": self.kid, "use": "sig"}]}

    async def _serve(self, request: web.Request) -> web.Response:
        async with self._changed:
            self.fetches += 1
            self._changed.notify_all()
        await self._released.wait()
        if self.delay:
            await asyncio.sleep(self.delay)
        return web.json_response(self._jwks())
