"""The MCP tools' output schemas: what each tool's structured content is
(adapters/doors/mcp/tools.py
writes it), from the doors' contract (bot/doors/contracts.py), each schema self-contained as
MCP wants it (no `$ref` out of it). The official client checks every result against them.

An asking tool answers with its tool's answer beside `request_id`, `status` and `answered_by`;
or it is pending (call `await_answer`); or it ended unanswered (a tool error with the reason).
`permission_prompt` answers in Claude Code's shape.
"""

from __future__ import annotations

from typing import Any

from bot.doors.contracts import CONTRACTS, inlined, tool_schemas
from bot.doors.service import SHOWN_STATUS

JSON = dict[str, Any]
REF = "#/$defs/{model}"
_TEXT: JSON = {"type": ["string", "null"]}
UNANSWERED = sorted(set(SHOWN_STATUS.values()) - {"pending", "answered"})

PENDING: JSON = {
    "type": "object",
    "required": ["status", "request_id"],
    "properties": {
        "status": {"const": "pending"},
        "request_id": {"type": "string"},
        "expires_at": _TEXT,
        "message": {"type": "string"},
    },
    "additionalProperties": False,
}
ENDED: JSON = {  # a tool error's structured content: declined, expired, cancelled...
    "type": "object",
    "required": ["status", "request_id"],
    "properties": {
        "status": {"enum": UNANSWERED},
        "request_id": {"type": "string"},
        "reason": _TEXT,
        "answered_by": _TEXT,
    },
    "additionalProperties": False,
}
PERMISSION: JSON = {
    "type": "object",
    "oneOf": [
        {
            "type": "object",
            "required": ["behavior", "updatedInput"],
            "properties": {
                "behavior": {"const": "allow"},
                "updatedInput": {"type": "object"},
                "updatedPermissions": {"type": "array", "items": {"type": "object"}},
            },
            "additionalProperties": False,
        },
        {
            "type": "object",
            "required": ["behavior", "message"],
            "properties": {
                "behavior": {"const": "deny"},
                "message": {"type": "string"},
                "interrupt": {"type": "boolean"},
            },
            "additionalProperties": False,
        },
    ],
}


def answered(builtin: str) -> JSON:
    """An answered request's structured content: the built-in tool's answer with ours."""
    name = f"{CONTRACTS[builtin].name}Answer"
    schemas = tool_schemas(REF)
    answer = inlined(schemas[name], schemas, REF)
    ours = {
        "status": {"const": "answered"},
        "request_id": {"type": "string"},
        "answered_by": _TEXT,
    }
    return {
        "type": "object",
        "required": [*answer.get("required", []), "status", "request_id"],
        "properties": {**answer.get("properties", {}), **ours},
        "additionalProperties": answer.get("additionalProperties", False),
    }


def asked(*builtins: str) -> JSON:
    """The output schema of a tool that asks with `builtins` (await_answer: any of them)."""
    return {"type": "object", "anyOf": [*(answered(b) for b in builtins), PENDING, ENDED]}
