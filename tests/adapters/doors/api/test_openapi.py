"""The OpenAPI document types a request by its tool: a create is a union discriminated on
`tool`, each variant with its tool's arguments; a request told carries its tool's answer."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from adapters.doors.api.openapi import openapi_document
from bot.doors.contracts import CONTRACTS
from bot.gates.approvals import Approval

DOCUMENT = openapi_document()
SCHEMAS = DOCUMENT["components"]["schemas"]


def valid(body: Any, name: str) -> bool:
    schema = {"$ref": f"#/components/schemas/{name}", "components": DOCUMENT["components"]}
    return jsonschema.Draft202012Validator(schema).is_valid(body)


def test_a_create_is_discriminated_on_its_tool() -> None:
    union = SCHEMAS["CreateRequest"]
    assert union["discriminator"]["propertyName"] == "tool"
    assert sorted(union["discriminator"]["mapping"]) == sorted(CONTRACTS)
    for tool, contract in CONTRACTS.items():
        variant = SCHEMAS[f"Create{contract.name}Request"]
        assert variant["properties"]["tool"] == {"const": tool}
        assert variant["properties"]["arguments"]["$ref"].endswith(f"/{contract.name}Arguments")


@pytest.mark.parametrize(("body", "ok"), [
    ({"tool": "requestApproval", "to": "slack:U1",
      "arguments": {"action": "Deploy", "reason": "Fix"}}, True),
    ({"tool": "requestApproval", "to": "slack:U1", "arguments": {"question": "Deploy?"}}, False),
    ({"tool": "AskUserQuestion", "to": "slack:U1", "arguments": {"question": "Deploy?"}}, True),
    ({"tool": "selectOption", "to": "slack:U1",
      "arguments": {"question": "Where?", "options": []}}, False),  # at least one option
    ({"tool": "approveToolCall", "to": "slack:U1",
      "arguments": {"tool_name": "deploy", "input": {"tag": "v2"}}}, True),
    ({"tool": "noSuchTool", "to": "slack:U1", "arguments": {}}, False),
])  # fmt: skip
def test_a_create_is_checked_by_its_tools_arguments(body: dict[str, Any], ok: bool) -> None:
    assert valid(body, "CreateRequest") is ok


def told(tool: str, answer: Any, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": "r1", "status": "answered", "to": "slack:U1", "tool": tool,
            "arguments": arguments, "answer": answer}  # fmt: skip


APPROVAL = {"action": "Deploy", "reason": "Fix"}


def test_a_request_told_carries_its_tools_answer() -> None:
    assert valid(told("requestApproval", {"approved": True}, APPROVAL), "RequestOut")
    assert not valid(told("requestApproval", {"approved": "yes"}, APPROVAL), "RequestOut")
    assert not valid(told("requestApproval", {"selectedIndex": 1}, APPROVAL), "RequestOut")
    form = {"fields": [{"name": "tag", "label": "Tag"}]}
    assert valid(told("collectUserData", {"tag": "v2"}, form), "RequestOut")  # the form's own
    reserved = {"id": "r1", "status": "pending", "to": "slack:U1"}
    assert valid(reserved, "RequestOut")


def test_a_gates_answer_is_what_an_approval_writes() -> None:
    for approval in (Approval(), Approval(grant=True, arguments={"tag": "v3"},
                                          approved_by=("U1", "U2"))):  # fmt: skip
        assert valid(approval.answer(), "ApproveToolCallAnswer")
