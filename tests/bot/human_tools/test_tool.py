"""The human tools: argument and answer models, definitions, and HumanInputToolHandler."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel, ConfigDict, Field

from bot.errors import (
    AnswerInvalidError,
    HumanInputRejectedError,
    ToolCallError,
    ToolFailedError,
    ToolRefusedError,
    UnservedToolCallError,
)
from bot.human_input import HumanInputHandler, RenderState
from bot.human_tools.tool import BUILTIN_TOOLS, HumanInputToolHandler, HumanTool
from bot.tools import AITool, compose_tool_handlers
from bot.tools.context import ToolCallContext, tool_turn_context
from tests.bot.conftest import WAIT, answer_next, watch, within

# -- arguments ----------------------------------------------------------------------------

VALID_ARGUMENTS: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("AskUserQuestion", {"question": "Favourite colour?"}, {"question": "Favourite colour?"}),
    (
        "requestApproval",
        {"action": "Deploy v2", "reason": "Fixes the login bug"},
        {"action": "Deploy v2", "reason": "Fixes the login bug"},
    ),
    (
        "selectOption",
        {"question": "Region?", "options": ["eu", "us"]},
        {"question": "Region?", "options": ["eu", "us"]},
    ),
    (
        "collectUserData",
        {
            "fields": [
                {"name": "age", "label": "Age", "type": "number"},
                {"name": "n", "label": "N"},
            ]
        },
        {
            "fields": [
                {"name": "age", "label": "Age", "type": "number", "required": True},
                {"name": "n", "label": "N", "type": "text", "required": True},
            ]
        },
    ),
    ("uploadFile", {"purpose": "Receipt"}, {"purpose": "Receipt", "acceptedTypes": []}),
    (
        "confirmAction",
        {"title": "Drop table", "message": "Really?"},
        {"title": "Drop table", "message": "Really?", "severity": "info"},
    ),
]

INVALID_ARGUMENTS: list[tuple[str, dict[str, Any], str]] = [
    ("AskUserQuestion", {}, "question: Field required"),
    ("AskUserQuestion", {"question": ""}, "question: String should have at least 1 character"),
    ("AskUserQuestion", {"question": "q", "extra": 1}, "extra: Extra inputs are not permitted"),
    ("requestApproval", {"action": "Deploy"}, "reason: Field required"),
    ("selectOption", {"question": "q", "options": []}, "options: List should have at least 1"),
    ("selectOption", {"question": "q", "options": ["a", ""]}, "options.1: String should have"),
    (
        "collectUserData",
        {"fields": [{"name": "1st", "label": "First"}]},
        "fields.0.name: String should match pattern",
    ),
    (
        "collectUserData",
        {"fields": [{"name": "when", "label": "When", "type": "calendar"}]},
        "fields.0.type: Input should be 'text', 'long_text',",
    ),
    (
        "collectUserData",
        {"fields": [{"name": "a", "label": "A"}, {"name": "a", "label": "Again"}]},
        "fields: Value error, field names must be unique: a",
    ),
    ("uploadFile", {"purpose": "x", "acceptedTypes": "pdf"}, "acceptedTypes: Input should be"),
    (
        "confirmAction",
        {"title": "t", "message": "m", "severity": "fatal"},
        "severity: Input should be 'info', 'warning' or 'danger'",
    ),
]


@pytest.mark.parametrize(("name", "arguments", "normalised"), VALID_ARGUMENTS)
async def test_valid_arguments_are_normalised_into_the_request(
    name: str, arguments: dict[str, Any], normalised: dict[str, Any]
) -> None:
    assert BUILTIN_TOOLS[name].parse_arguments(arguments) == normalised
    human = HumanInputToolHandler.builtin(timeout=WAIT)
    seen = watch(human.handler)
    call = asyncio.create_task(human(name, arguments))
    update = await seen.wait_for(RenderState.EXECUTING)
    assert (update.tool_name, update.arguments) == (name, normalised)
    assert human.handler.pending[update.pending_id].arguments == normalised
    await human.handler.close()
    with pytest.raises(RuntimeError):
        await call


@pytest.mark.parametrize(("name", "arguments", "problem"), INVALID_ARGUMENTS)
async def test_invalid_arguments_are_refused_naming_the_field(
    name: str, arguments: dict[str, Any], problem: str
) -> None:
    human = HumanInputToolHandler.builtin(timeout=WAIT)
    seen = watch(human.handler)
    with pytest.raises(ToolRefusedError) as refused:
        await human(name, arguments)
    error = json.loads(refused.value.message)
    assert list(error) == ["error"]
    assert error["error"].startswith(f"Invalid arguments for '{name}': ")
    assert problem in error["error"]
    assert human.handler.pending == {}
    await human.handler.drain()
    assert seen.updates == []  # nobody was asked


@pytest.mark.parametrize(
    ("name", "arguments", "problem"),
    [case for case in INVALID_ARGUMENTS if "unique" not in case[2]],  # beyond JSON Schema
)
def test_the_schema_the_model_sees_refuses_what_the_model_refuses(
    name: str, arguments: dict[str, Any], problem: str
) -> None:
    schema = BUILTIN_TOOLS[name].definition().parameters
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(arguments, schema)


# -- definitions --------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "arguments", "normalised"), VALID_ARGUMENTS)
def test_definitions_are_self_contained_json_schemas(
    name: str, arguments: dict[str, Any], normalised: dict[str, Any]
) -> None:
    definition = BUILTIN_TOOLS[name].definition()
    assert definition.name == name and definition.description
    text = json.dumps(definition.parameters)
    assert "$ref" not in text and "$defs" not in text
    jsonschema.Draft202012Validator.check_schema(definition.parameters)
    assert definition.parameters["type"] == "object"
    jsonschema.validate(arguments, definition.parameters)
    jsonschema.validate(normalised, definition.parameters)


def test_collect_user_data_definition_inlines_the_field_model() -> None:
    schema = BUILTIN_TOOLS["collectUserData"].definition().parameters
    item = schema["properties"]["fields"]["items"]
    assert item["type"] == "object"
    assert set(item["properties"]) == {
        "name", "label", "type", "required", "options", "min", "max", "description"
    }  # fmt: skip
    assert item["properties"]["type"]["enum"] == [
        "text", "long_text", "number", "integer", "email", "url", "date", "time", "datetime",
        "boolean", "choice", "choices", "user",
    ]  # fmt: skip
    assert all(spec.get("description") for spec in item["properties"].values())


def test_builtin_offers_and_serves_all_six() -> None:
    human = HumanInputToolHandler.builtin()
    names = {
        "AskUserQuestion",
        "requestApproval",
        "selectOption",
        "collectUserData",
        "uploadFile",
        "confirmAction",
    }
    assert human.tool_names == names
    assert {d.name for d in human.tool_definitions} == names


def test_tool_names_serve_without_offering_and_given_definitions_win() -> None:
    assert HumanInputToolHandler(tool_names={"AskUserQuestion"}).tool_definitions == []
    mine = AITool("AskUserQuestion", "Ask.", {"type": "object", "properties": {}})
    human = HumanInputToolHandler(tool_names={"AskUserQuestion"}, tool_definitions=[mine])
    assert human.tool_definitions == [mine]


# -- answers ------------------------------------------------------------------------------

SELECT = {"question": "Colour?", "options": ["red", "green", "blue"]}
FORM = {
    "fields": [
        {"name": "age", "label": "Age", "type": "number"},
        {"name": "mail", "label": "E-mail", "type": "email"},
        {"name": "nick", "label": "Nickname", "type": "text"},
    ]
}
UPLOAD = {"purpose": "Receipt", "acceptedTypes": []}

VALID_ANSWERS: list[tuple[str, dict[str, Any], str, dict[str, Any]]] = [
    ("AskUserQuestion", {"question": "q"}, '{ "answer" : "blue" }', {"answer": "blue"}),
    ("requestApproval", {"action": "a", "reason": "r"}, '{"approved": true}', {"approved": True}),
    (
        "requestApproval",
        {"action": "a", "reason": "r"},
        '{"approved": false, "reason": "too risky"}',
        {"approved": False, "reason": "too risky"},
    ),
    (
        "selectOption",
        SELECT,
        '{"selectedIndex": 2, "selectedValue": "blue"}',
        {"selectedIndex": 2, "selectedValue": "blue"},
    ),
    (
        "collectUserData",
        FORM,
        '{"age": 42, "mail": "ada@example.org", "nick": "ada"}',
        {"age": 42, "mail": "ada@example.org", "nick": "ada"},
    ),
    (  # surfaces submit form inputs as strings
        "collectUserData",
        FORM,
        '{"age": "42", "mail": "ada@example.org", "nick": "ada"}',
        {"age": 42, "mail": "ada@example.org", "nick": "ada"},
    ),
    (
        "collectUserData",
        FORM,
        '{"age": 41.5, "mail": "ada@example.org", "nick": "ada"}',
        {"age": 41.5, "mail": "ada@example.org", "nick": "ada"},
    ),
    (
        "uploadFile",
        UPLOAD,
        '{"fileName": "r.pdf", "fileSize": 10, "url": "https://files.example/r.pdf"}',
        {"fileName": "r.pdf", "fileSize": 10, "url": "https://files.example/r.pdf"},
    ),
    (
        "confirmAction",
        {"title": "t", "message": "m", "severity": "danger"},
        '{"confirmed": false}',
        {"confirmed": False},
    ),
]

INVALID_ANSWERS: list[tuple[str, dict[str, Any], str, str]] = [
    ("AskUserQuestion", {"question": "q"}, '{"answer": ""}', "answer: String should have"),
    ("AskUserQuestion", {"question": "q"}, "blue", "Invalid JSON"),
    ("AskUserQuestion", {"question": "q"}, '{"answer": "b", "x": 1}', "x: Extra inputs"),
    ("requestApproval", {"action": "a", "reason": "r"}, '{"reason": "x"}', "approved: Field"),
    (
        "selectOption",
        SELECT,
        '{"selectedIndex": 3, "selectedValue": "blue"}',
        "selectedIndex 3 is not an option",
    ),
    (
        "selectOption",
        SELECT,
        '{"selectedIndex": -1, "selectedValue": "blue"}',
        "selectedIndex -1 is not an option",
    ),
    (
        "selectOption",
        SELECT,
        '{"selectedIndex": 0, "selectedValue": "blue"}',
        "selectedValue does not match the option at selectedIndex",
    ),
    ("selectOption", SELECT, '{"selectedIndex": 0}', "selectedValue: Field required"),
    ("collectUserData", FORM, '{"age": "old", "mail": "a@b.co", "nick": "a"}', "age"),
    ("collectUserData", FORM, '{"age": true, "mail": "a@b.co", "nick": "a"}', "age"),
    ("collectUserData", FORM, '{"age": 1e400, "mail": "a@b.co", "nick": "a"}', "age"),
    ("collectUserData", FORM, '{"age": "NaN", "mail": "a@b.co", "nick": "a"}', "age"),
    ("collectUserData", FORM, '{"age": 1, "mail": "not-an-email", "nick": "a"}', "mail"),
    ("collectUserData", FORM, '{"age": 1, "mail": "a@b.co"}', "nick: Field required"),
    ("collectUserData", FORM, '{"age": 1, "mail": "a@b.co", "nick": "a", "x": 2}', "x: Extra"),
    ("collectUserData", FORM, '{"age": 1, "mail": "a@b.co", "nick": 7}', "nick: Input should"),
    (
        "uploadFile",
        UPLOAD,
        '{"fileName": "r.pdf", "fileSize": -1, "url": "u"}',
        "fileSize: Input should be greater than or equal to 0",
    ),
    ("confirmAction", {"title": "t", "message": "m", "severity": "danger"}, "{}", "confirmed"),
]


@pytest.mark.parametrize(("name", "arguments", "raw", "normalised"), VALID_ANSWERS)
def test_valid_answers_are_normalised(
    name: str, arguments: dict[str, Any], raw: str, normalised: dict[str, Any]
) -> None:
    answer = BUILTIN_TOOLS[name].parse_answer(arguments, raw)
    assert json.loads(answer) == normalised
    assert answer == json.dumps(normalised, separators=(",", ":"))


@pytest.mark.parametrize(("name", "arguments", "raw", "problem"), INVALID_ANSWERS)
def test_invalid_answers_are_refused(
    name: str, arguments: dict[str, Any], raw: str, problem: str
) -> None:
    with pytest.raises(AnswerInvalidError) as invalid:
        BUILTIN_TOOLS[name].parse_answer(arguments, raw)
    assert str(invalid.value).startswith(f"Invalid answer for '{name}': ")
    assert problem in str(invalid.value)


@pytest.mark.parametrize(("name", "arguments", "raw", "problem"), INVALID_ANSWERS)
async def test_an_invalid_answer_leaves_the_request_answerable(
    name: str, arguments: dict[str, Any], raw: str, problem: str
) -> None:
    good = next(r for n, a, r, _ in VALID_ANSWERS if n == name and a == arguments)
    human = HumanInputToolHandler.builtin(timeout=WAIT)
    seen = watch(human.handler)
    call = asyncio.create_task(human(name, arguments))
    update = await seen.wait_for(RenderState.EXECUTING)

    with pytest.raises(AnswerInvalidError, match="Invalid answer") as invalid:
        BUILTIN_TOOLS[name].parse_answer(arguments, raw)
    assert problem in str(invalid.value)
    # RoomKit's contract: any string, a bool back, never an exception for its content.
    assert human.handler.resolve(update.pending_id, raw) is False
    assert update.pending_id in human.handler.pending
    assert not call.done()

    assert human.handler.resolve(update.pending_id, good)
    assert await within(call) == BUILTIN_TOOLS[name].parse_answer(arguments, good)
    await human.handler.drain()
    assert seen.states(update.pending_id) == [RenderState.EXECUTING, RenderState.COMPLETE]


# -- HumanInputToolHandler ----------------------------------------------------------------


async def test_answer_comes_back_with_the_turns_context_on_the_request() -> None:
    human = HumanInputToolHandler(tool_names={"AskUserQuestion"}, timeout=WAIT)
    seen = watch(human.handler)
    context = ToolCallContext(
        room_id="R1",
        channel_id="agent",
        channel_type="slack",
        tool_call_id="toolu_9",
        actor_id="U1",
    )
    with tool_turn_context(context):
        call = asyncio.create_task(human("AskUserQuestion", {"question": "Colour?"}))
    update = await answer_next(human.handler, seen, '{"answer": "blue"}')
    assert await within(call) == '{"answer": "blue"}'  # declared by name: verbatim
    assert (update.room_id, update.channel_id, update.channel_type) == ("R1", "agent", "slack")
    assert (update.tool_call_id, update.actor_id) == ("toolu_9", "U1")


async def test_rejection_refuses_the_call_with_the_reason() -> None:
    human = HumanInputToolHandler(tool_names={"AskUserQuestion"}, timeout=WAIT)
    seen = watch(human.handler)
    call = asyncio.create_task(human("AskUserQuestion", {"question": "Colour?"}))
    update = await seen.wait_for(RenderState.EXECUTING)
    assert human.handler.reject(update.pending_id, "not telling")
    with pytest.raises(ToolRefusedError) as refused:
        await within(call)
    assert refused.value.message == json.dumps({"error": "Rejected: not telling"})
    assert refused.value.reason == "Rejected: not telling"


async def test_rejection_without_a_reason() -> None:
    human = HumanInputToolHandler(tool_names={"AskUserQuestion"}, timeout=WAIT)
    seen = watch(human.handler)
    call = asyncio.create_task(human("AskUserQuestion", {"question": "Colour?"}))
    update = await seen.wait_for(RenderState.EXECUTING)
    assert human.handler.reject(update.pending_id)
    with pytest.raises(ToolRefusedError) as refused:
        await within(call)
    assert refused.value.message == '{"error": "Rejected"}'


async def test_timeout_fails_the_call_with_the_seeds_message() -> None:
    human = HumanInputToolHandler(tool_names={"AskUserQuestion"}, timeout=0.05)
    seen = watch(human.handler)
    with pytest.raises(ToolFailedError) as failed:
        await within(human("AskUserQuestion", {"question": "Colour?"}))
    assert not isinstance(failed.value, ToolRefusedError)
    assert failed.value.message == (
        '{"error": "Human input timed out after 0.05s for tool \'AskUserQuestion\'"}'
    )
    assert human.handler.pending == {}
    expired = await seen.wait_for(RenderState.EXPIRED)
    assert expired.reason == "Human input timed out after 0.05s for tool 'AskUserQuestion'"


async def test_closing_the_handler_while_waiting_is_a_plain_runtime_error() -> None:
    human = HumanInputToolHandler(tool_names={"AskUserQuestion"}, timeout=WAIT)
    seen = watch(human.handler)
    call = asyncio.create_task(human("AskUserQuestion", {"question": "Colour?"}))
    update = await seen.wait_for(RenderState.EXECUTING)
    await human.handler.close()
    with pytest.raises(RuntimeError) as closed:
        await within(call)
    assert type(closed.value) is RuntimeError
    assert not isinstance(closed.value, HumanInputRejectedError | ToolCallError)
    assert human.handler.resolve(update.pending_id, '{"answer": "late"}') is False
    assert (await seen.wait_for(RenderState.CANCELLED)).pending_id == update.pending_id
    with pytest.raises(RuntimeError, match="closed"):  # and nothing new is asked
        await human("AskUserQuestion", {"question": "Again?"})


async def test_other_names_are_not_served() -> None:
    human = HumanInputToolHandler(tool_names={"AskUserQuestion"})
    with pytest.raises(UnservedToolCallError) as unserved:
        await human("lookup", {"q": "x"})
    assert unserved.value.tool_name == "lookup"
    assert unserved.value.message == '{"error": "No handler serves tool \'lookup\'"}'
    assert human.handler.pending == {}


async def lookup(name: str, arguments: dict[str, Any]) -> str:
    if name != "lookup":
        raise UnservedToolCallError(name)
    return f"found {arguments['q']}"


@pytest.mark.parametrize("human_first", [True, False])
async def test_compose_tool_handlers_falls_through(human_first: bool) -> None:
    human = HumanInputToolHandler(tool_names={"AskUserQuestion"}, timeout=WAIT)
    seen = watch(human.handler)
    handlers = (human, lookup) if human_first else (lookup, human)
    composed = compose_tool_handlers(*handlers)

    assert await composed("lookup", {"q": "x"}) == "found x"
    # A ToolHandler returns an Awaitable (here a coroutine): ensure_future wraps it in a Task.
    call = asyncio.ensure_future(composed("AskUserQuestion", {"question": "Colour?"}))
    update = await answer_next(human.handler, seen, '{"answer": "blue"}')
    assert update.tool_name == "AskUserQuestion"
    assert await within(call) == '{"answer": "blue"}'  # declared by name: verbatim
    with pytest.raises(UnservedToolCallError) as unserved:
        await composed("nobody", {})
    assert unserved.value.tool_name == "nobody"


async def test_compose_does_not_swallow_other_tool_errors() -> None:
    human = HumanInputToolHandler.builtin()
    composed = compose_tool_handlers(human, lookup)
    with pytest.raises(ToolRefusedError, match="Invalid arguments"):
        await composed("AskUserQuestion", {})


# -- a custom tool --------------------------------------------------------------------------


class Shade(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1)
    hex: str = Field(pattern=r"^#[0-9a-f]{6}$")


class PickColourArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    prompt: str = Field(min_length=1)
    shades: list[Shade] = Field(min_length=2)


class PickColourAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    hex: str


def _offered_shade(answer: BaseModel, arguments: dict[str, Any]) -> None:
    assert isinstance(answer, PickColourAnswer)
    if answer.hex not in {shade["hex"] for shade in arguments["shades"]}:
        raise ValueError(f"{answer.hex} was not offered")


PICK_COLOUR = HumanTool(
    "pickColour",
    "Ask the user to pick one of a few shades.",
    PickColourArgs,
    PickColourAnswer,
    check_answer=_offered_shade,
)
SHADES = {
    "prompt": "Which?",
    "shades": [{"name": "sky", "hex": "#87ceeb"}, {"name": "sea", "hex": "#006994"}],
}


def test_a_custom_tool_is_offered_with_an_inlined_schema() -> None:
    human = HumanInputToolHandler(tools=[PICK_COLOUR])
    assert human.tool_names == {"pickColour"}
    [definition] = human.tool_definitions
    assert definition.name == "pickColour"
    assert definition.description == "Ask the user to pick one of a few shades."
    assert "$ref" not in json.dumps(definition.parameters)
    shade = definition.parameters["properties"]["shades"]["items"]
    assert shade["properties"]["hex"]["pattern"] == "^#[0-9a-f]{6}$"
    jsonschema.validate(SHADES, definition.parameters)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"prompt": "Which?", "shades": [{"name": "x"}]}, definition.parameters)


async def test_a_custom_tool_validates_its_arguments_and_answers() -> None:
    shared = HumanInputHandler()
    human = HumanInputToolHandler(tools=[PICK_COLOUR], timeout=WAIT, handler=shared)
    assert human.handler is shared
    seen = watch(shared)
    with pytest.raises(ToolRefusedError) as refused:
        await human("pickColour", {"prompt": "Which?", "shades": [{"name": "x", "hex": "red"}]})
    assert (
        "Invalid arguments for 'pickColour': shades" in json.loads(refused.value.message)["error"]
    )

    call = asyncio.create_task(human("pickColour", SHADES))
    update = await seen.wait_for(RenderState.EXECUTING)
    with pytest.raises(AnswerInvalidError, match="#ffffff was not offered"):
        PICK_COLOUR.parse_answer(SHADES, '{"hex": "#ffffff"}')
    with pytest.raises(AnswerInvalidError, match="hex: Field required") as missing:
        PICK_COLOUR.parse_answer(SHADES, "{}")
    assert missing.value.fields == {"hex": "Required"}
    assert shared.resolve(update.pending_id, '{"hex": "#ffffff"}') is False
    assert shared.resolve(update.pending_id, "{}") is False
    assert shared.resolve(update.pending_id, '{"hex": "#006994"}')
    assert await within(call) == '{"hex":"#006994"}'


async def test_a_tool_without_an_answer_model_passes_the_answer_through() -> None:
    note = HumanTool("takeNote", "Ask for a note.", PickColourAnswer)
    human = HumanInputToolHandler(tools=[note], timeout=WAIT)
    seen = watch(human.handler)
    call = asyncio.create_task(human("takeNote", {"hex": "anything"}))
    await answer_next(human.handler, seen, "free text, not JSON")
    assert await within(call) == "free text, not JSON"
