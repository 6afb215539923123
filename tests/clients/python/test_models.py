"""hitl_client/models.py against the server's models: the same fields, types, defaults and
limits, so the client (installed without the server) cannot drift from what the bridge takes
and tells. Descriptions and titles are the server's to word; everything else must match."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from bot.human_tools import models as server
from hitl_client import models as client

# The client's name of each model, with the server's model it copies.
PAIRS: list[tuple[type[BaseModel], type[BaseModel]]] = [
    (client.AskUserQuestionArguments, server.AskUserQuestionArgs),
    (client.AskUserQuestionAnswer, server.AskUserQuestionAnswer),
    (client.RequestApprovalArguments, server.RequestApprovalArgs),
    (client.RequestApprovalAnswer, server.RequestApprovalAnswer),
    (client.SelectOptionArguments, server.SelectOptionArgs),
    (client.SelectOptionAnswer, server.SelectOptionAnswer),
    (client.CollectUserDataArguments, server.CollectUserDataArgs),
    (client.DataField, server.DataField),
    (client.UploadFileArguments, server.UploadFileArgs),
    (client.UploadFileAnswer, server.UploadFileAnswer),
    (client.ConfirmActionArguments, server.ConfirmActionArgs),
    (client.ConfirmActionAnswer, server.ConfirmActionAnswer),
]
WORDING = {"title", "description", "additionalProperties"}


def shape(schema: Any) -> Any:
    """A JSON schema without its wording (and with `$defs` named by what they hold)."""
    if isinstance(schema, dict):
        return {key: shape(value) for key, value in schema.items() if key not in WORDING}
    if isinstance(schema, list):
        return [shape(item) for item in schema]
    return schema


@pytest.mark.parametrize(("ours", "theirs"), PAIRS, ids=[p[0].__name__ for p in PAIRS])
@pytest.mark.parametrize("mode", ["validation", "serialization"])
def test_the_clients_model_is_the_servers(
    ours: type[BaseModel], theirs: type[BaseModel], mode: str
) -> None:
    assert shape(ours.model_json_schema(mode=mode)) == shape(  # type: ignore[arg-type]
        theirs.model_json_schema(mode=mode)  # type: ignore[arg-type]
    )


def test_every_built_in_tool_has_its_models() -> None:
    from bot.human_tools.tool import BUILTIN_TOOLS

    assert sorted(client.TOOLS) == sorted(BUILTIN_TOOLS)


def test_the_shape_sees_a_changed_limit() -> None:
    """The comparison is not blind: a limit changed is a difference."""

    class Looser(client.Arguments):
        question: str

    looser = Looser.model_json_schema()
    assert shape(looser) != shape(server.AskUserQuestionArgs.model_json_schema())
