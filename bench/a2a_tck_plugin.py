"""A pytest plugin bench/a2a_tck.py loads into the A2A TCK's own run (`-p a2a_tck_plugin`, in
the kit's interpreter: nothing of the bridge is imported). Every HTTP request the kit makes
(through httpx, sync or async) is changed in three ways, and no other:

- the bridge's bearer token (TCK_BEARER) is added when the request has no Authorization: the
  kit has no way to send one, and every A2A call of the bridge needs one;
- the kit's bug 1: its JSON-RPC client posts to "<interface URL>/" (a trailing slash the
  card's URL does not have): the path is sent as the card names it;
- the kit's bug 2: one `messageId` is reused for different messages (its ids are per name and
  session, and several tests send different messages under one name): a message whose id was
  sent before with other content gets a fresh id; the same message sent again keeps its own.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from typing import Any

import httpx

_TOKEN = os.environ.get("TCK_BEARER", "")
_JSONRPC_PATH = os.environ.get("TCK_JSONRPC_PATH", "/a2a")
_SEEN: dict[str, str] = {}  # messageId -> the digest of the message first sent with it
_FRESH = itertools.count(1)
_send, _async_send = httpx.Client.send, httpx.AsyncClient.send


def _message(payload: Any) -> dict[str, Any] | None:
    if not isinstance(payload, dict):
        return None
    params = payload.get("params") if "jsonrpc" in payload else payload
    message = params.get("message") if isinstance(params, dict) else None
    return message if isinstance(message, dict) else None


def _fixed_body(content: bytes) -> bytes | None:
    try:
        payload = json.loads(content)
    except ValueError:
        return None
    message = _message(payload)
    if message is None or not isinstance(message.get("messageId"), str):
        return None
    digest = hashlib.sha256(json.dumps(message, sort_keys=True).encode()).hexdigest()
    first = _SEEN.setdefault(message["messageId"], digest)
    if first == digest:
        return None
    message["messageId"] = f"{message['messageId']}-{next(_FRESH)}"
    _SEEN[message["messageId"]] = digest
    return json.dumps(payload).encode()


def _fixed(request: httpx.Request) -> httpx.Request:
    url = request.url
    if url.path == _JSONRPC_PATH + "/":
        url = url.copy_with(path=_JSONRPC_PATH)
    headers = httpx.Headers(request.headers)
    if _TOKEN and "authorization" not in headers:
        headers["Authorization"] = f"Bearer {_TOKEN}"
    content = request.read() if request.method in ("POST", "PUT", "PATCH") else b""
    body = _fixed_body(content) if content else None
    if body is not None:
        headers["Content-Length"] = str(len(body))
    fixed = httpx.Request(request.method, url, headers=headers, content=body or content or None)
    fixed.extensions = request.extensions
    return fixed


def _patched_send(self: httpx.Client, request: httpx.Request, **kwargs: Any) -> httpx.Response:
    return _send(self, _fixed(request), **kwargs)


async def _patched_async_send(
    self: httpx.AsyncClient, request: httpx.Request, **kwargs: Any
) -> httpx.Response:
    return await _async_send(self, _fixed(request), **kwargs)


httpx.Client.send = _patched_send  # type: ignore[method-assign]
httpx.AsyncClient.send = _patched_async_send  # type: ignore[method-assign]
