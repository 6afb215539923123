"""The HTTP API's OpenAPI 3.1 document, generated from its pydantic models (adapters/doors/api/
models.py) and the doors' contract (bot/doors/contracts.py): the schemas are theirs, the paths
are listed here once.

A request is typed by its tool: `CreateRequest` is a union discriminated on `tool`, one variant
per tool with its `<Tool>Arguments`, and `RequestOut` one per tool with its arguments and its
`<Tool>Answer` (beside `ReservedRequest`: a request whose idempotency key is taken but whose
record is not yet written, told without its tool), so a generated client reads typed answers.
"""

from __future__ import annotations

import functools
from typing import Any

from pydantic.json_schema import models_json_schema

from adapters.doors.api.models import ApiError, CreateRequest, RequestOut, RequestPage
from bot.doors.contracts import CONTRACTS, tool_schemas
from bot.words.tool_names import GATE_TOOL

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


def _variant(fields: dict[str, Any], tool: str, arguments: str, **more: Any) -> dict[str, Any]:
    """`fields` (a model's properties) for requests of one tool."""
    rest = {k: v for k, v in fields.items() if k not in ("tool", "arguments", "answer")}
    return {"tool": {"const": tool}, "arguments": _ref(arguments), **more, **rest}


def _requests(created: dict[str, Any], told: dict[str, Any]) -> dict[str, Any]:
    """The per-tool variants of `CreateRequest` (from `created`, its generated schema) and of
    `RequestOut` (from `told`), and the two unions."""
    schemas: dict[str, Any] = {}
    made, shown = {}, []
    for contract in CONTRACTS.values():
        name = contract.name
        arguments = "ApprovalGateRequest" if contract.tool == GATE_TOOL else f"{name}Arguments"
        schemas[f"Create{name}Request"] = {
            **created, "title": f"Create{name}Request",
            "properties": _variant(created["properties"], contract.tool, f"{name}Arguments"),
            "required": ["tool", "arguments", "to"],
        }  # fmt: skip
        answer = {"anyOf": [_ref(f"{name}Answer"), {"type": "null"}],
                  "description": "The tool's answer, once answered"}  # fmt: skip
        schemas[f"{name}Request"] = {
            **told, "title": f"{name}Request",
            "properties": _variant(told["properties"], contract.tool, arguments, answer=answer),
            "required": ["id", "status", "to", "tool"],
        }  # fmt: skip
        made[contract.tool] = REF.format(model=f"Create{name}Request")
        shown.append(_ref(f"{name}Request"))
    schemas["ReservedRequest"] = {
        "type": "object", "additionalProperties": False, "required": ["id", "status", "to"],
        "properties": {key: told["properties"][key] for key in ("id", "to", "idempotency_key")}
        | {"status": {"const": "pending"}},
        "description": "A request whose idempotency key is taken, its record not yet written",
    }  # fmt: skip
    schemas["CreateRequest"] = {
        "oneOf": [{"$ref": ref} for ref in made.values()],
        "discriminator": {"propertyName": "tool", "mapping": made},
        "description": created.get("description", ""),
    }  # fmt: skip
    schemas["RequestOut"] = {"oneOf": [*shown, _ref("ReservedRequest")],
                             "description": told.get("description", "")}  # fmt: skip
    return schemas


@functools.cache
def openapi_document() -> dict[str, Any]:
    """The document served at /api/v1/openapi.json."""
    models = [(m, "validation" if m is CreateRequest else "serialization")
              for m in (CreateRequest, RequestOut, RequestPage, ApiError)]  # fmt: skip
    _, generated = models_json_schema(models, ref_template=REF)  # type: ignore[arg-type]
    schemas = generated.get("$defs", {})
    schemas.update(tool_schemas(REF))
    schemas.update(_requests(schemas["CreateRequest"], schemas["RequestOut"]))
    return {
        "openapi": "3.1.0",
        "info": {"title": "hitl-bridge", "version": "1",
                 "description": "Ask a person in Slack or Teams, from any agent."},
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
        "paths": _paths(),
    }  # fmt: skip
