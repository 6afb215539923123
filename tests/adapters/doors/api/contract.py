"""Responses held to the served OpenAPI document: `conforms` checks one body against the
schema its operation declares for its status; `Checking` is an httpx transport that checks
every response the Python client reads, so each client test against the real service is also
a test of the document (and the document of the service)."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import jsonschema

from adapters.doors.api.openapi import openapi_document

JSON = dict[str, Any]
_ONE = re.compile(r"^/api/v1/requests/[^/]+$")


def conforms(document: JSON, path: str, method: str, status: int, body: Any) -> None:
    """`body` is what the document says the operation at `path` (under /api/v1, or the whole
    path) answers with `status`."""
    full = path if path.startswith("/api/") else f"/api/v1{path}"
    template = "/api/v1/requests/{id}" if _ONE.match(full) else "/api/v1/requests"
    operation = document["paths"][template][method.lower()]
    schema = operation["responses"][str(status)]["content"]["application/json"]["schema"]
    jsonschema.validate(body, {**schema, "components": document["components"]})


class Checking(httpx.AsyncBaseTransport):
    """httpx's own transport, each /api/v1/requests response checked as it is read."""

    def __init__(self, document: JSON | None = None) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.document = document or openapi_document()
        self.checked = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        if request.url.path.startswith("/api/v1/requests"):
            content = await response.aread()
            path = request.url.raw_path.decode().split("?")[0]  # as sent: an id's / stays %2F
            conforms(self.document, path, request.method, response.status_code,
                     json.loads(content))  # fmt: skip
            self.checked += 1
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()
