"""Callback URLs checked for SSRF: at create time (`check_url`: private, loopback, link-local
... addresses are refused, also when an IPv6 form carries one) and again at delivery, on the
addresses actually connected to (`CheckedResolver`): a name that resolved to a public address
then and to an internal one now (DNS rebinding) is refused, and not retried."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from urllib.parse import urlsplit

from aiohttp.abc import ResolveResult
from aiohttp.resolver import ThreadedResolver

from adapters.serve.http_limits import one_line

SCHEMES = ("http", "https")


class RefusedUrl(Exception):
    """A callback URL, or an address it resolves to, that no webhook is sent to: `str(err)`
    is the reason, in one line."""


# IPv6 prefixes that carry an IPv4 address in their last 32 bits: NAT64's well-known prefix
# (RFC 6052: 64:ff9b::7f00:1 is 127.0.0.1 through a translator) and the deprecated
# IPv4-compatible addresses (::7f00:1). The local-use NAT64 prefix (RFC 8215) places the IPv4
# by a prefix length only its network knows: all of it is refused.
_CARRY_LAST_32 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("::/96"))
_LOCAL_NAT64 = ipaddress.ip_network("64:ff9b:1::/48")


def carried_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses `ip` reaches through a translation or tunnel: IPv4-mapped, 6to4
    (2002:7f00:1:: is 127.0.0.1), Teredo (its server, and its client: the last 32 bits
    inverted), NAT64 and IPv4-compatible forms."""
    carried = [ip.ipv4_mapped, ip.sixtofour, *(ip.teredo or ())]
    if any(ip in network for network in _CARRY_LAST_32) and int(ip) > 1:  # not :: nor ::1
        carried.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return [v4 for v4 in carried if v4 is not None]


def refused_kind(address: str) -> str | None:
    """What `address` (an IP, as getaddrinfo gives it) is, if webhooks are not sent to its
    kind ("a loopback address", ...); None for a public address. An IPv6 address carrying an
    IPv4 address (`carried_ipv4`) is refused as that IPv4 address would be."""
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # ::ffff:10.0.0.1 reaches 10.0.0.1
    if isinstance(ip, ipaddress.IPv6Address):
        if ip in _LOCAL_NAT64:
            return "a local-use NAT64 address"
        for v4 in carried_ipv4(ip):
            kind = _kind(v4)
            if kind is not None:
                return f"{kind} (it carries {v4})"
    return _kind(ip)


def _kind(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    kinds = (
        ("an unspecified", ip.is_unspecified), ("a loopback", ip.is_loopback),
        ("a link-local", ip.is_link_local), ("a multicast", ip.is_multicast),
        ("a private", ip.is_private), ("a reserved", ip.is_reserved),
        ("a non-public", not ip.is_global),  # shared (100.64/10) and other special ranges
    )  # fmt: skip
    return next((f"{kind} address" for kind, matches in kinds if matches), None)


def _check_addresses(host: str, addresses: list[str]) -> None:
    """RefusedUrl if any address `host` resolved to is of a refused kind."""
    for address in addresses:
        kind = refused_kind(address)
        if kind is not None:
            said = f"{address} is" if address == host else f"{host[:100]} resolves to {address},"
            raise RefusedUrl(f"{said} {kind}")


def checked_target(url: str, allow_private: bool) -> tuple[str, int]:
    """The host and port `url` posts to; RefusedUrl for what its text alone refuses."""
    if not url.isprintable():
        raise RefusedUrl("the URL holds control characters or white space other than spaces")
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as err:
        raise RefusedUrl(f"not a valid URL ({err})") from None
    if parts.scheme not in SCHEMES:
        raise RefusedUrl("only http and https URLs are allowed")
    if not parts.hostname:
        raise RefusedUrl("the URL has no host")
    if "@" in parts.netloc:
        raise RefusedUrl("the URL must not carry a user name or password")
    try:
        ipaddress.ip_address(parts.hostname)
    except ValueError:  # a name: its addresses are checked once resolved
        try:  # as getaddrinfo will encode it (IDNA: each label 1 to 63 characters)
            parts.hostname.encode("idna")
        except UnicodeError:
            why = f"'{one_line(parts.hostname, 100)}' is not a valid host name"
            raise RefusedUrl(why) from None
        return parts.hostname, port
    if not allow_private:
        _check_addresses(parts.hostname, [parts.hostname])
    return parts.hostname, port


async def check_url(url: str, allow_private: bool) -> str | None:
    """None if webhooks may be sent to `url`, else why not (one line). The host is resolved
    without blocking the event loop, and each of its addresses checked."""
    try:
        host, port = checked_target(url, allow_private)
        found = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        if not allow_private:
            _check_addresses(host, [str(sockaddr[0]) for *_, sockaddr in found])
    except RefusedUrl as err:
        return str(err)
    except OSError as err:
        return f"cannot resolve {one_line(host, 100)} ({err.strerror or type(err).__name__})"
    except ValueError:  # a host getaddrinfo cannot take (an embedded NUL, a bad IDNA label)
        return f"'{one_line(host, 100)}' is not a valid host name"
    return None


class CheckedResolver(ThreadedResolver):
    """aiohttp's resolver (getaddrinfo, off the event loop) refusing what `check_url` refuses,
    at connect time: the addresses checked are the ones connected to (DNS rebinding)."""

    def __init__(self, allow_private: bool) -> None:
        super().__init__()
        self.allow_private = allow_private

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        found = await super().resolve(host, port, family)
        if not self.allow_private:
            _check_addresses(host, [result["host"] for result in found])
        return found
