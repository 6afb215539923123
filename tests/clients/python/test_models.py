"""hitl_client/models.py against the server's OpenAPI document: each client model has the
fields, types, defaults and limits of the document's `<Tool>Arguments` / `<Tool>Answer`
component, so the client (installed without the server) cannot drift from what the bridge
takes and tells. Descriptions and titles are the server's to word; everything else must match."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import BaseModel

from adapters.doors.api.models import RequestOut
from adapters.doors.api.models import RequestPage as ServerPage
from adapters.doors.api.openapi import REF, openapi_document
from bot.doors.contracts import CONTRACTS, inlined
from hitl_client import models as client
from hitl_client.request_info import RequestInfo, RequestPage

SCHEMAS: dict[str, Any] = openapi_document()["components"]["schemas"]
# Each client model, with the document's component it copies.
PAIRS: list[tuple[type[BaseModel], str]] = [
    *[(model, model.__name__) for model in (
        client.AskUserQuestionArguments, client.AskUserQuestionAnswer,
        client.RequestApprovalArguments, client.RequestApprovalAnswer,
        client.SelectOptionArguments, client.SelectOptionAnswer,
        client.CollectUserDataArguments, client.DataField,
        client.UploadFileArguments, client.UploadFileAnswer,
        client.ConfirmActionArguments, client.ConfirmActionAnswer,
        client.ApproveToolCallArguments,
    )],
]  # fmt: skip
WORDING = {"title", "description", "additionalProperties"}


def shape(schema: Any) -> Any:
    """A JSON schema without its wording, its `$defs` and `$ref`s written in place."""
    defs = schema.pop("$defs", {}) if isinstance(schema, dict) else {}
    return _shape(inlined(schema, defs, "#/$defs/{model}"))


def _shape(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {key: _shape(value) for key, value in schema.items() if key not in WORDING}
    if isinstance(schema, list):
        return [_shape(item) for item in schema]
    return schema


def component(name: str) -> Any:
    return _shape(inlined(SCHEMAS[name], SCHEMAS, REF))


@pytest.mark.parametrize(("ours", "name"), PAIRS, ids=[p[1] for p in PAIRS])
def test_the_clients_model_is_the_documents(ours: type[BaseModel], name: str) -> None:
    mode: Literal["validation", "serialization"] = (
        "serialization" if name.endswith("Answer") else "validation"
    )
    assert shape(ours.model_json_schema(mode=mode)) == component(name)


def test_every_tool_of_the_document_has_the_clients_models() -> None:
    assert sorted(client.TOOLS) == sorted(t for t in CONTRACTS if t != "approveToolCall")
    for tool, (arguments, answer) in client.TOOLS.items():
        name = CONTRACTS[tool].name
        assert arguments.__name__ == f"{name}Arguments"
        assert answer is None or answer.__name__ == f"{name}Answer"
    documented = {key for key in SCHEMAS if key.endswith(("Arguments", "Answer"))}
    copied = {name for _, name in PAIRS}
    # collectUserData's answer is the form's own; approveToolCall's is read as a ToolCallReview
    assert documented - copied == {"CollectUserDataAnswer", "ApproveToolCallAnswer"}


def test_the_shape_sees_a_changed_limit() -> None:
    """The comparison is not blind: a limit changed is a difference."""

    class Looser(client.Arguments):
        question: str

    assert shape(Looser.model_json_schema()) != component("AskUserQuestionArguments")


@pytest.mark.parametrize(
    ("ours", "theirs"), [(RequestInfo, RequestOut), (RequestPage, ServerPage)], ids=str
)
def test_the_clients_request_is_the_servers(ours: type[BaseModel], theirs: type[BaseModel]) -> None:
    """What the client reads of a request (and of a page of them) is field by field the model
    the bridge serializes it with (the document's `RequestOut` is that model, split by tool)."""
    mode: Literal["serialization"] = "serialization"
    assert shape(ours.model_json_schema(mode=mode)) == shape(theirs.model_json_schema(mode=mode))
