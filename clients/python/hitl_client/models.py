"""The built-in human tools' arguments and answers, as the bridge's API takes and tells them.

The client's own copies of the server's models (its OpenAPI document's `<Tool>Arguments` and
`<Tool>Answer` schemas), so that the client installs without the server: a test
(tests/clients/python/test_models.py) fails when the two differ in a field, a type or a limit.
Arguments are checked here as strictly as the bridge checks them, so a mistake is caught
before it is sent; answers are read tolerantly (a field a newer bridge adds is ignored).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Text = Annotated[str, Field(min_length=1, max_length=4000)]
Severity = Literal["info", "warning", "danger"]
FieldType = Literal[
    "text", "long_text", "number", "integer", "email", "url", "date", "time", "datetime",
    "boolean", "choice", "choices", "user",
]  # fmt: skip


class Arguments(BaseModel):
    """A tool's arguments: strict, as the bridge reads them (a number is a number). Each
    model's validator is built on first use, not at import (bench/client_import.py)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True)


class Answer(BaseModel):
    """A tool's answer: what the bridge told, fields it adds later ignored."""

    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)


class AskUserQuestionArguments(Arguments):
    question: Text


class AskUserQuestionAnswer(Answer):
    answer: Annotated[str, Field(min_length=1)]


class RequestApprovalArguments(Arguments):
    action: Text
    reason: Text


class RequestApprovalAnswer(Answer):
    approved: bool
    reason: str | None = None
    approved_by: list[str] | None = None  # who approved, when a policy needed several


class SelectOptionArguments(Arguments):
    question: Text
    options: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=500)]],
        Field(min_length=1, max_length=100),
    ]


class SelectOptionAnswer(Answer):
    selectedIndex: int  # camelCase: the wire's names, which the bridge's specifications use
    selectedValue: str


class DataField(Arguments):
    """One field of a collectUserData form."""

    name: Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")]
    label: Annotated[str, Field(min_length=1, max_length=200)]
    type: FieldType = "text"
    required: bool = True
    options: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=150)]] | None, Field(max_length=100)
    ] = None
    min: float | None = None
    max: float | None = None
    description: Annotated[str | None, Field(max_length=300)] = None


class CollectUserDataArguments(Arguments):
    fields: Annotated[list[DataField], Field(min_length=1, max_length=20)]


class UploadFileArguments(Arguments):
    purpose: Text
    acceptedTypes: list[Annotated[str, Field(min_length=1, max_length=50)]] = []


class UploadFileAnswer(Answer):
    fileName: str
    fileSize: Annotated[int, Field(ge=0)]
    url: str


class ConfirmActionArguments(Arguments):
    title: Annotated[str, Field(min_length=1, max_length=200)]
    message: Text
    severity: Severity = "info"


class ConfirmActionAnswer(Answer):
    confirmed: bool
    approved_by: list[str] | None = None


class ApproveToolCallArguments(Arguments):
    """`approveToolCall`: another agent's tool call, shown with Approve, Edit and Decline."""

    tool_name: Annotated[str, Field(min_length=1, max_length=200)]
    input: dict[str, Any]
    description: Annotated[str | None, Field(min_length=1, max_length=2000)] = None
    allow: Annotated[str | None, Field(min_length=1, max_length=200)] = None


class ToolCallReview(Answer):
    """A person's decision on a tool call (`review_tool_call`): approved as asked, approved
    with their edits (`edited`, `arguments` then the call to make), approved with "allow
    here" (`grant`: calls like it need not be asked again), or declined with a `reason`."""

    approved: bool
    arguments: dict[str, Any]  # what to run: the call as asked, the person's edits applied
    edited: bool = False
    grant: bool = False
    reason: str | None = None
    answered_by: str | None = None


# Each built-in tool's name, with its arguments' model and its answer's (collectUserData's
# answer is the form's own: {field name: value}).
TOOLS: dict[str, tuple[type[Arguments], type[Answer] | None]] = {
    "AskUserQuestion": (AskUserQuestionArguments, AskUserQuestionAnswer),
    "requestApproval": (RequestApprovalArguments, RequestApprovalAnswer),
    "selectOption": (SelectOptionArguments, SelectOptionAnswer),
    "collectUserData": (CollectUserDataArguments, None),
    "uploadFile": (UploadFileArguments, UploadFileAnswer),
    "confirmAction": (ConfirmActionArguments, ConfirmActionAnswer),
}
