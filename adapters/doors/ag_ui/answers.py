"""A resume's answer, read by the model its interrupt publishes as `responseSchema`, strictly.

The router reads answers laxly on purpose: Slack's and Teams' forms submit every input as text,
so "3" is a number there and "on" a checked box. An AG-UI client sends the JSON the schema
describes, so its answer is held to that schema to the letter, as the doors hold a request's
arguments (adapters/doors/api/models.py, bot/doors/contracts.py: `strict=True`): `true` or `false`
for an approval, never "yes", "1" or 1, and a number where a number is asked. The model is the
one the tool and the API publish (no second description of an answer); pydantic's strict mode
reads it. What passes here then goes through the router's own checks and settles as a click.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from bot.doors.contracts import GateAnswer
from bot.human_tools.tool import HumanTool
from bot.records import RequestRecord
from bot.words.tool_names import GATE_TOOL


def answer_model(record: RequestRecord, tools: Mapping[str, HumanTool]) -> type[BaseModel] | None:
    """The model of the answer the request takes: its tool's answer model (a form's model for
    collectUserData), the gate's answer for an approval gate, None if it has none (a tool
    declared by name, answered verbatim)."""
    if record.tool_name == GATE_TOOL:
        return GateAnswer
    tool = tools.get(record.tool_name)
    return tool.answer_model(record.arguments) if tool is not None else None


def strict_errors(
    record: RequestRecord, tools: Mapping[str, HumanTool], answer: str
) -> dict[str, str]:
    """What is wrong with `answer` (the JSON text the router will read) under the request's
    answer model read strictly, by answer key ("" for the answer as a whole); {} if nothing."""
    model = answer_model(record, tools)
    if model is None:
        return {}
    try:
        model.model_validate_json(answer, strict=True)
    except ValidationError as err:
        return _by_key(err.errors())
    return {}


def _by_key(errors: list[ErrorDetails]) -> dict[str, str]:
    """Each error on the answer key it concerns, worded as the router's `Invalid` words it."""
    found: dict[str, str] = {}
    for error in errors:
        key = str(error["loc"][0]) if error["loc"] else ""
        found.setdefault(key, "Required" if error["type"] == "missing" else error["msg"])
    return found
