"""Checking a webhook the bridge POSTed: `verify_webhook(secret, headers, body)`.

The bridge signs each delivery with the token's webhook secret (printed by `hitl-bridge tokens
create`): `X-Hitl-Signature: sha256=<hex HMAC-SHA256 of "<X-Hitl-Timestamp>.<body>">`, the
timestamp in unix seconds. A signature is compared in constant time, and a timestamp older (or
newer) than `tolerance` seconds is refused, so a captured delivery cannot be replayed later.
Receivers deduplicate on `X-Hitl-Delivery`, the same on every attempt of one delivery.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import time
from collections.abc import Mapping

from hitl_client.calls import read
from hitl_client.errors import HitlError
from hitl_client.request_info import RequestInfo

TOLERANCE = 300.0  # seconds a delivery's timestamp may be off from this machine's clock
# What the bridge sends, and nothing else (the same in clients/typescript/src/webhooks.ts).
_SIGNATURE = re.compile(r"sha256=([0-9a-fA-F]{64})")
_TIMESTAMP = re.compile(r"[0-9]{1,12}(\.[0-9]{1,9})?")


class WebhookSignatureError(HitlError):
    """The delivery is not one the bridge signed with this secret, or is too old."""


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """`X-Hitl-Signature` of `body` sent at `timestamp`, as the bridge computes it."""
    signed = timestamp.encode() + b"." + body
    return "sha256=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def verify_webhook(
    secret: str,
    headers: Mapping[str, str],
    body: bytes | str,
    *,
    tolerance: float = TOLERANCE,
    now: float | None = None,
) -> RequestInfo:
    """The request the delivery tells of, once its signature and timestamp check out;
    WebhookSignatureError otherwise. `headers` as received (any case); `body` the raw bytes."""
    raw = body.encode() if isinstance(body, str) else body
    named = {key.lower(): value for key, value in headers.items()}
    timestamp, signed = named.get("x-hitl-timestamp"), named.get("x-hitl-signature")
    if timestamp is None or signed is None:
        raise WebhookSignatureError("no X-Hitl-Timestamp or X-Hitl-Signature header")
    given = _SIGNATURE.fullmatch(signed.strip(" \t"))
    if given is None:  # checked first: compare_digest raises TypeError on non-ASCII text
        raise WebhookSignatureError(f"X-Hitl-Signature is not sha256=<64 hex>: {signed[:80]!r}")
    expected = signature(secret, timestamp, raw)
    if not hmac.compare_digest(expected, "sha256=" + given.group(1).lower()):
        raise WebhookSignatureError("the signature does not match this secret")
    if _TIMESTAMP.fullmatch(timestamp.strip(" \t")) is None:  # no nan, inf, 1e400: never expire
        raise WebhookSignatureError(f"X-Hitl-Timestamp is not a time: {timestamp[:40]!r}")
    age = abs((time.time() if now is None else now) - float(timestamp))
    if not age <= tolerance:
        raise WebhookSignatureError(f"the delivery is {age:.0f} s off (tolerance {tolerance:g} s)")
    return read(RequestInfo, _json(raw))


def _json(raw: bytes) -> object:
    try:
        return json.loads(raw)
    except ValueError as err:
        raise WebhookSignatureError(f"the body is not JSON: {err}") from err
