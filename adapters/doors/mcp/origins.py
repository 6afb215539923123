"""The `Origin` check of the MCP door, as the 2025-11-25 streamable HTTP transport requires:
a request that carries an `Origin` not allowed is refused with 403 before its body is read.

Agents and command-line clients send no `Origin` at all, so its absence is fine. A browser
always sends one, and a page of another site (or a DNS-rebound name) must not reach the door
even with a token it somehow holds. The allowed origins are HITL_ALLOWED_ORIGINS, or else the
origin of HITL_PUBLIC_URL; with neither set, every present `Origin` is refused. The `Host`
header is never the reference: a rebound name makes it match the attacker's `Origin`.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from aiohttp import web

from adapters.serve.http_limits import one_line

DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_of(url: str) -> str:
    """`scheme://host[:port]` of an http(s) URL, lower case, its default port left out;
    ValueError saying what is expected otherwise."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        raise ValueError(f"{one_line(url, 80)!r} is not a URL") from None
    scheme, host = parts.scheme.lower(), (parts.hostname or "")
    if scheme not in DEFAULT_PORTS or not host or parts.username or parts.password:
        raise ValueError(f"{one_line(url, 80)!r} is not an http(s) origin such as https://host")
    shown = f"[{host}]" if ":" in host else host
    return (
        f"{scheme}://{shown}"
        if port in (None, DEFAULT_PORTS[scheme])
        else f"{scheme}://{shown}:{port}"
    )


def allowed_origins(configured: Iterable[str], public_url: str | None) -> frozenset[str]:
    """The origins the door accepts: `configured`, or else `public_url`'s (none without it)."""
    listed = frozenset(origin_of(origin) for origin in configured)
    if listed:
        return listed
    try:
        return frozenset({origin_of(public_url)}) if public_url else frozenset()
    except ValueError:  # not an http(s) URL: no origin to allow
        return frozenset()


def origin_refusal(request: web.Request, allowed: frozenset[str]) -> web.Response | None:
    """403 for a request whose `Origin` is present and not in `allowed`; None otherwise."""
    presented = request.headers.get("Origin")
    if presented is None:
        return None
    try:
        if origin_of(presented) in allowed:
            return None
    except ValueError:  # `null`, or garbage: allowed by nobody
        pass
    return web.json_response(
        {"error": "forbidden_origin",
         "message": f"Origin {one_line(presented, 100)} is not allowed: "
                    "list it in HITL_ALLOWED_ORIGINS"},
        status=403,
    )  # fmt: skip
