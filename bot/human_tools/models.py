"""The built-in human tools' models: their arguments (with the descriptions the model reads),
their answers, and the typed forms collectUserData asks for."""

from __future__ import annotations

import mimetypes
from collections.abc import Iterable
from datetime import date, time
from typing import Annotated, Any, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    create_model,
    field_validator,
    model_validator,
)

from bot.human_tools import forms

Text = Annotated[str, Field(min_length=1, max_length=4000)]


def _about(description: str, **constraints: Any) -> Any:
    """A field the model reads about in the tool's JSON schema."""
    return Field(description=description, **constraints)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Args(_Model):
    """A tool's arguments, as the model or a door's client wrote them: strict, so a number is
    a number (not `true`, not "100") and a flag a boolean. Answers stay lax: surfaces submit
    a form's inputs as text."""

    model_config = ConfigDict(extra="forbid", strict=True)


# -- arguments and answers of the built-in tools ------------------------------------------


class AskUserQuestionArgs(_Args):
    question: Annotated[Text, _about("The question, as the person will read it.")]


class AskUserQuestionAnswer(_Model):
    answer: Annotated[str, Field(min_length=1)]


class RequestApprovalArgs(_Args):
    action: Annotated[Text, _about("What you will do once approved, precisely.")]
    reason: Annotated[Text, _about("Why the action is needed.")]


class RequestApprovalAnswer(_Model):
    approved: bool
    reason: str | None = None
    # Who approved, when the policy needed several approvals (bot/policies/tally.py).
    approved_by: list[str] | None = None


class SelectOptionArgs(_Args):
    question: Annotated[Text, _about("What the person is choosing.")]
    options: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=500)]],
        _about("The choices, in the order to show them (1 to 100).", min_length=1, max_length=100),
    ]


class SelectOptionAnswer(_Model):
    # camelCase: RoomKit's and CopilotKit's wire names, which the model reads.
    selectedIndex: int
    selectedValue: str


FieldType = Literal[
    "text", "long_text", "number", "integer", "email", "url", "date", "time", "datetime",
    "boolean", "choice", "choices", "user",
]  # fmt: skip
_WITH_OPTIONS = ("choice", "choices")
_NUMERIC = ("number", "integer")


class DataField(_Args):
    name: Annotated[
        str,
        _about("The answer's key for this field.", pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"),
    ]
    label: Annotated[str, _about("What the person sees beside the input.", min_length=1,
                                 max_length=200)]  # fmt: skip
    type: Annotated[FieldType, _about(
        "text, long_text (several lines), number, integer, email, url, date (YYYY-MM-DD), "
        "time (HH:MM), datetime (ISO 8601), boolean (yes/no), choice (one of options), "
        "choices (several of options), user (a person in the workspace: their user id)."
    )] = "text"  # fmt: skip
    required: Annotated[bool, _about("Whether the person must fill it in.")] = True
    options: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=150)]] | None,
        _about("The options of a choice or choices field.", max_length=100),
    ] = None
    min: Annotated[float | None, _about("The smallest number or integer allowed.")] = None
    max: Annotated[float | None, _about("The largest number or integer allowed.")] = None
    description: Annotated[str | None, _about("A hint shown under the input.", max_length=300)] = (
        None
    )

    @model_validator(mode="after")
    def _consistent(self) -> DataField:
        if (self.type in _WITH_OPTIONS) != bool(self.options):
            raise ValueError(f"options go with a choice or choices field ({self.name})")
        if (self.min is not None or self.max is not None) and self.type not in _NUMERIC:
            raise ValueError(f"min and max go with a number or integer field ({self.name})")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min is above max ({self.name})")
        return self


class CollectUserDataArgs(_Args):
    fields: Annotated[
        list[DataField], _about("The form's fields, in order (1 to 20).", min_length=1,
                                max_length=20)
    ]  # fmt: skip

    @field_validator("fields")
    @classmethod
    def _unique_names(cls, fields: list[DataField]) -> list[DataField]:
        # Each name is a key of the answer (and an input id on the surfaces): one per field.
        names = [f.name for f in fields]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"field names must be unique: {', '.join(duplicates)}")
        return fields


class UploadFileArgs(_Args):
    purpose: Annotated[Text, _about("What the file is for.")]
    acceptedTypes: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=50)]],
        _about("Extensions (pdf) or MIME types (image/*); empty accepts any file."),
    ] = []


class UploadFileAnswer(_Model):
    fileName: str
    fileSize: Annotated[int, Field(ge=0)]
    url: str


class ConfirmActionArgs(_Args):
    title: Annotated[str, _about("A short title.", min_length=1, max_length=200)]
    message: Annotated[Text, _about("What the person confirms, and what follows from it.")]
    severity: Annotated[
        Literal["info", "warning", "danger"], _about("How careful the person should be.")
    ] = "info"


class ConfirmActionAnswer(_Model):
    confirmed: bool
    approved_by: list[str] | None = None  # as RequestApprovalAnswer's


def _not_a_boolean(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("Input should be a number, not a boolean")
    return value


# A finite number (numeric strings, as surfaces submit inputs, are read as numbers). Without
# these checks `true` read as 1, and NaN or 1e400 were accepted and reached the model as null.
Number = Annotated[
    int | Annotated[float, Field(allow_inf_nan=False)], BeforeValidator(_not_a_boolean)
]
Integer = Annotated[int, BeforeValidator(_not_a_boolean)]


def _answer_type(spec: DataField) -> Any:
    """The type of one form field's value in the answer."""
    simple: dict[str, Any] = {
        "text": Annotated[str, Field(max_length=forms.TEXT_MAX)],
        "long_text": Annotated[str, Field(max_length=forms.LONG_TEXT_MAX)],
        "number": Annotated[Number, Field(ge=spec.min, le=spec.max)],
        "integer": Annotated[Integer, Field(ge=spec.min, le=spec.max)],
        "email": Annotated[str, Field(pattern=forms.EMAIL.pattern, max_length=254)],
        "url": Annotated[str, Field(pattern=forms.URL.pattern, max_length=2048)],
        "date": date,
        "time": time,
        "datetime": AwareDatetime,
        "boolean": bool,
        "user": Annotated[str, Field(min_length=1, max_length=100)],
    }
    if spec.type in simple:
        return simple[spec.type]
    choice = Literal[tuple(spec.options or ())]  # type: ignore[valid-type]
    return choice if spec.type == "choice" else list[choice]  # type: ignore[valid-type]


def form_answer_model(fields: Iterable[DataField]) -> type[BaseModel]:
    """The answer model of a collectUserData form: one typed value per field."""
    definitions: dict[str, Any] = {
        f.name: (_answer_type(f), ...) if f.required else (_answer_type(f) | None, None)
        for f in fields
    }
    return create_model(
        "CollectUserDataAnswer", __config__=ConfigDict(extra="forbid"), **definitions
    )


def data_form(fields: Iterable[DataField]) -> forms.Form:
    """The form a collectUserData call asks the person to fill in."""
    return forms.Form(
        "form",
        "Fill in the form",
        "Submit",
        tuple(
            forms.FormField(
                name=f.name,
                label=f.label,
                kind=forms.FieldKind(f.type),
                required=f.required,
                description=f.description or "",
                options=forms.numbered_options(f.options or ()),
                minimum=f.min,
                maximum=f.max,
            )
            for f in fields
        ),
    )


def _check_selection(answer: BaseModel, arguments: dict[str, Any]) -> None:
    assert isinstance(answer, SelectOptionAnswer)
    options = arguments["options"]
    if not 0 <= answer.selectedIndex < len(options):
        raise ValueError(f"selectedIndex {answer.selectedIndex} is not an option")
    if options[answer.selectedIndex] != answer.selectedValue:
        raise ValueError("selectedValue does not match the option at selectedIndex")


def file_accepted(file_name: str, accepted: Iterable[str]) -> bool:
    """Whether a file's name fits the accepted types: extensions ('pdf', '.PDF', '*.pdf') or
    MIME types ('application/pdf', 'image/*'); no accepted types accepts everything."""
    entries = [entry.strip().lower() for entry in accepted if entry.strip()]
    if not entries:
        return True
    name = file_name.lower()
    guessed = mimetypes.guess_type(name)[0] or ""
    for entry in entries:
        if "/" not in entry:
            if name.endswith("." + entry.lstrip("*").lstrip(".")):
                return True
        elif entry.endswith("/*"):
            if guessed.startswith(entry[:-1]):
                return True
        elif guessed == entry or any(
            name.endswith(x) for x in mimetypes.guess_all_extensions(entry)
        ):
            return True
    return False


def _check_upload(answer: BaseModel, arguments: dict[str, Any]) -> None:
    assert isinstance(answer, UploadFileAnswer)
    accepted = arguments.get("acceptedTypes") or []
    if not file_accepted(answer.fileName, accepted):
        raise ValueError(f"{answer.fileName} is not one of the accepted types: {accepted}")
