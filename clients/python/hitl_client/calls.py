"""What the async and the sync client share, none of it I/O: the body of each call, and each
human tool's arguments and the parsing of its answer."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar
from urllib.parse import quote

from pydantic import BaseModel, ValidationError

from hitl_client.errors import HitlError, raise_unless_answered
from hitl_client.models import (
    ApproveToolCallArguments,
    AskUserQuestionAnswer,
    ConfirmActionAnswer,
    DataField,
    RequestApprovalAnswer,
    SelectOptionAnswer,
    Severity,
    ToolCallReview,
    UploadFileAnswer,
)
from hitl_client.request_info import RequestInfo, Status

MAX_WAIT = 60.0  # seconds: the longest long poll the API serves
MIN_POLL_GAP = 1.0  # seconds between polls at least, should a server ignore `wait`

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


def create_body(
    tool: str,
    arguments: Mapping[str, Any],
    to: str,
    *,
    timeout_seconds: float | None,
    idempotency_key: str | None,
    callback_url: str | None,
) -> dict[str, Any]:
    """`POST /requests`'s body. Without a key of the caller's, a fresh one covers the
    retries: a create the bridge recorded before its answer was lost is never made twice."""
    body: dict[str, Any] = {
        "tool": tool,
        "arguments": dict(arguments),
        "to": to,
        "idempotency_key": str(uuid.uuid4()) if idempotency_key is None else idempotency_key,
    }
    if timeout_seconds is not None:
        body["timeout_seconds"] = timeout_seconds
    if callback_url is not None:
        body["callback_url"] = callback_url
    return body


def wait_params(wait: float) -> dict[str, str] | None:
    if not 0 <= wait <= MAX_WAIT:
        raise ValueError(f"wait must be from 0 to {MAX_WAIT:g} seconds")
    return {"wait": str(round(wait, 3))} if wait > 0 else None


def list_query(
    status: Status | None, to: str | None, since: datetime | str | None, limit: int
) -> dict[str, str]:
    query: dict[str, str] = {"limit": str(limit)}
    if status is not None:
        query["status"] = status
    if to is not None:
        query["to"] = to
    if since is not None:
        query["since"] = since.isoformat() if isinstance(since, datetime) else since
    return query


def request_path(request_id: str) -> str:
    # Quoted whole: an id with a slash or dots must not reach another route.
    return f"requests/{quote(request_id, safe='')}"


def read(model: type[M], body: Any) -> M:
    """The bridge's answer as `model`, or a HitlError saying it is not one."""
    try:
        return model.model_validate(body)
    except ValidationError as err:
        raise HitlError(f"the bridge's answer is not a {model.__name__}: {err}") from err


def next_poll(long_poll: float, now: float, deadline: float | None) -> float:
    """The `wait` of the next long poll of a `wait` call."""
    return max(long_poll if deadline is None else min(long_poll, deadline - now), 0.0)


def poll_gap(step: float, asked_at: float, now: float) -> float:
    """Seconds to sleep before the next poll: a server (or a proxy) that answers long polls at
    once must not make `wait` spin."""
    return max(min(MIN_POLL_GAP, step) - (now - asked_at), 0.0)


# -- the human tools ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Ask(Generic[T]):
    """One tool's call, and how the request it makes is read once it settles."""

    tool: str
    arguments: dict[str, Any]
    answer: Callable[[RequestInfo], T]  # the settled request's outcome, or its error


def answered(parse: Callable[[Any], T]) -> Callable[[RequestInfo], T]:
    """A helper's reading of a settled request: its answer parsed, the error of any other
    end (RequestDeclined, RequestExpired…)."""

    def read(info: RequestInfo) -> T:
        raise_unless_answered(info)
        try:
            return parse(info.answer)
        except (ValidationError, TypeError) as err:
            raise HitlError(f"request {info.id}: its answer is not a {info.tool} answer") from err

    return read


def ask_question(question: str) -> Ask[str]:
    return Ask("AskUserQuestion", {"question": question},
               answered(lambda a: AskUserQuestionAnswer.model_validate(a).answer))  # fmt: skip


def request_approval(action: str, reason: str) -> Ask[RequestApprovalAnswer]:
    return Ask("requestApproval", {"action": action, "reason": reason},
               answered(RequestApprovalAnswer.model_validate))  # fmt: skip


def select_option(question: str, options: Sequence[str]) -> Ask[SelectOptionAnswer]:
    return Ask("selectOption", {"question": question, "options": list(options)},
               answered(SelectOptionAnswer.model_validate))  # fmt: skip


def collect_data(fields: Sequence[DataField | Mapping[str, Any]]) -> Ask[dict[str, Any]]:
    return Ask("collectUserData", {"fields": [_field(f) for f in fields]}, answered(_form))


def upload_file(purpose: str, accepted_types: Sequence[str]) -> Ask[UploadFileAnswer]:
    return Ask("uploadFile", {"purpose": purpose, "acceptedTypes": list(accepted_types)},
               answered(UploadFileAnswer.model_validate))  # fmt: skip


def confirm_action(title: str, message: str, severity: Severity) -> Ask[bool]:
    return Ask("confirmAction", {"title": title, "message": message, "severity": severity},
               answered(lambda a: ConfirmActionAnswer.model_validate(a).confirmed))  # fmt: skip


def review_tool_call(
    tool_name: str,
    arguments: Mapping[str, Any],
    description: str | None = None,
    allow: str | None = None,
) -> Ask[ToolCallReview]:
    """The bridge's approval gate on another agent's call: a decline is a review too.
    `allow` offers "approve and allow" for what it names (the review's `grant`)."""
    asked = dict(arguments)

    def decided(info: RequestInfo) -> ToolCallReview:
        if info.status not in ("answered", "declined"):
            raise_unless_answered(info)  # expired, cancelled, undeliverable: raised as such
        by = info.answered_by
        if info.status == "declined":
            return ToolCallReview(approved=False, arguments=asked, reason=info.reason,
                                  answered_by=by)  # fmt: skip
        answer = info.answer if isinstance(info.answer, dict) else {}
        if answer.get("approved") is not True:
            raise HitlError(f"request {info.id}: its answer is not an approval")
        edited = answer.get("arguments")
        edits: dict[str, Any] = edited if isinstance(edited, dict) else {}
        return ToolCallReview(approved=True, arguments=asked | edits, edited=bool(edits),
                              grant=answer.get("grant") is True, answered_by=by)  # fmt: skip

    call = ApproveToolCallArguments(tool_name=tool_name, input=asked, description=description,
                                    allow=allow)  # fmt: skip
    return Ask("approveToolCall", call.model_dump(exclude_none=True), decided)


def _form(answer: Any) -> dict[str, Any]:
    if not isinstance(answer, dict):
        raise TypeError("a form's answer is an object")
    return answer


def _field(spec: DataField | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(spec, DataField):
        dumped: dict[str, Any] = spec.model_dump(mode="json", exclude_none=True)
        return dumped
    return dict(spec)
