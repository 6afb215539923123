"""The HTTP API's OpenAPI 3.1 document, generated from its pydantic models (adapters/api/
models.py): the schemas are theirs, the paths are listed here once."""

from __future__ import annotations

import functools
from typing import Any

from pydantic.json_schema import models_json_schema

from adapters.api.models import ApiError, CreateRequest, RequestOut, RequestPage

REF = "#/components/schemas/{model}"
ERRORS = {
    "400": "Invalid input: `fields` names each invalid field",
    "401": "No valid bearer token",
    "409": "The idempotency key was used before with a different body",
    "413": "The body is too large",
    "429": "Too many long polls held (by this token, or on this worker): retry after Retry-After",
    "503": "The bridge cannot reach its database now",
}


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": REF.format(model=name)}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _responses(ok: dict[str, dict[str, Any]], *errors: str) -> dict[str, Any]:
    failed = {code: _json(_ref("ApiError"), ERRORS.get(code, "Not found")) for code in errors}
    return {**ok, **failed}


def _parameter(name: str, where: str, schema: dict[str, Any], about: str) -> dict[str, Any]:
    return {"name": name, "in": where, "required": where == "path", "schema": schema,
            "description": about}  # fmt: skip


_ID = _parameter("id", "path", {"type": "string"}, "The request's id")
_ONE = _json(_ref("RequestOut"), "The request")


def _paths() -> dict[str, Any]:
    return {
        "/api/v1/requests": {
            "post": {
                "operationId": "createRequest", "summary": "Ask a person",
                "requestBody": {"required": True, "content": {
                    "application/json": {"schema": _ref("CreateRequest")}}},
                "responses": _responses({
                    "201": _json(_ref("RequestOut"), "The new request"),
                    "200": _json(_ref("RequestOut"), "The request made earlier with this key"),
                }, "400", "401", "409", "413", "503"),
            },
            "get": {
                "operationId": "listRequests", "summary": "The token's requests, newest first",
                "parameters": [
                    _parameter("status", "query", {"type": "string"}, "Only those in it"),
                    _parameter("to", "query", {"type": "string"}, "Only those sent there"),
                    _parameter("since", "query", {"type": "string", "format": "date-time"},
                               "Only those made since"),
                    _parameter("before", "query", {"type": "string"}, "The page after it"),
                    _parameter("limit", "query",
                               {"type": "integer", "minimum": 1, "maximum": 200}, "Per page"),
                ],
                "responses": _responses({"200": _json(_ref("RequestPage"), "A page")},
                                        "400", "401", "503"),
            },
        },
        "/api/v1/requests/{id}": {
            "get": {
                "operationId": "getRequest", "summary": "A request; long-polled with `wait`",
                "parameters": [_ID, _parameter(
                    "wait", "query", {"type": "number", "minimum": 0, "maximum": 60},
                    "Seconds to wait for it to settle")],
                "responses": _responses({"200": _ONE}, "400", "401", "404", "429", "503"),
            },
            "delete": {
                "operationId": "cancelRequest", "summary": "Cancel a pending request",
                "parameters": [_ID],
                "responses": _responses({"200": _ONE}, "401", "404", "503"),
            },
        },
    }  # fmt: skip


@functools.cache
def openapi_document() -> dict[str, Any]:
    """The document served at /api/v1/openapi.json."""
    models = [(m, "validation" if m is CreateRequest else "serialization")
              for m in (CreateRequest, RequestOut, RequestPage, ApiError)]  # fmt: skip
    _, schemas = models_json_schema(models, ref_template=REF)  # type: ignore[arg-type]
    return {
        "openapi": "3.1.0",
        "info": {"title": "hitl-bridge", "version": "1",
                 "description": "Ask a person in Slack or Teams, from any agent."},
        "components": {
            "schemas": schemas.get("$defs", {}),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
        "paths": _paths(),
    }  # fmt: skip
