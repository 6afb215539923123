"""The doors' contract: each tool a door asks with, with the JSON schemas of its arguments and
of its answer, named as every door publishes them.

The HTTP API's OpenAPI document (adapters/doors/api/openapi.py) holds them as components
`<Tool>Arguments` and `<Tool>Answer` (`AskUserQuestionArguments`, `ApproveToolCallAnswer`, ...),
the MCP tools (adapters/doors/mcp/tools.py) inline them in their input and output schemas, and the
clients' own models are held to them by their tests. The schemas are generated from the
models that validate: what is published is what is checked.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import models_json_schema

from bot.human_tools.tool import BUILTIN_TOOLS
from bot.words.tool_names import COLLECT_USER_DATA, GATE_TOOL

JSON = dict[str, Any]


class GateCall(BaseModel):
    """`approveToolCall`'s arguments through a door: the call another agent wants to make."""

    model_config = ConfigDict(extra="forbid", strict=True)

    tool_name: str = Field(min_length=1, max_length=200, description="The tool to run.")
    input: dict[str, Any] = Field(description="The call's arguments, as the agent wrote them.")
    description: str | None = Field(
        None, min_length=1, max_length=2000,
        description="What the call does, for the person (default: who asks to run it).",
    )  # fmt: skip
    allow: str | None = Field(
        None, min_length=1, max_length=200,
        description='Offer "approve and allow" for calls this rule covers (the caller\'s own '
        'words, e.g. "deploys to staging"): the answer then says `grant: true`, and the '
        "caller need not ask again for what the rule covers.",
    )  # fmt: skip


class GateAnswer(BaseModel):
    """`approveToolCall`'s answer, as bot/gates/approvals.py's `Approval.answer()` writes it: an
    approval (a decline is the request's status, with its reason), with the person's edits,
    their "allow here", and who approved when a policy needed several."""

    model_config = ConfigDict(extra="forbid")

    approved: Literal[True]
    grant: bool = Field(False, description="Calls like it need not be asked again.")
    arguments: dict[str, Any] | None = Field(None, description="The arguments as edited.")
    approved_by: list[str] | None = None


# The form's own answer: each field's name with its value (the fields are the request's).
FORM_ANSWER: JSON = {
    "type": "object",
    "additionalProperties": True,
    "description": "Each field's name with its value, as the form asked for them.",
}
# What a gate request stores as its arguments (bot/gates/approvals.py `request_arguments`).
GATE_REQUEST: JSON = {
    "type": "object",
    "required": ["tool", "arguments"],
    "properties": {
        "tool": {"type": "string", "description": "The tool to run."},
        "description": {"type": "string"},
        "arguments": {"type": "object", "description": "The call's arguments, redacted."},
        "schema": {"type": "object", "description": "What the Edit form may change."},
    },
    "description": "The approval gate's request: the call, as the person is shown it.",
}


@dataclass(frozen=True, slots=True)
class ToolContract:
    """A tool a door asks with: its arguments' model and its answer's (None: the form's own)."""

    tool: str
    arguments: type[BaseModel]
    answer: type[BaseModel] | None

    @property
    def name(self) -> str:
        """The tool's name as its schemas are named: `requestApproval` -> `RequestApproval`."""
        return self.tool[:1].upper() + self.tool[1:]


def _contracts() -> dict[str, ToolContract]:
    built_in = {t.name: ToolContract(t.name, t.arguments, t.answer) for t in BUILTIN_TOOLS.values()}
    return {**built_in, GATE_TOOL: ToolContract(GATE_TOOL, GateCall, GateAnswer)}


CONTRACTS: Mapping[str, ToolContract] = _contracts()


@functools.cache
def tool_schemas(ref_template: str) -> dict[str, JSON]:
    """Every tool's `<Tool>Arguments` and `<Tool>Answer` schema, with the schemas they share
    (a form's `DataField`), each `$ref` written with `ref_template` (`{model}`: the name)."""
    models: list[tuple[type[BaseModel], Literal["validation", "serialization"]]] = []
    names: dict[str, str] = {}
    for contract in CONTRACTS.values():
        models.append((contract.arguments, "validation"))
        names[contract.arguments.__name__] = f"{contract.name}Arguments"
        if contract.answer is not None:
            models.append((contract.answer, "serialization"))
            names[contract.answer.__name__] = f"{contract.name}Answer"
    _, generated = models_json_schema(models, ref_template="{model}")
    schemas = {names.get(key, key): value for key, value in generated.get("$defs", {}).items()}
    for contract in CONTRACTS.values():  # the models' docstrings are ours, not the caller's
        _titled(schemas, f"{contract.name}Arguments", f"{contract.tool}'s arguments")
        _titled(schemas, f"{contract.name}Answer", f"{contract.tool}'s answer")
    schemas[f"{CONTRACTS[COLLECT_USER_DATA].name}Answer"] = FORM_ANSWER
    schemas["ApprovalGateRequest"] = GATE_REQUEST
    renamed: dict[str, JSON] = _with_refs(schemas, names, ref_template)
    return renamed


def _titled(schemas: dict[str, JSON], name: str, description: str) -> None:
    if name in schemas:
        schemas[name] = {**schemas[name], "title": name, "description": description}


def _with_refs(node: Any, names: Mapping[str, str], template: str) -> Any:
    """`node` with each `$ref` (a model's name) renamed and written with `template`."""
    if isinstance(node, dict):
        return {
            key: template.format(model=names.get(value, value))
            if key == "$ref" and isinstance(value, str)
            else _with_refs(value, names, template)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_with_refs(item, names, template) for item in node]
    return node


def inlined(schema: JSON, schemas: Mapping[str, JSON], template: str) -> JSON:
    """`schema` with every `$ref` into `schemas` written in place: one self-contained schema,
    as MCP's tool schemas must be."""
    prefix = template.format(model="")

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith(prefix):
                return inline(schemas[ref[len(prefix) :]])
            return {key: inline(value) for key, value in node.items()}
        if isinstance(node, list):
            return [inline(item) for item in node]
        return node

    result: JSON = inline(schema)
    return result
