"""`adaptiveCard/action` invoke values, read back into the core's `Interaction`.

The values are built from the cards `render_card` draws, the way a Teams client builds them:
the clicked action's `data`, with the inputs of the card it sits in (and of that card's
parents) merged in under their ids, an input the person left empty sent as "". Each is also
checked against the Teams SDK's own model of an invoke value. What the values mean is the
core's to say: here they are read with `read_form`, as the router reads them.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from microsoft_teams.api.models import AdaptiveCardInvokeValue

from adapters.surfaces.teams.actions import (
    ActionError,
    CardAction,
    form_inputs,
    interaction,
    parse_action,
)
from adapters.surfaces.teams.cards import Drawing, render_card
from adapters.surfaces.teams.inputs import Filled, Space, form_elements
from bot.human_input import RenderState, RequestUpdate
from bot.human_tools.forms import FieldKind, Form, FormField, numbered_options, read_form
from bot.human_tools.tool import BUILTIN_TOOLS
from bot.requests.kind_of import kind_of
from bot.requests.kinds import DECLINE, Verb
from tests.adapters.surfaces.teams.card_rules import inputs

pytestmark = pytest.mark.fast  # pure functions: in `make check`

REQUEST_ID = "0123456789abcdef01234567"
ACTOR = "aad-actor"
JSON = dict[str, Any]

ARGS: dict[str, JSON] = {
    "AskUserQuestion": {"question": "Which region?"},
    "requestApproval": {"action": "Deploy", "reason": "Release 1.2"},
    "selectOption": {"question": "Pick", "options": ["red", "green", "blue"]},
    "collectUserData": {
        "fields": [
            {"name": "age", "label": "Age", "type": "number"},
            {"name": "email", "label": "Email", "type": "email"},
            {"name": "city", "label": "City", "type": "text"},
        ]
    },
    "uploadFile": {"purpose": "Invoice", "acceptedTypes": [".pdf"]},
    "confirmAction": {"title": "Drop", "message": "Drop it?", "severity": "danger"},
}


def make_update(tool_name: str, arguments: JSON) -> RequestUpdate:
    now = datetime(2026, 1, 2, tzinfo=UTC)
    return RequestUpdate(
        state=RenderState.EXECUTING, pending_id=REQUEST_ID, tool_name=tool_name,
        arguments=arguments, room_id="teams:19:c;messageid=1", tool_call_id="toolu_1",
        channel_id="teams", channel_type="ai", actor_id=ACTOR, created_at=now,
        expires_at=now + timedelta(minutes=5),
    )  # fmt: skip


def live(tool_name: str, **drawing: Any) -> JSON:
    update = make_update(tool_name, ARGS[tool_name])
    drawing.setdefault("refresh_user_ids", ["29:1actor"])
    return render_card(update, BUILTIN_TOOLS[tool_name], live=True, drawing=Drawing(**drawing))


def form_of(tool_name: str, verb: Verb) -> Form | None:
    """The form of the request's control `verb`, as the router gives it (`Router.controls`)."""
    args = ARGS[tool_name]
    controls = [*kind_of(tool_name, BUILTIN_TOOLS[tool_name]).controls(args), DECLINE]
    return next(c.form for c in controls if c.verb is verb)


# -- what a Teams client sends -------------------------------------------------------------------


def _sent(card: JSON) -> dict[str, Any]:
    """What the inputs of one card (not of the cards its buttons show) send."""
    return {i["id"]: i.get("value", "") for i in inputs({**card, "actions": []})}


def invoke_value(
    card: JSON, verb: str, entered: dict[str, Any] | None = None, *, trigger: str = "manual"
) -> JSON:
    """`activity.value` of the invoke a click on `verb` sends: the action's data, the inputs of
    its card and of that card's parents merged in, `entered` typed into them."""
    sent: dict[str, Any] = {}
    if verb == "hitl_refresh":  # the card's refresh clause: no inputs gathered
        action = card["refresh"]["action"]
    else:
        action, sent = _find(card, verb)
    entered = entered or {}
    assert set(entered) <= set(sent), f"no such input there: {set(entered) - set(sent)}"
    data = {**action["data"], **sent, **entered}
    value = {"action": {"type": "Action.Execute", "verb": verb, "data": data}, "trigger": trigger}
    if trigger == "manual":  # the SDK's model (2.1.1) knows only "manual"
        AdaptiveCardInvokeValue.model_validate(value)
    return value


def _find(card: JSON, verb: str) -> tuple[JSON, dict[str, Any]]:
    for action in card.get("actions", []):
        if action.get("verb") == verb:
            return action, _sent(card)
        if action["type"] == "Action.ShowCard":
            try:
                inner, sent = _find(action["card"], verb)
            except LookupError:
                continue
            return inner, {**_sent(card), **sent}
    raise LookupError(verb)


def read(tool_name: str, verb: str, entered: dict[str, Any] | None = None) -> Any:
    """The typed values (or the errors) the core reads from a click on `verb`."""
    action = parse_action(invoke_value(live(tool_name), verb, entered))
    assert action.verb is not None
    form = form_of(tool_name, action.verb)
    person = interaction(action, form, user_id=ACTOR)
    assert form is not None
    result = read_form(form, person.inputs)
    return result.errors or result.values


# -- each tool's controls ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool_name", "verb", "entered", "expected"),
    [
        ("AskUserQuestion", "hitl_answer", {"answer.answer": "eu-west"}, {"answer": "eu-west"}),
        ("selectOption", "hitl_choose", {"choice.choice": "2"}, {"choice": "blue"}),
        ("collectUserData", "hitl_submit",
         {"form.age": "42", "form.email": "a@b.co", "form.city": "Oslo & <b>"},
         {"age": 42, "email": "a@b.co", "city": "Oslo & <b>"}),
        ("uploadFile", "hitl_submit",
         {"upload.file.url": "https://contoso.sharepoint.com/sites/x/Shared%20Documents/I%201.pdf"},
         {"file": {"name": "I 1.pdf", "size": 0, "mimetype": "",
                   "url": "https://contoso.sharepoint.com/sites/x/Shared%20Documents/I%201.pdf"}}),
        ("AskUserQuestion", "hitl_decline", {"decline.reason": " not my call "},
         {"reason": "not my call"}),
        ("requestApproval", "hitl_decline", {}, {}),
    ],
)  # fmt: skip
def test_a_controls_form_is_read_back(
    tool_name: str, verb: str, entered: dict[str, str], expected: JSON
) -> None:
    assert read(tool_name, verb, entered) == expected


@pytest.mark.parametrize(("tool_name", "verb"), [
    ("requestApproval", "hitl_approve"), ("confirmAction", "hitl_confirm"),
    ("confirmAction", "hitl_cancel"),
])  # fmt: skip
def test_a_control_without_a_form_sends_no_inputs(tool_name: str, verb: str) -> None:
    action = parse_action(invoke_value(live(tool_name), verb))
    person = interaction(action, None, user_id=ACTOR, teams_user_id="29:1actor", name="Ada")
    assert person == type(person)(
        request_id=REQUEST_ID, user_id=ACTOR, verb=Verb(verb.removeprefix("hitl_")), inputs={},
        submitted=True, surface="teams", aliases=("29:1actor",), name="Ada",
    )  # fmt: skip


def test_only_the_controls_own_form_is_read() -> None:
    # The decline's ShowCard gathers the card's body inputs too: an open form's, ignored.
    card = live("collectUserData", open=Verb.SUBMIT, filled=Filled({"form.age": "x"}, {}))
    value = invoke_value(card, "hitl_decline", {"decline.reason": "no"})
    assert "form.age" in value["action"]["data"]
    action = parse_action(value)
    person = interaction(action, form_of("collectUserData", Verb.DECLINE), user_id=ACTOR)
    assert person.inputs == {"reason": "no"}


def test_a_required_field_left_empty_is_the_cores_to_refuse() -> None:
    assert read("collectUserData", "hitl_submit", {"form.age": "7"}) == {
        "email": "Required", "city": "Required",
    }  # fmt: skip
    assert read("AskUserQuestion", "hitl_answer", {"answer.answer": " \n "}) == {
        "answer": "Required"
    }


def test_an_option_not_offered_is_the_cores_to_refuse() -> None:
    value = invoke_value(live("selectOption"), "hitl_choose")
    value["action"]["data"]["choice.choice"] = "7"
    action = parse_action(value)
    form = form_of("selectOption", Verb.CHOOSE)
    assert form is not None
    assert read_form(form, interaction(action, form, user_id=ACTOR).inputs).errors == {
        "choice": "Choose one of the options"
    }


# -- every field kind, drawn and read back -----------------------------------------------------

OPTIONS = numbered_options(["alpha", "beta", "gamma"])
EVERY_KIND = Form("form", "Fill in", "Submit", tuple(
    FormField(kind.value, kind.value.title(), kind,
              options=OPTIONS if kind in (FieldKind.CHOICE, FieldKind.CHOICES) else ())
    for kind in FieldKind
))  # fmt: skip
PEOPLE = (("aad-ada", "Ada"), ("aad-bob", "Bob"))
LINK = "https://contoso.sharepoint.com/sites/x/Shared%20Documents/plan%20v2.pdf"
ENTERED = {
    "form.text": "Oslo & <b>",
    "form.long_text": "line one\nline two",
    "form.number": "36.5",
    "form.integer": "42",
    "form.email": "ada@example.com",
    "form.url": "https://example.com/a?b=1",
    "form.date": "2026-03-04",
    "form.time": "14:30",
    "form.datetime.date": "2026-03-04",
    "form.datetime.time": "09:15",
    "form.boolean": "true",
    "form.choice": "1",
    "form.choices": "0,2",
    "form.user": "aad-bob",
    "form.file.url": LINK,
}
EXPECTED = {
    "text": "Oslo & <b>",
    "long_text": "line one\nline two",
    "number": 36.5,
    "integer": 42,
    "email": "ada@example.com",
    "url": "https://example.com/a?b=1",
    "date": "2026-03-04",
    "time": "14:30",
    "datetime": "2026-03-04T09:15+00:00",
    "boolean": True,
    "choice": "beta",
    "choices": ["alpha", "gamma"],
    "user": "aad-bob",
    "file": {"name": "plan v2.pdf", "size": 0, "url": LINK, "mimetype": ""},
}


def _drawn(filled: Filled | None = None) -> dict[str, Any]:
    """What the inputs of the every-kind form send, untouched."""
    elements = form_elements(EVERY_KIND, filled=filled or Filled(), room=Space(), people=PEOPLE)
    return {e["id"]: e.get("value", "") for e in elements if "id" in e}


def test_every_field_kind_is_drawn_and_read_back() -> None:
    sent = _drawn()
    assert set(ENTERED) <= set(sent)
    data = {**sent, **ENTERED}
    values = form_inputs(EVERY_KIND, data)
    assert values["datetime"] == "2026-03-04T09:15" and values["choices"] == ["0", "2"]
    result = read_form(EVERY_KIND, values)
    assert result.errors == {}
    assert result.values == EXPECTED
    assert set(result.values) == {kind.value for kind in FieldKind}


def test_the_persons_values_go_back_into_the_inputs_as_they_were() -> None:
    data = {**_drawn(), **ENTERED}
    again = {**_drawn(Filled(data)), "form.file.name": ""}
    assert again["form.number"] == 36.5  # Input.Number takes a number
    assert read_form(EVERY_KIND, form_inputs(EVERY_KIND, again)).values == EXPECTED


def test_an_empty_form_sends_only_the_toggle() -> None:
    assert form_inputs(EVERY_KIND, _drawn()) == {"boolean": "false"}


@pytest.mark.parametrize(
    ("entered", "expected"),
    [
        ({"form.datetime.date": "2026-03-04"}, "Enter a date and time"),  # no time: no moment
        ({"form.datetime.time": "09:15"}, "Enter a date and time"),
        ({"form.file.name": "plan.pdf"}, "Required"),  # a name without a link: no file
        ({"form.file.url": "javascript:alert(1)"}, "Enter a web address starting with https://"),
        ({"form.number": "nan"}, "Enter a number"),
        ({"form.integer": "4.5"}, "Enter a whole number"),
    ],
)
def test_what_does_not_make_a_value_is_the_cores_to_refuse(
    entered: dict[str, str], expected: str
) -> None:
    field = next(iter(entered)).split(".")[1]
    others = {k: v for k, v in ENTERED.items() if k.split(".")[1] != field}
    values = form_inputs(EVERY_KIND, {**_drawn(), **others, **entered})
    assert read_form(EVERY_KIND, values).errors == {field: expected}


def test_a_file_name_typed_wins_over_the_links() -> None:
    sharing = "https://contoso.sharepoint.com/:b:/g/personal/ada/EaBcD?e=1"
    entered = {"form.file.url": sharing, "form.file.name": "Invoice.PDF"}
    values = form_inputs(EVERY_KIND, {**_drawn(), **entered})
    assert values["file"] == {"name": "Invoice.PDF", "url": sharing, "size": 0}


def test_someone_typed_in_wins_over_the_people_offered() -> None:
    entered = {"form.user": "aad-ada", "form.user.other": "carol@example.com"}
    assert form_inputs(EVERY_KIND, {**_drawn(), **entered})["user"] == "carol@example.com"


def test_numbers_sent_as_json_numbers_stay_numbers() -> None:
    values = form_inputs(EVERY_KIND, {"form.number": 1.75, "form.integer": 42, "form.text": 7})
    assert values == {"number": 1.75, "integer": 42, "text": "7"}


def test_reserved_field_names_round_trip() -> None:
    form = Form("form", "f", "Submit", (FormField("request_id", "Ticket"), FormField("r", "R")))
    update = make_update("collectUserData", {"fields": [
        {"name": "request_id", "label": "Ticket"}, {"name": "reason", "label": "Why"},
    ]})  # fmt: skip
    card = render_card(update, BUILTIN_TOOLS["collectUserData"], live=True, drawing=Drawing())
    value = invoke_value(card, "hitl_submit", {"form.request_id": "T-7"})
    action = parse_action(value)
    assert action.request_id == REQUEST_ID  # not overwritten by the field
    assert form_inputs(form, action.data) == {"request_id": "T-7"}


# -- the invoke value ----------------------------------------------------------------------------


@pytest.mark.parametrize("trigger", ["automatic", "manual"])
def test_a_refresh_is_no_interaction(trigger: str) -> None:
    action = parse_action(invoke_value(live("AskUserQuestion"), "hitl_refresh", trigger=trigger))
    assert action == CardAction(None, REQUEST_ID, trigger, {})
    assert action.refresh
    with pytest.raises(AssertionError):
        interaction(action, None, user_id=ACTOR)


def test_the_trigger_defaults_to_manual() -> None:
    value = {"action": {"type": "Action.Execute", "verb": "hitl_answer",
                        "data": {"request_id": REQUEST_ID}}}  # fmt: skip
    assert parse_action(value).trigger == "manual"


def test_inputs_that_are_no_inputs_are_dropped() -> None:
    value = invoke_value(live("AskUserQuestion"), "hitl_answer")
    value["action"]["data"].update(x=None, y={"a": 1}, z=float("nan"), n=2)
    assert parse_action(value).data == {"answer.answer": "", "n": 2}


def test_the_teams_user_id_is_another_id_of_the_person() -> None:
    action = parse_action(invoke_value(live("requestApproval"), "hitl_approve"))
    assert interaction(action, None, user_id="29:x", teams_user_id="29:x").aliases == ()
    assert interaction(action, None, user_id=ACTOR, teams_user_id="29:x").aliases == ("29:x",)


def _value(**action: Any) -> JSON:
    base = {"type": "Action.Execute", "verb": "hitl_answer", "data": {"request_id": REQUEST_ID}}
    return {"action": {**base, **action}, "trigger": "manual"}


@pytest.mark.parametrize(
    "value",
    [
        None,
        {},
        {"action": "hitl_answer"},
        _value(type="Action.Submit"),
        _value(verb="someone_elses_verb"),
        _value(verb="hitl_frobnicate"),
        _value(verb="hitl_select"),  # a verb of the old scheme
        _value(verb=None),
        _value(verb={"hitl": "answer"}),
        _value(verb="HITL_ANSWER"),
        _value(data={}),
        _value(data={"request_id": ""}),
        _value(data={"request_id": 42}),
        _value(data={"request_id": "x" * 201}),
        _value(data="request_id"),
    ],
)
def test_foreign_or_broken_values_are_refused(value: Any) -> None:
    with pytest.raises(ActionError):
        parse_action(value)


@pytest.mark.parametrize("verb", list(Verb))
def test_every_verb_of_the_core_is_read(verb: Verb) -> None:
    assert parse_action(_value(verb=f"hitl_{verb.value}")).verb is verb
