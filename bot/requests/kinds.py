"""What each kind of human tool shows and how its controls answer: declared once, here.

A kind reads a request's arguments tolerantly (they may be partial while a call streams in, or
invalid for a call that was refused): what cannot be shown is left out, never raised. A custom
`HumanTool` gets the generic kind, whose controls come from its answer model, so a new tool
needs no change on any surface.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pydantic import ValidationError

from bot.human_tools.forms import FieldKind, Form, FormField, form_from_schema, numbered_options
from bot.human_tools.tool import CollectUserDataArgs, HumanTool, data_form
from bot.requests.arguments import form_fields, text_of, texts_of
from bot.words.phrases import Phrase

Args = Mapping[str, Any]
OPTION_SHOWN = 75  # the least of an option a control shows (Slack's button and menu text)


class Verb(StrEnum):
    """What a person did, on any surface."""

    APPROVE = "approve"
    DECLINE = "decline"  # any request: reject(reason)
    CHOOSE = "choose"
    CONFIRM = "confirm"
    CANCEL = "cancel"  # confirmAction's "no": an answer, not a decline
    ANSWER = "answer"  # free text
    SUBMIT = "submit"  # a form
    EDIT = "edit"  # approve with changes (a gated call's arguments, in a form)
    GRANT = "grant"  # approve, and allow the same unasked for a while (a gated call)
    STOP = "stop"  # decline, and ask the agent to stop (a door's gated call): reject(reason)


class Style(StrEnum):
    DEFAULT = "default"
    PRIMARY = "primary"
    DANGER = "danger"


@dataclass(frozen=True, slots=True)
class Fact:
    """Something shown about a request: a label ("" for plain text) and its value."""

    label: str
    value: str


@dataclass(frozen=True, slots=True)
class Control:
    """A button (or a choice) a person answers with; `form` is what it asks for first."""

    verb: Verb
    label: str
    style: Style = Style.DEFAULT
    form: Form | None = None
    confirm: Phrase | None = None  # asked before the control acts (a dangerous action)


DECLINE_FORM = Form(
    "decline",
    "Decline request",
    "Decline",
    (FormField("reason", "Reason (optional)", FieldKind.LONG_TEXT, required=False),),
)
DECLINE = Control(Verb.DECLINE, "Decline", Style.DEFAULT, DECLINE_FORM)
STOP_FORM = Form(
    "stop",
    "Decline and stop the agent",
    "Decline and stop",
    (FormField("reason", "Reason (optional)", FieldKind.LONG_TEXT, required=False),),
)
STOP = Control(Verb.STOP, "Decline and stop", Style.DANGER, STOP_FORM)


def answer_form(key: str = "answer", label: str = "Your answer") -> Form:
    return Form("answer", "Answer", "Send", (FormField(key, label, FieldKind.LONG_TEXT),))


Payload = dict[str, Any] | str
"""The answer a control gives: JSON for the tool's answer model, or text taken verbatim."""


@dataclass(frozen=True, slots=True)
class Kind:
    """How one kind of tool looks and answers. Each part gets the (unvalidated) arguments."""

    title: Callable[[Args], str]
    facts: Callable[[Args], list[Fact]]
    controls: Callable[[Args], list[Control]]  # Decline is added to every kind's
    # (verb, the form's typed values, the raw inputs, arguments) -> the answer
    answer: Callable[[Verb, Mapping[str, Any], Mapping[str, Any], Args], Payload]
    answer_facts: Callable[[Args, Any], list[Fact]]
    gist: Callable[[Args], str]
    severity: Callable[[Args], str] = lambda args: "info"
    replies: bool = False  # a free-text reply in the conversation answers it
    # What is wrong with an answer the form alone cannot tell (errors by answer key, "" for
    # the whole; empty when it is fine), e.g. edited arguments against a tool's schema.
    check: Callable[[Payload, Args], dict[str, str]] | None = None


# -- the built-in kinds ----------------------------------------------------------------------


def raw_facts(args: Args, answer: Any) -> list[Fact]:
    """Any answer: a JSON object as facts, anything else as text."""
    if isinstance(answer, dict):
        return [Fact(str(k), v if isinstance(v, str) else json.dumps(v)) for k, v in answer.items()]
    return [Fact("Answer", answer if isinstance(answer, str) else json.dumps(answer))]


def _key_facts(key: str, label: str) -> Callable[[Args, Any], list[Fact]]:
    def facts(args: Args, answer: Any) -> list[Fact]:
        if isinstance(answer, dict) and isinstance(answer.get(key), str):
            return [Fact(label, answer[key])]
        return raw_facts(args, answer)

    return facts


ASK = Kind(
    title=lambda a: "Question",
    facts=lambda a: [Fact("", text_of(a, "question"))],
    controls=lambda a: [Control(Verb.ANSWER, "Answer", Style.PRIMARY, answer_form())],
    answer=lambda verb, values, inputs, a: {"answer": values.get("answer", "")},
    answer_facts=_key_facts("answer", "Answer"),
    gist=lambda a: text_of(a, "question"),
    replies=True,
)


def _approval_facts(args: Args, answer: Any) -> list[Fact]:
    if not isinstance(answer, dict) or not isinstance(answer.get("approved"), bool):
        return raw_facts(args, answer)
    facts = [Fact("Decision", "Approved" if answer["approved"] else "Declined")]
    reason = answer.get("reason")
    return [*facts, Fact("Reason", reason)] if isinstance(reason, str) and reason else facts


APPROVAL = Kind(
    title=lambda a: "Approval needed",
    facts=lambda a: [Fact("Action", text_of(a, "action")), Fact("Reason", text_of(a, "reason"))],
    controls=lambda a: [Control(Verb.APPROVE, "Approve", Style.PRIMARY)],
    answer=lambda verb, values, inputs, a: {"approved": True},
    answer_facts=_approval_facts,
    gist=lambda a: text_of(a, "action"),
)


def choice_form(options: list[str]) -> Form:
    field = FormField("choice", "Your choice", FieldKind.CHOICE, options=numbered_options(options))
    return Form("choice", "Choose an option", "Choose", (field,))


def _select_facts(args: Args) -> list[Fact]:
    facts = [Fact("", text_of(args, "question"))]
    options = numbered_options(texts_of(args, "options"))
    if any(len(o.label) > OPTION_SHOWN for o in options):  # a control would cut them
        facts.append(Fact("Options", "\n".join(o.label for o in options)))
    return facts


def _selection(
    verb: Verb, values: Mapping[str, Any], inputs: Mapping[str, Any], a: Args
) -> Payload:
    index = int(str(inputs.get("choice")))  # read_form checked it is an offered option
    return {"selectedIndex": index, "selectedValue": texts_of(a, "options")[index]}


SELECT = Kind(
    title=lambda a: "Choose an option",
    facts=_select_facts,
    controls=lambda a: [
        Control(Verb.CHOOSE, "Choose", Style.PRIMARY, choice_form(texts_of(a, "options")))
    ],
    answer=_selection,
    answer_facts=_key_facts("selectedValue", "Selected"),
    gist=lambda a: text_of(a, "question"),
)


def _form_of(args: Args) -> Form:
    try:
        return data_form(CollectUserDataArgs.model_validate(dict(args)).fields)
    except ValidationError:  # shown tolerantly; such a call never becomes a request
        fields = tuple(FormField(f.name, f.label) for f in form_fields(args))
        return Form("form", "Fill in the form", "Submit", fields)


def _form_listing(args: Args) -> list[Fact]:
    fields = _form_of(args).fields
    lines = [f"• {f.label}" + ("" if f.kind is FieldKind.TEXT else f" ({f.kind})") for f in fields]
    return [Fact("Please fill in", "\n".join(lines))]


def filled_facts(form: Form, args: Args, answer: Any) -> list[Fact]:
    """A form's answer as facts, each value under its field's label."""
    if not isinstance(answer, dict):
        return raw_facts(args, answer)
    labels = {f.name: f.label for f in form.fields}
    return [
        Fact(labels.get(str(k), str(k)), v if isinstance(v, str) else json.dumps(v))
        for k, v in answer.items()
    ]


def _form_answer_facts(args: Args, answer: Any) -> list[Fact]:
    return filled_facts(_form_of(args), args, answer)


FORM = Kind(
    title=lambda a: "Information needed",
    facts=_form_listing,
    controls=lambda a: [Control(Verb.SUBMIT, "Open form", Style.PRIMARY, _form_of(a))],
    answer=lambda verb, values, inputs, a: dict(values),
    answer_facts=_form_answer_facts,
    gist=lambda a: f"{len(_form_of(a).fields)} fields",
)


def _upload_form(args: Args) -> Form:
    accept = tuple(texts_of(args, "acceptedTypes"))
    field = FormField("file", "File", FieldKind.FILE, accept=accept)
    return Form("upload", "Upload a file", "Upload", (field,))


def _upload_facts(args: Args) -> list[Fact]:
    facts = [Fact("Purpose", text_of(args, "purpose"))]
    types = texts_of(args, "acceptedTypes")
    return [*facts, Fact("Accepted", ", ".join(types))] if types else facts


def _upload_answer(
    verb: Verb, values: Mapping[str, Any], inputs: Mapping[str, Any], a: Args
) -> Payload:
    file = values["file"]
    return {"fileName": file["name"], "fileSize": file["size"], "url": file["url"]}


def _upload_answer_facts(args: Args, answer: Any) -> list[Fact]:
    if not isinstance(answer, dict) or not isinstance(answer.get("fileName"), str):
        return raw_facts(args, answer)
    size = answer.get("fileSize")
    sized = f" ({size:,} bytes)" if isinstance(size, int) and size else ""
    facts = [Fact("File", answer["fileName"] + sized)]
    url = answer.get("url")
    return [*facts, Fact("Link", url)] if isinstance(url, str) and url else facts


UPLOAD = Kind(
    title=lambda a: "File requested",
    facts=_upload_facts,
    controls=lambda a: [Control(Verb.SUBMIT, "Upload file", Style.PRIMARY, _upload_form(a))],
    answer=_upload_answer,
    answer_facts=_upload_answer_facts,
    gist=lambda a: text_of(a, "purpose"),
)


def _severity(args: Args) -> str:
    severity = args.get("severity")
    return severity if severity in ("info", "warning", "danger") else "info"


def _confirm_controls(args: Args) -> list[Control]:
    danger = _severity(args) == "danger"
    sure = Phrase("Are you sure? This cannot be undone.") if danger else None
    style = Style.DANGER if danger else Style.PRIMARY
    return [Control(Verb.CONFIRM, "Confirm", style, confirm=sure), Control(Verb.CANCEL, "Cancel")]


def _confirm_facts(args: Args, answer: Any) -> list[Fact]:
    if not isinstance(answer, dict) or not isinstance(answer.get("confirmed"), bool):
        return raw_facts(args, answer)
    return [Fact("Decision", "Confirmed" if answer["confirmed"] else "Cancelled")]


CONFIRM = Kind(
    title=lambda a: text_of(a, "title") or "Please confirm",
    facts=lambda a: [Fact("", text_of(a, "message"))],
    controls=_confirm_controls,
    answer=lambda verb, values, inputs, a: {"confirmed": verb is Verb.CONFIRM},
    answer_facts=_confirm_facts,
    gist=lambda a: text_of(a, "message"),
    severity=_severity,
)

BUILTIN_KINDS: dict[str, Kind] = {
    "AskUserQuestion": ASK,
    "requestApproval": APPROVAL,
    "selectOption": SELECT,
    "collectUserData": FORM,
    "uploadFile": UPLOAD,
    "confirmAction": CONFIRM,
}


# -- any other tool ----------------------------------------------------------------------------


def _text_key(tool: HumanTool | None, args: Args) -> str | None:
    """The answer model's one string field, which free text fills; None if there is none."""
    model = _answer_model(tool, args)
    if model is None or len(model.model_fields) != 1:
        return None
    ((name, info),) = model.model_fields.items()
    return name if info.annotation is str else None


def _answer_model(tool: HumanTool | None, args: Args) -> Any:
    try:
        return tool.answer_model(dict(args)) if tool is not None else None
    except ValidationError:
        return None


def generic_kind(name: str, tool: HumanTool | None) -> Kind:
    """A tool without a kind of its own: its description and arguments shown; answered with
    free text (verbatim, or as the answer model's one text field) or a form of its answer
    model's fields."""

    def facts(args: Args) -> list[Fact]:
        about = [Fact("", tool.description)] if tool is not None and tool.description else []
        return about + [Fact(str(k), text_of(args, str(k))) for k in args]

    def controls(args: Args) -> list[Control]:
        model, key = _answer_model(tool, args), _text_key(tool, args)
        if model is not None and key is None:
            form = form_from_schema(model.model_json_schema(), name="form", title=name[:60])
            return [Control(Verb.SUBMIT, "Answer", Style.PRIMARY, form)]
        # The text's field is "answer" whatever the model's key: a reply in the conversation
        # answers with {"answer": text} on every surface.
        return [Control(Verb.ANSWER, "Answer", Style.PRIMARY, answer_form())]

    def answer(
        verb: Verb, values: Mapping[str, Any], inputs: Mapping[str, Any], a: Args
    ) -> Payload:
        if verb is Verb.SUBMIT:
            return dict(values)
        key = _text_key(tool, a)
        text = str(values.get("answer", ""))
        return {key: text} if key is not None else text

    return Kind(
        title=lambda a: name,
        facts=facts,
        controls=controls,
        answer=answer,
        answer_facts=raw_facts,
        gist=lambda a: tool.description if tool is not None else "Your answer is needed.",
        replies=_answer_model(tool, {}) is None or _text_key(tool, {}) is not None,
    )
