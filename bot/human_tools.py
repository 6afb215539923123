"""The tools that ask a person: their argument and answer models, and the handler serving them.

A human tool is a pydantic model for its arguments and one for its answer. Arguments the model
writes are validated before anyone is asked; an answer is validated before the model reads it.
"""

from __future__ import annotations

import json
import mimetypes
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, time
from typing import Annotated, Any, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    create_model,
    field_validator,
    model_validator,
)

from bot.errors import (
    AnswerInvalidError,
    HumanInputRejectedError,
    ToolFailedError,
    ToolRefusedError,
    UndeliverableError,
    UnservedToolCallError,
)
from bot.human_input import HumanInputHandler, timeout_message, undeliverable_message
from bot.requests import forms
from bot.tool_context import current_tool_context
from bot.tools import AITool

Text = Annotated[str, Field(min_length=1, max_length=4000)]


def _about(description: str, **constraints: Any) -> Any:
    """A field the model reads about in the tool's JSON schema."""
    return Field(description=description, **constraints)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- arguments and answers of the built-in tools ------------------------------------------


class AskUserQuestionArgs(_Model):
    question: Annotated[Text, _about("The question, as the person will read it.")]


class AskUserQuestionAnswer(_Model):
    answer: Annotated[str, Field(min_length=1)]


class RequestApprovalArgs(_Model):
    action: Annotated[Text, _about("What you will do once approved, precisely.")]
    reason: Annotated[Text, _about("Why the action is needed.")]


class RequestApprovalAnswer(_Model):
    approved: bool
    reason: str | None = None


class SelectOptionArgs(_Model):
    question: Annotated[Text, _about("What the person is choosing.")]
    options: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=500)]],
        _about("The choices, in the order to show them (1 to 100).", min_length=1, max_length=100),
    ]


class SelectOptionAnswer(_Model):
    # camelCase: the seed's wire names, which the model reads.
    selectedIndex: int
    selectedValue: str


FieldType = Literal[
    "text", "long_text", "number", "integer", "email", "url", "date", "time", "datetime",
    "boolean", "choice", "choices", "user",
]  # fmt: skip
_WITH_OPTIONS = ("choice", "choices")
_NUMERIC = ("number", "integer")


class DataField(_Model):
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


class CollectUserDataArgs(_Model):
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


class UploadFileArgs(_Model):
    purpose: Annotated[Text, _about("What the file is for.")]
    acceptedTypes: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=50)]],
        _about("Extensions (pdf) or MIME types (image/*); empty accepts any file."),
    ] = []


class UploadFileAnswer(_Model):
    fileName: str
    fileSize: Annotated[int, Field(ge=0)]
    url: str


class ConfirmActionArgs(_Model):
    title: Annotated[str, _about("A short title.", min_length=1, max_length=200)]
    message: Annotated[Text, _about("What the person confirms, and what follows from it.")]
    severity: Annotated[
        Literal["info", "warning", "danger"], _about("How careful the person should be.")
    ] = "info"


class ConfirmActionAnswer(_Model):
    confirmed: bool


# -- the tool spec ------------------------------------------------------------------------

AnswerCheck = Callable[[BaseModel, dict[str, Any]], None]


@dataclass(frozen=True)
class HumanTool:
    """A tool that asks a person. `renderers` maps a surface name to its render function."""

    name: str
    description: str
    arguments: type[BaseModel]
    answer: type[BaseModel] | None = None
    renderers: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    # Checks that need the request's arguments (an option index within the options offered).
    check_answer: AnswerCheck | None = None

    def definition(self) -> AITool:
        schema = _inline_refs(self.arguments.model_json_schema())
        return AITool(name=self.name, description=self.description, parameters=schema)

    def parse_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The validated arguments, or ToolRefusedError with what is wrong."""
        try:
            model = self.arguments.model_validate(arguments)
        except ValidationError as err:
            raise ToolRefusedError(f"Invalid arguments for '{self.name}': {_brief(err)}") from err
        return model.model_dump(mode="json", exclude_none=True)

    def parse_answer(self, arguments: dict[str, Any], raw: str) -> str:
        """The answer as the model will read it (normalised JSON), or AnswerInvalidError."""
        answer_model = self.answer_model(arguments)
        if answer_model is None:
            return raw
        try:
            answer = answer_model.model_validate_json(raw)
            if self.check_answer is not None:
                self.check_answer(answer, arguments)
        except ValidationError as err:
            raise AnswerInvalidError(
                f"Invalid answer for '{self.name}': {_brief(err)}", _field_errors(err)
            ) from err
        except ValueError as err:
            message = f"Invalid answer for '{self.name}': {err}"
            raise AnswerInvalidError(message, {"": str(err)}) from err
        return answer.model_dump_json(exclude_none=True)

    def answer_model(self, arguments: dict[str, Any]) -> type[BaseModel] | None:
        if self.name == "collectUserData":
            return form_answer_model(CollectUserDataArgs.model_validate(arguments).fields)
        return self.answer


def _inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with its `$defs` written in place, as the model is best shown it."""
    definitions = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return inline(definitions[ref.removeprefix("#/$defs/")])
            return {key: inline(value) for key, value in node.items()}
        if isinstance(node, list):
            return [inline(item) for item in node]
        return node

    result: dict[str, Any] = inline(schema)
    return result


def _field_errors(err: ValidationError) -> dict[str, str]:
    """Each error on the answer key it concerns ("" for the answer as a whole)."""
    errors: dict[str, str] = {}
    for error in err.errors():
        key = str(error["loc"][0]) if error["loc"] else ""
        errors.setdefault(key, "Required" if error["type"] == "missing" else error["msg"])
    return errors


def _brief(err: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}" for e in err.errors()
    )


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


BUILTIN_TOOLS: dict[str, HumanTool] = {
    tool.name: tool
    for tool in (
        HumanTool(
            "AskUserQuestion",
            "Ask the user a question and wait for the answer.",
            AskUserQuestionArgs,
            AskUserQuestionAnswer,
        ),
        HumanTool(
            "requestApproval",
            "Ask a person to approve or reject an action before you take it.",
            RequestApprovalArgs,
            RequestApprovalAnswer,
        ),
        HumanTool(
            "selectOption",
            "Ask the user to pick one of several options.",
            SelectOptionArgs,
            SelectOptionAnswer,
            check_answer=_check_selection,
        ),
        HumanTool(
            "collectUserData",
            "Ask the user to fill in a few typed form fields.",
            CollectUserDataArgs,
        ),
        HumanTool(
            "uploadFile",
            "Ask the user to upload a file.",
            UploadFileArgs,
            UploadFileAnswer,
            check_answer=_check_upload,
        ),
        HumanTool(
            "confirmAction",
            "Ask the user to confirm something, dangerous or not, before doing it.",
            ConfirmActionArgs,
            ConfirmActionAnswer,
        ),
    )
}


# -- the handler --------------------------------------------------------------------------


class HumanInputToolHandler:
    """Serve the tools that ask a person; a tool handler that passes on every other name."""

    def __init__(
        self,
        tool_names: Iterable[str] = (),
        timeout: float = 300,
        handler: HumanInputHandler | None = None,
        tool_definitions: Iterable[AITool] = (),
        *,
        tools: Iterable[HumanTool] = (),
    ) -> None:
        self.handler = handler if handler is not None else HumanInputHandler()
        self.timeout = timeout
        self.tools: dict[str, HumanTool] = {}
        # A tool declared by name is the developer's own: its arguments and answer pass as
        # written (the seed's Quick Start declares its own AskUserQuestion). Only tools whose
        # models the project defines (`builtin()`, `tools=`) are validated.
        names = set(tool_names)
        definitions = {d.name: d for d in tool_definitions}
        for tool in tools:
            self._add(tool)
            definitions.setdefault(tool.name, tool.definition())
            names.add(tool.name)
        self.tool_names = frozenset(names)
        self.tool_definitions = list(definitions.values())

    @classmethod
    def builtin(
        cls, *, timeout: float = 300, handler: HumanInputHandler | None = None
    ) -> HumanInputToolHandler:
        """All six built-in tools, offered and served."""
        return cls(timeout=timeout, handler=handler, tools=BUILTIN_TOOLS.values())

    def _add(self, tool: HumanTool) -> None:
        self.tools[tool.name] = tool

        def validate(arguments: dict[str, Any], raw: str) -> str:
            return tool.parse_answer(arguments, raw)

        self.handler.set_answer_validator(tool.name, validate)

    async def __call__(self, name: str, arguments: dict[str, Any]) -> str:
        if name not in self.tool_names:
            raise UnservedToolCallError(name)
        context = current_tool_context()
        return await self.ask(
            name, arguments, channel_type=context.channel_type if context else "ai"
        )

    async def ask(self, name: str, arguments: dict[str, Any], *, channel_type: str = "ai") -> str:
        """Ask a person through this handler and return the answer the model reads."""
        tool = self.tools.get(name)
        if tool is not None:
            arguments = tool.parse_arguments(arguments)
        context = current_tool_context()
        if context is not None and context.resumed and context.tool_call_id:
            asked = await self.handler.request_for_tool_call(context.tool_call_id)
            if asked is not None:
                return await self._wait(name, asked)
        pending = await self.handler.create(
            name,
            arguments,
            room_id=context.room_id if context else "",
            tool_call_id=context.tool_call_id if context else "",
            channel_id=context.channel_id if context else "",
            channel_type=channel_type,
            actor_id=context.actor_id if context else None,
            timeout=self.timeout,
        )
        return await self._wait(name, pending.pending_id)

    async def _wait(self, name: str, pending_id: str) -> str:
        try:
            return await self.handler.wait(pending_id, timeout=self.timeout)
        except HumanInputRejectedError as rejected:
            raise ToolRefusedError(
                f"Rejected: {rejected}" if str(rejected) else "Rejected"
            ) from None
        except TimeoutError as expired:
            raise ToolFailedError(str(expired) or timeout_message(self.timeout, name)) from None
        except UndeliverableError as undelivered:
            raise ToolFailedError(undeliverable_message(str(undelivered))) from None


def answer_json(answer: BaseModel | dict[str, Any]) -> str:
    """Serialise an answer the way the model reads it."""
    if isinstance(answer, BaseModel):
        return answer.model_dump_json(exclude_none=True)
    return json.dumps(answer)
