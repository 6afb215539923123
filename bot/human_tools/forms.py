"""Forms people fill in: declared once here, drawn by every surface with its native inputs.

A form is a list of typed fields. It comes from a collectUserData call, from a tool's answer
model (or any flat JSON schema: an edit of a tool's arguments, an MCP elicitation), or from the
core's own controls (a decline's reason, a free-text answer). `read_form` turns what a surface
submitted into typed values, or into one error per field.

What a surface submits for a field (`Inputs`), by kind:
- text, long text, email, url, user: a string (a user id for `user`);
- number, integer: a string or a number;
- date `YYYY-MM-DD`, time `HH:MM[:SS]`, datetime: an ISO 8601 string or epoch seconds;
- boolean: a bool, or "true"/"false" (also yes/no, on/off);
- choice: the chosen option's value; choices: a list of values, or one comma-separated string;
- file: a mapping with `name`, `size`, `url` (an http(s) link, or a `file:///` URI from a
  surface on the person's own machine) and `mimetype` when known.
Empty strings and empty lists count as left empty.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from enum import StrEnum
from typing import Any

Inputs = Mapping[str, Any]

TEXT_MAX = 3_000  # what one text input takes (Slack's plain_text_input ceiling)
LONG_TEXT_MAX = 3_000
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
URL = re.compile(r"^https?://[^\s<>]+$")
FILE_URL = re.compile(r"^(https?://|file:///)[^\s<>]+$")  # file: a local surface's (the console)


class FieldKind(StrEnum):
    TEXT = "text"
    LONG_TEXT = "long_text"
    NUMBER = "number"
    INTEGER = "integer"
    EMAIL = "email"
    URL = "url"
    DATE = "date"
    TIME = "time"
    DATETIME = "datetime"
    BOOLEAN = "boolean"
    CHOICE = "choice"
    CHOICES = "choices"
    USER = "user"
    FILE = "file"


@dataclass(frozen=True, slots=True)
class Option:
    """One option of a choice: `value` travels (its index), `label` is shown, numbered."""

    value: str
    label: str
    text: str  # the option as written, which the answer carries


@dataclass(frozen=True, slots=True)
class FormField:
    name: str
    label: str
    kind: FieldKind = FieldKind.TEXT
    required: bool = True
    description: str = ""
    options: tuple[Option, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    max_length: int | None = None
    value: Any = None  # pre-filled, in the form `read_form` returns
    accept: tuple[str, ...] = ()  # file: extensions or MIME types
    json_value: bool = False  # a long text holding JSON (an object or list in a schema)


@dataclass(frozen=True, slots=True)
class Form:
    """What a control asks for before it can answer: a title, fields and a submit label."""

    name: str
    title: str
    submit: str
    fields: tuple[FormField, ...]


@dataclass(frozen=True, slots=True)
class FormResult:
    values: dict[str, Any] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)


def numbered_options(options: Sequence[str]) -> tuple[Option, ...]:
    """Options as every surface lists them: "1. …", "2. …", in the list and in the control,
    so two long options sharing a prefix can still be told apart by number."""
    return tuple(Option(str(i), f"{i + 1}. {text}", text) for i, text in enumerate(options))


# -- reading what was submitted ------------------------------------------------------------

REQUIRED = "Required"
EXPECTED: dict[FieldKind, str] = {
    FieldKind.NUMBER: "Enter a number",
    FieldKind.INTEGER: "Enter a whole number",
    FieldKind.EMAIL: "Enter a valid email address",
    FieldKind.URL: "Enter a web address starting with https://",
    FieldKind.DATE: "Enter a date (YYYY-MM-DD)",
    FieldKind.TIME: "Enter a time (HH:MM)",
    FieldKind.DATETIME: "Enter a date and time",
    FieldKind.BOOLEAN: "Choose yes or no",
    FieldKind.CHOICE: "Choose one of the options",
    FieldKind.CHOICES: "Choose from the options",
    FieldKind.USER: "Choose a person",
    FieldKind.FILE: "Upload a file",
}


def expects(spec: FormField) -> str:
    """What a field takes, in the words its reader uses when it is not given that: for a
    surface that checks an input before it is submitted (an input's error message)."""
    return EXPECTED.get(spec.kind, REQUIRED)


def read_form(form: Form, inputs: Inputs) -> FormResult:
    """The typed values of a submission, or what is wrong with each field."""
    values: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for spec in form.fields:
        raw = inputs.get(spec.name)
        if _empty(raw):
            if spec.required:
                errors[spec.name] = REQUIRED
            continue
        try:
            values[spec.name] = _read(spec, raw)
        except ValueError as err:
            errors[spec.name] = str(err)
    return FormResult(values, errors) if errors else FormResult(values)


def _empty(raw: Any) -> bool:
    return (
        raw is None
        or (isinstance(raw, str | list | tuple) and not raw)
        or (isinstance(raw, str) and not raw.strip())
    )


def _read(spec: FormField, raw: Any) -> Any:
    reader = _READERS[spec.kind]
    return reader(spec, raw)


def _text(spec: FormField, raw: Any) -> Any:
    if not isinstance(raw, str):
        raise ValueError("Enter text")
    limit = spec.max_length or (LONG_TEXT_MAX if spec.kind is FieldKind.LONG_TEXT else TEXT_MAX)
    if len(raw) > limit:
        raise ValueError(f"At most {limit} characters")
    if spec.json_value:
        try:
            return json.loads(raw)
        except ValueError:
            raise ValueError("Enter valid JSON") from None
    return raw


def _email(spec: FormField, raw: Any) -> str:
    text = str(_text(spec, raw)).strip()
    if not EMAIL.match(text) or len(text) > 254:
        raise ValueError(EXPECTED[FieldKind.EMAIL])
    return text


def _url(spec: FormField, raw: Any) -> str:
    text = str(_text(spec, raw)).strip()
    if not URL.match(text):
        raise ValueError(EXPECTED[FieldKind.URL])
    return text


def _number(spec: FormField, raw: Any) -> int | float:
    if isinstance(raw, bool):
        raise ValueError(EXPECTED[FieldKind.NUMBER])
    try:
        number = float(raw) if isinstance(raw, str) else raw
    except ValueError:
        raise ValueError(EXPECTED[FieldKind.NUMBER]) from None
    if not isinstance(number, int | float) or not math.isfinite(number):
        raise ValueError(EXPECTED[FieldKind.NUMBER])
    if spec.kind is FieldKind.INTEGER:
        if not float(number).is_integer():
            raise ValueError(EXPECTED[FieldKind.INTEGER])
        number = int(number)
    elif isinstance(number, float) and number.is_integer() and "." not in str(raw):
        number = int(number)
    if spec.minimum is not None and number < spec.minimum:
        raise ValueError(f"At least {spec.minimum:g}")
    if spec.maximum is not None and number > spec.maximum:
        raise ValueError(f"At most {spec.maximum:g}")
    return number


def _date(spec: FormField, raw: Any) -> str:
    try:
        return date.fromisoformat(str(raw).strip()).isoformat()
    except ValueError:
        raise ValueError(EXPECTED[FieldKind.DATE]) from None


def _time(spec: FormField, raw: Any) -> str:
    try:
        return time.fromisoformat(str(raw).strip()).isoformat(timespec="minutes")
    except ValueError:
        raise ValueError(EXPECTED[FieldKind.TIME]) from None


def _datetime(spec: FormField, raw: Any) -> str:
    try:
        if isinstance(raw, int | float) and not isinstance(raw, bool):
            moment = datetime.fromtimestamp(raw, UTC)
        else:
            moment = datetime.fromisoformat(str(raw).strip())
    except (ValueError, OverflowError, OSError):
        raise ValueError(EXPECTED[FieldKind.DATETIME]) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="minutes")


_TRUE = {"true", "yes", "on", "1", "y"}
_FALSE = {"false", "no", "off", "0", "n"}


def _boolean(spec: FormField, raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    word = str(raw).strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise ValueError(EXPECTED[FieldKind.BOOLEAN])


def _option(spec: FormField, value: Any) -> str:
    for option in spec.options:
        if option.value == str(value).strip():
            return option.text
    raise ValueError(EXPECTED[FieldKind.CHOICE])


def _choice(spec: FormField, raw: Any) -> str:
    return _option(spec, raw)


def _choices(spec: FormField, raw: Any) -> list[str]:
    items = raw.split(",") if isinstance(raw, str) else raw
    if not isinstance(items, list | tuple):
        raise ValueError(EXPECTED[FieldKind.CHOICES])
    chosen = [_option(spec, item) for item in items if str(item).strip()]
    if spec.required and not chosen:
        raise ValueError(REQUIRED)
    return list(dict.fromkeys(chosen))


def _user(spec: FormField, raw: Any) -> str:
    text = str(_text(spec, raw)).strip()
    if len(text) > 100 or any(c.isspace() for c in text):
        raise ValueError(EXPECTED[FieldKind.USER])
    return text


def _file(spec: FormField, raw: Any) -> dict[str, Any]:
    name = raw.get("name") if isinstance(raw, Mapping) else None
    if not isinstance(name, str) or not name.strip():
        raise ValueError(EXPECTED[FieldKind.FILE])
    url = str(raw.get("url") or "").strip()
    if url and not FILE_URL.match(url):  # a link the model (and whoever follows it) is given
        raise ValueError(EXPECTED[FieldKind.URL])
    size = raw.get("size")
    return {
        "name": name.strip(),
        "size": size if isinstance(size, int) and not isinstance(size, bool) else 0,
        "url": url,
        "mimetype": str(raw.get("mimetype") or ""),
    }


_READERS = {
    FieldKind.TEXT: _text,
    FieldKind.LONG_TEXT: _text,
    FieldKind.EMAIL: _email,
    FieldKind.URL: _url,
    FieldKind.NUMBER: _number,
    FieldKind.INTEGER: _number,
    FieldKind.DATE: _date,
    FieldKind.TIME: _time,
    FieldKind.DATETIME: _datetime,
    FieldKind.BOOLEAN: _boolean,
    FieldKind.CHOICE: _choice,
    FieldKind.CHOICES: _choices,
    FieldKind.USER: _user,
    FieldKind.FILE: _file,
}


# -- forms from JSON schemas ---------------------------------------------------------------


def form_from_schema(
    schema: Mapping[str, Any],
    *,
    name: str,
    title: str,
    submit: str = "Submit",
    values: Mapping[str, Any] | None = None,
) -> Form:
    """A form for a flat JSON object schema: a tool's answer model, a tool's input schema (an
    edit), an MCP elicitation. A property of a kind no input fits (an object, a list of
    anything but options) is a long text holding JSON."""
    properties = schema.get("properties")
    required = set(schema.get("required") or ())
    defs = schema.get("$defs") or {}
    fields = [
        field_from_schema(key, _resolve(spec, defs), key in required, (values or {}).get(key))
        for key, spec in (properties.items() if isinstance(properties, Mapping) else ())
        if isinstance(spec, Mapping)
    ]
    return Form(name, title, submit, tuple(fields))


def _resolve(spec: Mapping[str, Any], defs: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = spec.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = defs.get(ref.removeprefix("#/$defs/"))
        return {**spec, **target} if isinstance(target, Mapping) else spec
    any_of = spec.get("anyOf")
    if isinstance(any_of, list):  # Optional[X]: the non-null branch
        branches = [b for b in any_of if isinstance(b, Mapping) and b.get("type") != "null"]
        if len(branches) == 1:
            return {**spec, **_resolve(branches[0], defs)}
    return spec


_FORMATS = {
    "email": FieldKind.EMAIL,
    "uri": FieldKind.URL,
    "date": FieldKind.DATE,
    "time": FieldKind.TIME,
    "date-time": FieldKind.DATETIME,
}


def field_from_schema(
    key: str, spec: Mapping[str, Any], required: bool, value: Any = None
) -> FormField:
    """One form field for a JSON schema property (`x-hitl-kind` may name the kind)."""
    label = str(spec.get("title") or key)
    description = str(spec.get("description") or "")
    kind = _kind_of(spec)
    value = value if value is not None else spec.get("default")  # then in read_form's terms
    options: tuple[Option, ...] = ()
    if kind in (FieldKind.CHOICE, FieldKind.CHOICES):
        choices = _choices_of(spec) or _choices_of(spec.get("items") or {}) or []
        options = tuple(
            Option(str(i), f"{i + 1}. {label}", text) for i, (text, label) in enumerate(choices)
        )
        value = _option_values(options, value)
    minimum, maximum = spec.get("minimum"), spec.get("maximum")
    as_json = kind is FieldKind.LONG_TEXT and spec.get("type") not in ("string", None)
    if as_json and value is not None and not isinstance(value, str):
        value = json.dumps(value, ensure_ascii=False)
    return FormField(
        name=key,
        label=label,
        kind=kind,
        required=required and "default" not in spec,
        description=description,
        options=options,
        minimum=float(minimum) if isinstance(minimum, int | float) else None,
        maximum=float(maximum) if isinstance(maximum, int | float) else None,
        max_length=spec.get("maxLength") if isinstance(spec.get("maxLength"), int) else None,
        value=value,
        json_value=as_json,
    )


def _kind_of(spec: Mapping[str, Any]) -> FieldKind:
    named = spec.get("x-hitl-kind")
    if isinstance(named, str) and named in FieldKind.__members__.values():
        return FieldKind(named)
    kind = spec.get("type")
    if "enum" in spec or _choices_of(spec) is not None:
        return FieldKind.CHOICE
    if kind == "array" and _choices_of(spec.get("items") or {}) is not None:
        return FieldKind.CHOICES
    if kind == "string":
        return _FORMATS.get(str(spec.get("format")), FieldKind.TEXT)
    if kind == "integer":
        return FieldKind.INTEGER
    if kind == "number":
        return FieldKind.NUMBER
    if kind == "boolean":
        return FieldKind.BOOLEAN
    return FieldKind.LONG_TEXT  # objects, lists, anything: JSON text


def _choices_of(spec: Mapping[str, Any]) -> list[tuple[str, str]] | None:
    """A choice's options as (value, label): `enum` (labelled by `enumNames` if given), or
    titled constants (`oneOf`/`anyOf` of `{const, title}`, as MCP elicitations write them)."""
    if not isinstance(spec, Mapping):
        return None
    enum = spec.get("enum")
    if isinstance(enum, list) and enum:
        names = spec.get("enumNames")
        labels = names if isinstance(names, list) and len(names) == len(enum) else enum
        return [(str(item), str(label)) for item, label in zip(enum, labels, strict=True)]
    for key in ("oneOf", "anyOf"):
        branches = spec.get(key)
        if (
            isinstance(branches, list)
            and branches
            and all(isinstance(b, Mapping) and "const" in b for b in branches)
        ):
            return [(str(b["const"]), str(b.get("title") or b["const"])) for b in branches]
    return None


def _option_values(options: Iterable[Option], value: Any) -> Any:
    """A pre-filled choice given as option text, as the values of its options."""
    by_text = {option.text: option.value for option in options}
    if isinstance(value, list):
        return [by_text[str(v)] for v in value if str(v) in by_text]
    return by_text.get(str(value)) if value is not None else None
