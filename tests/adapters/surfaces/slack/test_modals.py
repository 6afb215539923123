"""Modals: a core `Form` drawn with Slack's native input for each field kind."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.surfaces.slack.filetypes import accepted_types
from adapters.surfaces.slack.modals import notice_view, render_modal
from bot.human_tools.forms import FieldKind, Form, FormField, form_from_schema, numbered_options
from bot.human_tools.tool import BUILTIN_TOOLS, CollectUserDataArgs, data_form
from bot.requests.kinds import DECLINE_FORM, Fact, Verb
from bot.requests.view import build_view
from tests.adapters.surfaces.slack.blockkit_rules import (
    assert_valid_modal,
    schema_available,
    schema_problems,
    strings,
)
from tests.adapters.surfaces.slack.updates import (
    EVERY_KIND_FIELDS,
    MARK,
    REQUEST_ID,
    assert_inert,
    make_update,
)

pytestmark = pytest.mark.fast  # pure functions: in `make check`

MODAL_SCHEMA = "blockkit-modal.schema.json"
EVERY_KIND_FORM = data_form(
    CollectUserDataArgs.model_validate({"fields": EVERY_KIND_FIELDS}).fields
)
FILE_FIELD = FormField("file", "File", FieldKind.FILE, accept=("pdf", "image/png"))
EVERY_FORM = Form("form", "Fill in the form", "Submit", (*EVERY_KIND_FORM.fields, FILE_FIELD))
ELEMENTS = {
    "name": "plain_text_input",
    "notes": "plain_text_input",
    "height": "number_input",
    "age": "number_input",
    "email": "email_text_input",
    "site": "url_text_input",
    "day": "datepicker",
    "at": "timepicker",
    "when": "datetimepicker",
    "agree": "radio_buttons",
    "size": "static_select",
    "tags": "multi_static_select",
    "owner": "users_select",
    "file": "file_input",
}


def _inputs(view: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {b["block_id"]: b for b in view["blocks"] if b["type"] == "input"}


def _checked(view: dict[str, Any]) -> dict[str, Any]:
    assert_valid_modal(view)
    assert_inert(view)
    if schema_available(MODAL_SCHEMA):
        assert schema_problems(view, MODAL_SCHEMA) == []
    return view


def test_every_field_kind_has_its_native_input() -> None:
    assert {f.kind for f in EVERY_FORM.fields} == set(FieldKind)  # all 14
    view = _checked(render_modal(EVERY_FORM, Verb.SUBMIT, REQUEST_ID))
    inputs = _inputs(view)
    assert {name: b["element"]["type"] for name, b in inputs.items()} == ELEMENTS
    assert all(b["element"]["action_id"] == name for name, b in inputs.items())
    assert (view["callback_id"], view["private_metadata"]) == ("hitl_modal:submit", REQUEST_ID)
    assert (view["title"]["text"], view["submit"]["text"]) == ("Fill in the form", "Submit")


def test_each_kind_is_drawn_with_its_constraints() -> None:
    inputs = _inputs(render_modal(EVERY_FORM, Verb.SUBMIT, REQUEST_ID))
    assert inputs["notes"]["element"]["multiline"] is True and inputs["notes"]["optional"]
    assert inputs["name"]["element"]["multiline"] is False
    assert "optional" not in inputs["name"]
    height, age = inputs["height"]["element"], inputs["age"]["element"]
    assert (height["is_decimal_allowed"], height["min_value"], height["max_value"]) == (
        True, "0.5", "2.5",
    )  # fmt: skip
    assert (age["is_decimal_allowed"], age["min_value"], age["max_value"]) == (False, "18", "120")
    assert inputs["site"]["hint"]["text"] == "Your home page"
    assert [o["value"] for o in inputs["agree"]["element"]["options"]] == ["true", "false"]
    size = inputs["size"]["element"]
    assert [(o["text"]["text"], o["value"]) for o in size["options"]] == [
        ("1. S", "0"), ("2. M", "1"), ("3. L", "2"),
    ]  # fmt: skip
    assert [o["value"] for o in inputs["tags"]["element"]["options"]] == ["0", "1", "2"]
    file = inputs["file"]
    assert file["element"]["filetypes"] == ["pdf", "png"]
    assert file["element"]["max_files"] == 1
    assert file["hint"]["text"] == "Accepted: pdf, image/png"


def test_pre_filled_values_are_initial_values() -> None:
    schema = {
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "count": {"type": "integer", "minimum": 1},
            "ratio": {"type": "number"},
            "due": {"type": "string", "format": "date"},
            "at": {"type": "string", "format": "time"},
            "start": {"type": "string", "format": "date-time"},
            "urgent": {"type": "boolean"},
            "env": {"enum": ["dev", "prod"]},
            "zones": {"type": "array", "items": {"enum": ["a", "b", "c"]}},
            "meta": {"type": "object"},
        },
    }
    values = {
        "title": "Deploy", "count": 3, "ratio": 0.25, "due": "2026-01-02", "at": "09:30",
        "start": "2026-01-02T09:30:00+00:00", "urgent": False, "env": "prod",
        "zones": ["a", "c"], "meta": {"k": 1},
    }  # fmt: skip
    form = form_from_schema(schema, name="form", title="Edit", values=values)
    inputs = _inputs(_checked(render_modal(form, Verb.SUBMIT, REQUEST_ID)))
    element = {name: block["element"] for name, block in inputs.items()}
    assert element["title"]["initial_value"] == "Deploy"
    assert element["count"]["initial_value"] == "3"
    assert element["ratio"]["initial_value"] == "0.25"
    assert element["due"]["initial_date"] == "2026-01-02"
    assert element["at"]["initial_time"] == "09:30"
    assert element["start"]["initial_date_time"] == 1767346200
    assert element["urgent"]["initial_option"]["value"] == "false"
    assert element["env"]["initial_option"]["value"] == "1"
    assert [o["value"] for o in element["zones"]["initial_options"]] == ["0", "2"]
    assert element["meta"]["initial_value"] == '{"k": 1}'
    assert element["meta"]["multiline"] is True


@pytest.mark.parametrize(
    ("spec", "key"),
    [
        (FormField("n", "N", FieldKind.INTEGER, minimum=1, maximum=5, value=9), "initial_value"),
        (FormField("n", "N", FieldKind.INTEGER, value=2.5), "initial_value"),
        (FormField("d", "D", FieldKind.DATE, value="not a date"), "initial_date"),
        (FormField("t", "T", FieldKind.DATETIME, value="2026-01-02T09:30"), "initial_date_time"),
        (FormField("c", "C", FieldKind.CHOICE, options=numbered_options(["a"]), value="z"),
         "initial_option"),
    ],
)  # fmt: skip
def test_a_pre_filled_value_slack_would_refuse_is_left_out(spec: FormField, key: str) -> None:
    form = Form("form", "F", "Submit", (spec,))
    (block,) = _inputs(_checked(render_modal(form, Verb.SUBMIT, REQUEST_ID))).values()
    assert key not in block["element"]


def test_the_decline_form_asks_for_an_optional_reason() -> None:
    about = [Fact("Action", "Deploy " + MARK)]
    view = _checked(render_modal(DECLINE_FORM, Verb.DECLINE, REQUEST_ID, intro=about))
    (reason,) = _inputs(view).values()
    assert reason["block_id"] == "reason"
    assert reason["optional"] is True
    assert reason["element"]["multiline"] is True
    assert view["callback_id"] == "hitl_modal:decline"
    assert (view["title"]["text"], view["submit"]["text"]) == ("Decline request", "Decline")
    assert "Deploy &lt;x&amp;y&gt;" in "\n".join(strings(view["blocks"]))


def test_a_question_s_answer_modal_shows_the_question() -> None:
    update = make_update("AskUserQuestion", {"question": "Which region?"})
    view = build_view(update, BUILTIN_TOOLS["AskUserQuestion"])
    answer = view.controls[0]
    assert answer.form is not None
    modal = _checked(render_modal(answer.form, answer.verb, REQUEST_ID, intro=view.facts))
    assert modal["callback_id"] == "hitl_modal:answer"
    assert "Which region?" in "\n".join(strings(modal["blocks"]))
    assert list(_inputs(modal)) == ["answer"]


def test_a_form_keeps_to_a_hundred_blocks_inputs_first() -> None:
    fields = tuple(FormField(f"f{i}", f"Field {i}") for i in range(150))
    intro = [Fact("", "about")] * 5
    view = render_modal(Form("form", "F", "Submit", fields), Verb.SUBMIT, REQUEST_ID, intro=intro)
    assert len(view["blocks"]) == 100
    assert all(b["type"] == "input" for b in view["blocks"])


def test_a_form_without_fields_has_no_submit() -> None:
    view = _checked(render_modal(Form("form", "F", "Submit", ()), Verb.SUBMIT, REQUEST_ID))
    assert "submit" not in view


def test_long_titles_and_labels_are_cut() -> None:
    spec = FormField("x", "L" * 3000 + MARK, description="H" * 3000)
    view = _checked(render_modal(Form("form", "T" * 100, "S" * 100, (spec,)), Verb.SUBMIT, "r"))
    assert len(view["title"]["text"]) == 24 and len(view["submit"]["text"]) == 24


def test_an_unusable_request_id_is_refused() -> None:
    with pytest.raises(ValueError, match="request id"):
        render_modal(DECLINE_FORM, Verb.DECLINE, "x" * 3001)


def test_the_notice_view_has_no_inputs() -> None:
    view = _checked(notice_view("This request is for <@U1>"))
    assert "submit" not in view and view["blocks"][0]["text"]["type"] == "mrkdwn"


@pytest.mark.parametrize(
    ("accepted", "filetypes"),
    [
        ([".pdf", "PDF", "*.pdf", "application/pdf"], ["pdf"]),
        (["image/png", ".jpg"], ["png", "jpg"]),
        (["image/jpeg"], ["jpg", "jpeg"]),
        (["image/*"], ["png", "jpg", "jpeg", "gif", "webp", "svg", "heic"]),
        (["*"], None),
        ([], None),
        (["pdf", "application/x-unknown"], None),  # Slack's filter would refuse the unknown
    ],
)
def test_accepted_types_become_slack_filetypes(
    accepted: list[str], filetypes: list[str] | None
) -> None:
    assert accepted_types(accepted).slack_filetypes() == filetypes
    update = make_update("uploadFile", {"purpose": "p", "acceptedTypes": accepted})
    upload = build_view(update, BUILTIN_TOOLS["uploadFile"]).controls[0]
    assert upload.form is not None
    (file,) = _inputs(_checked(render_modal(upload.form, upload.verb, REQUEST_ID))).values()
    assert (file["block_id"], file["element"]["type"]) == ("file", "file_input")
    assert file["element"].get("filetypes") == filetypes
