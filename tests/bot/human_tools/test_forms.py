"""bot/human_tools/forms.py: a form reads what any surface submits into typed values, or into one
error per field; a JSON schema (an answer model, a tool's input, an elicitation) makes a form."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from bot.human_tools.forms import FieldKind, Form, FormField, form_from_schema, read_form
from bot.human_tools.tool import DataField, data_form, form_answer_model

ALL_KINDS: list[dict[str, Any]] = [
    {"name": "title", "label": "Title", "type": "text"},
    {"name": "notes", "label": "Notes", "type": "long_text"},
    {"name": "ratio", "label": "Ratio", "type": "number"},
    {"name": "count", "label": "Count", "type": "integer", "min": 1, "max": 10},
    {"name": "mail", "label": "Mail", "type": "email"},
    {"name": "site", "label": "Site", "type": "url"},
    {"name": "day", "label": "Day", "type": "date"},
    {"name": "at", "label": "At", "type": "time"},
    {"name": "when", "label": "When", "type": "datetime"},
    {"name": "ok", "label": "OK", "type": "boolean"},
    {"name": "env", "label": "Env", "type": "choice", "options": ["dev", "prod"]},
    {"name": "regions", "label": "Regions", "type": "choices", "options": ["eu", "us", "ap"]},
    {"name": "owner", "label": "Owner", "type": "user"},
]

# What surfaces submit (strings, as Slack and Teams send them), and what the answer holds.
SUBMITTED = {
    "title": "Deploy",
    "notes": "line one\nline two",
    "ratio": "0.5",
    "count": "3",
    "mail": "a@b.co",
    "site": "https://example.com/x",
    "day": "2026-12-01",
    "at": "09:30",
    "when": 1796083200,  # Slack's datetimepicker: epoch seconds
    "ok": "false",
    "env": "1",
    "regions": "0,2",  # Teams' multi-select: one comma-separated string
    "owner": "U0OWNER01",
}
READ = {
    "title": "Deploy",
    "notes": "line one\nline two",
    "ratio": 0.5,
    "count": 3,
    "mail": "a@b.co",
    "site": "https://example.com/x",
    "day": "2026-12-01",
    "at": "09:30",
    "when": "2026-12-01T00:00+00:00",
    "ok": False,
    "env": "prod",
    "regions": ["eu", "ap"],
    "owner": "U0OWNER01",
}


def _form() -> Form:
    return data_form(DataField.model_validate(f) for f in ALL_KINDS)


def test_every_kind_reads_what_a_surface_submits() -> None:
    result = read_form(_form(), SUBMITTED)
    assert result.errors == {}
    assert result.values == READ


def test_what_the_form_reads_the_answer_model_accepts() -> None:
    model = form_answer_model(DataField.model_validate(f) for f in ALL_KINDS)
    model.model_validate(READ)


@pytest.mark.parametrize(
    ("name", "raw", "error"),
    [
        ("ratio", "abc", "Enter a number"),
        ("ratio", "nan", "Enter a number"),
        ("count", "2.5", "Enter a whole number"),
        ("count", "11", "At most 10"),
        ("count", "0", "At least 1"),
        ("mail", "not-an-address", "Enter a valid email address"),
        ("site", "javascript:alert(1)", "Enter a web address"),
        ("day", "01/12/2026", "Enter a date"),
        ("at", "25:00", "Enter a time"),
        ("when", "yesterday", "Enter a date and time"),
        ("ok", "maybe", "Choose yes or no"),
        ("env", "7", "Choose one of the options"),
        ("regions", ["0", "9"], "Choose one of the options"),
        ("owner", "two words", "Choose a person"),
        ("title", "x" * 3001, "At most 3000 characters"),
        ("title", "  ", "Required"),
    ],
)
def test_each_bad_value_is_an_error_on_its_field(name: str, raw: Any, error: str) -> None:
    result = read_form(_form(), {**SUBMITTED, name: raw})
    assert list(result.errors) == [name]
    assert result.errors[name].startswith(error)


def test_an_optional_field_left_empty_is_left_out() -> None:
    form = Form("f", "F", "Send", (FormField("note", "Note", required=False),))
    assert read_form(form, {"note": ""}).values == {}
    assert read_form(form, {}).errors == {}


def test_choices_are_numbered_the_same_way_everywhere() -> None:
    (env,) = [f for f in _form().fields if f.name == "env"]
    assert [(o.value, o.label, o.text) for o in env.options] == [
        ("0", "1. dev", "dev"),
        ("1", "2. prod", "prod"),
    ]


class Deploy(BaseModel):
    service: str = Field(description="Which service")
    replicas: int = Field(ge=1, le=20)
    canary: bool = False
    env: Literal["staging", "production"]
    regions: list[Literal["eu", "us"]]
    config: dict[str, Any]
    contact: str | None = Field(None, json_schema_extra={"format": "email"})


def test_a_schema_makes_a_form_with_typed_prefilled_fields() -> None:
    values = {"service": "api", "env": "production", "regions": ["us"], "config": {"a": 1}}
    form = form_from_schema(Deploy.model_json_schema(), name="edit", title="Edit", values=values)
    kinds = {f.name: (f.kind, f.required) for f in form.fields}
    assert kinds == {
        "service": (FieldKind.TEXT, True),
        "replicas": (FieldKind.INTEGER, True),
        "canary": (FieldKind.BOOLEAN, False),
        "env": (FieldKind.CHOICE, True),
        "regions": (FieldKind.CHOICES, True),
        "config": (FieldKind.LONG_TEXT, True),
        "contact": (FieldKind.EMAIL, False),
    }
    fields = {f.name: f for f in form.fields}
    assert fields["service"].description == "Which service"
    assert (fields["replicas"].minimum, fields["replicas"].maximum) == (1, 20)
    assert fields["env"].value == "1" and fields["regions"].value == ["1"]
    assert fields["config"].value == '{"a": 1}'
    submitted = {
        "service": "api",
        "replicas": "3",
        "canary": "true",
        "env": "0",
        "regions": ["0", "1"],
        "config": '{"b": [1, 2]}',
    }
    read = read_form(form, submitted)
    assert read.values == {
        "service": "api",
        "replicas": 3,
        "canary": True,
        "env": "staging",
        "regions": ["eu", "us"],
        "config": {"b": [1, 2]},
    }
    Deploy.model_validate(read.values)
    assert read_form(form, {**submitted, "config": "{not json"}).errors == {
        "config": "Enter valid JSON"
    }
