"""Bot Framework tokens verified without blocking the event loop.

The Teams SDK (microsoft-teams-apps 2.1.1, `apps/auth/token_validator.py`) validates each
incoming activity's token with PyJWT's `PyJWKClient`, which fetches Microsoft's signing keys
with blocking urllib inside the async handler, for any token at all (`alg=none` included), and
again whenever its 5-minute cache lapses: a burst of forged tokens held every request on the
port, Slack's acks included. `ActivityVerifier` replaces it for `POST /api/messages`:

- the token's header is read first, unverified: `alg` must be RS256 and `kid` present, or the
  token is refused without any fetch;
- `kid` is looked up in `SigningKeys`, the key set cached in memory, fetched with aiohttp
  (asynchronously), refreshed in the background every `refresh_every` seconds once in use;
  an unknown `kid` triggers a refresh only if none is in flight (concurrent callers share the
  one in flight) and none started in the last `min_interval` seconds: however many tokens
  arrive, at most one fetch per `min_interval`;
- then the signature, issuer, audience, expiry (required) with the SDK's clock tolerance;
- `check_service_url`, once the body is read, the SDK's rule for the `serviceurl` claim.

The rules are the SDK's own (`TokenValidator.for_service`): the JWKS URL derived from the
cloud's OpenID metadata URL, the issuer, the three audiences of the app id, and the leeway.
Not carried over: the SDK also accepts Entra ID tokens of the Agent 365 platform (an issuer
under the cloud's login endpoint, keys fetched per tenant named in the token, no `serviceurl`
binding); hitl-bridge takes Bot Framework tokens only, so those are refused.

A refusal is a `Refused` whose message is a fixed reason, never the token's content.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import jwt
from microsoft_teams.api.auth.cloud_environment import CloudEnvironment
from microsoft_teams.apps.auth.token_validator import JWT_LEEWAY_SECONDS, TokenValidator

__all__ = ["ActivityVerifier", "SigningKeys", "TokenRefused", "TokenRules"]

log = logging.getLogger(__name__)

ALGORITHM = "RS256"  # the only algorithm Bot Framework tokens are signed with
MAX_HEADER_CHARS = 1024  # a Bot Framework token's header is ~100 characters
MAX_TOKEN_CHARS = 8 * 1024  # Bot Framework tokens are ~1.5 KB (aiohttp caps a header at 8190)
REFRESH_EVERY = 3600.0  # seconds between background refreshes of the key set
MIN_INTERVAL = 60.0  # seconds: at most one fetch started per interval
FETCH_TIMEOUT = 10.0  # seconds for one fetch of the key set
MAX_KEYS_BYTES = 1024 * 1024  # Microsoft's key set is ~10 KB
BEARER = "Bearer "


class TokenRefused(Exception):
    """A token that does not authenticate the request; the message is a fixed reason."""


@dataclass(frozen=True, slots=True)
class TokenRules:
    """What a token must satisfy: where its keys are, its issuers and audiences, the leeway."""

    jwks_url: str
    issuers: tuple[str, ...]
    audiences: tuple[str, ...]
    leeway: int = JWT_LEEWAY_SECONDS

    @classmethod
    def bot_framework(cls, app_id: str, cloud: CloudEnvironment) -> TokenRules:
        """The SDK's rules for Bot Framework service tokens, taken from the SDK itself
        (constructing its validator does no I/O: its key client fetches on first use)."""
        options = TokenValidator.for_service(app_id, cloud=cloud).options
        return cls(options.jwks_uri, tuple(options.valid_issuers), tuple(options.valid_audiences))


class SigningKeys:
    """The signing keys at one JWKS URL: fetched asynchronously, cached, refreshed in the
    background once in use, and fetched at most once per `min_interval` on demand."""

    def __init__(
        self,
        url: str,
        *,
        refresh_every: float | None = None,
        min_interval: float | None = None,
        timeout: float = FETCH_TIMEOUT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """The intervals default to the module's REFRESH_EVERY and MIN_INTERVAL, read here."""
        self.url = url
        self.refresh_every = REFRESH_EVERY if refresh_every is None else refresh_every
        self.min_interval = MIN_INTERVAL if min_interval is None else min_interval
        self.timeout = timeout
        self.fetches = 0  # fetches started, for tests and benchmarks
        self._clock = clock
        self._keys: dict[str, jwt.PyJWK] = {}
        self._last_started: float | None = None
        self._last_ok = False
        self._in_flight: asyncio.Task[bool] | None = None
        self._background: asyncio.Task[None] | None = None
        self._session: aiohttp.ClientSession | None = None

    async def get(self, kid: str) -> jwt.PyJWK | None:
        """The key `kid`, refreshing the set first if it is unknown and a refresh is allowed
        (one in flight is shared); None if it is still unknown."""
        self._keep_fresh()
        key = self._keys.get(kid)
        if key is not None:
            return key
        refresh = self._in_flight
        if refresh is None and self._may_start():
            refresh = self._start()
        if refresh is not None:
            await asyncio.shield(refresh)  # a caller that gives up does not cancel the fetch
        return self._keys.get(kid)

    async def close(self) -> None:
        for task in (self._background, self._in_flight):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._background = self._in_flight = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    # -- fetching -------------------------------------------------------------------------------

    def _may_start(self) -> bool:
        last = self._last_started
        return last is None or self._clock() - last >= self.min_interval

    def _start(self) -> asyncio.Task[bool]:
        self._last_started = self._clock()
        self.fetches += 1
        task = asyncio.create_task(self._fetch())
        self._in_flight = task
        task.add_done_callback(self._fetched)
        return task

    def _fetched(self, task: asyncio.Task[bool]) -> None:
        if self._in_flight is task:
            self._in_flight = None

    async def _fetch(self) -> bool:
        """Replace the key set with the one at `url`; keep the old one if that fails."""
        self._last_ok = False
        try:
            keys = _parse_keys(await self._download())
        except (aiohttp.ClientError, TimeoutError, ValueError, RecursionError) as error:
            reason = type(error).__name__ if isinstance(error, TimeoutError) else str(error)
            log.warning("Teams: fetching the signing keys from %s failed: %s", self.url, reason)
            return False
        except Exception:  # whatever else: the keys stay as they were, the caller is refused
            log.exception("Teams: fetching the signing keys from %s failed", self.url)
            return False
        self._keys, self._last_ok = keys, True
        return True

    async def _download(self) -> bytes:
        if self._session is None:
            # trust_env: the proxy settings urllib (the SDK's fetch) honoured are honoured too.
            self._session = aiohttp.ClientSession(trust_env=True)
        timeout = aiohttp.ClientTimeout(total=self.timeout)
        async with self._session.get(self.url, timeout=timeout) as response:
            if response.status != 200:
                raise ValueError(f"HTTP {response.status}")
            body = bytearray()
            async for chunk in response.content.iter_any():
                body += chunk
                if len(body) > MAX_KEYS_BYTES:
                    raise ValueError("the key set is too large")
            return bytes(body)

    def _keep_fresh(self) -> None:
        """Once keys are in use, refresh them in the background every `refresh_every`."""
        if self._background is None or self._background.done():
            self._background = asyncio.create_task(self._refresh_periodically())

    async def _refresh_periodically(self) -> None:
        """Fetch `refresh_every` after the last fetch started (`min_interval` if it failed),
        whether on demand or from here."""
        while True:
            if self._in_flight is not None:
                await asyncio.shield(self._in_flight)
                continue
            last = self._last_started
            if last is not None:
                wait = last + (self.refresh_every if self._last_ok else self.min_interval)
                if (delay := wait - self._clock()) > 0:
                    await asyncio.sleep(delay)
                    continue
            await asyncio.shield(self._start())


def _parse_keys(body: bytes) -> dict[str, jwt.PyJWK]:
    """The RSA signing keys of a JWKS document by kid; ValueError if there are none."""
    document = json.loads(body)
    entries = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise ValueError("not a JWKS document")
    keys: dict[str, jwt.PyJWK] = {}
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("kty") != "RSA":
            continue
        kid = entry.get("kid")
        if not isinstance(kid, str) or entry.get("use", "sig") != "sig":
            continue
        try:
            keys[kid] = jwt.PyJWK(entry, algorithm=ALGORITHM)
        except (jwt.PyJWKError, jwt.InvalidKeyError, ValueError, TypeError):
            continue  # a key we cannot use; the others still can be
    if not keys:
        raise ValueError("no usable RSA signing key")
    return keys


def _unverified_header(token: str) -> dict[str, Any]:
    """The header of a compact JWS, decoded only (PyJWT's `get_unverified_header` checks every
    character of all three parts first: the dearest step for a token refused by its header).
    `jwt.decode` parses the whole token strictly later, for the tokens that get that far."""
    parts = token.split(".")
    if len(parts) != 3 or not 0 < len(parts[0]) <= MAX_HEADER_CHARS:
        raise TokenRefused("not a JWT")
    try:
        header = json.loads(base64.urlsafe_b64decode(parts[0] + "=" * (-len(parts[0]) % 4)))
    except (ValueError, RecursionError):  # binascii.Error and UnicodeDecodeError included
        raise TokenRefused("not a JWT") from None
    if not isinstance(header, dict):
        raise TokenRefused("not a JWT")
    return header


class ActivityVerifier:
    """Verifies the `Authorization` header of an incoming activity (see the module docstring)."""

    def __init__(self, rules: TokenRules, keys: SigningKeys | None = None) -> None:
        self.rules = rules
        self.keys = keys or SigningKeys(rules.jwks_url)

    @classmethod
    def bot_framework(cls, app_id: str, cloud: CloudEnvironment) -> ActivityVerifier:
        return cls(TokenRules.bot_framework(app_id, cloud))

    async def verify(self, authorization: str | None) -> dict[str, Any]:
        """The token's verified claims, or Refused. Only a token whose header names RS256 and
        a key id can cause a fetch of the keys (and only as `SigningKeys.get` allows)."""
        if not authorization or not authorization.startswith(BEARER):
            raise TokenRefused("no bearer token")
        token = authorization.removeprefix(BEARER).strip()
        if len(token) > MAX_TOKEN_CHARS:
            raise TokenRefused("the token is too long")
        header = _unverified_header(token)
        if header.get("alg") != ALGORITHM:
            raise TokenRefused("the token's algorithm is not RS256")
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise TokenRefused("the token names no signing key")
        key = await self.keys.get(kid)
        if key is None:
            raise TokenRefused("the token's signing key is unknown")
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=[ALGORITHM],
                audience=list(self.rules.audiences),
                issuer=list(self.rules.issuers),
                leeway=self.rules.leeway,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.InvalidSignatureError:
            raise TokenRefused("the token's signature is not valid") from None
        except jwt.ExpiredSignatureError:
            raise TokenRefused("the token has expired") from None
        except jwt.InvalidAudienceError:
            raise TokenRefused("the token is for another audience") from None
        except jwt.InvalidIssuerError:
            raise TokenRefused("the token is from another issuer") from None
        except (jwt.InvalidTokenError, ValueError, RecursionError):
            raise TokenRefused("the token is not valid") from None
        return claims

    @staticmethod
    def check_service_url(claims: Mapping[str, Any], service_url: Any) -> None:
        """The SDK's rule: an activity's `serviceUrl` (when it has one) must be the token's
        `serviceurl` claim, trailing slashes aside."""
        if not service_url:
            return
        claimed = claims.get("serviceurl")
        if not isinstance(claimed, str) or not claimed:
            raise TokenRefused("the token has no serviceurl claim")
        if not isinstance(service_url, str) or claimed.rstrip("/") != service_url.rstrip("/"):
            raise TokenRefused("the activity's serviceUrl is not the token's")

    async def close(self) -> None:
        await self.keys.close()
