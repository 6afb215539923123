"""A door request as an A2A task, and an A2A message as a door request: pure translation.

The task is the request (`Task.id` is the request's id), so any worker answers for it from the
store. What the caller chose for the task's context is kept in the request's idempotency key
(`a2a:["<message id>", "<context id>"]`), which also makes a message sent twice one request.

| request | task |
|---|---|
| pending | `TASK_STATE_WORKING`: the person decides |
| answered | `TASK_STATE_COMPLETED`, the answer a data artifact ("answer") |
| declined | `TASK_STATE_REJECTED`, the person's reason in the status message |
| cancelled | `TASK_STATE_CANCELED`, the status message says it was withdrawn |
| expired, undeliverable | `TASK_STATE_FAILED`, saying why (a default answer: the artifact) |
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any, TypeVar

from a2a.helpers.proto_helpers import new_data_part, new_text_message
from a2a.types import (
    Artifact,
    Message,
    Part,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from a2a.utils.errors import ContentTypeNotSupportedError, InvalidParamsError
from google.protobuf.json_format import MessageToDict
from google.protobuf.struct_pb2 import Struct
from google.protobuf.timestamp_pb2 import Timestamp
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from adapters.doors.a2a.card import JSON, SKILLS, TEXT
from bot.doors.addresses import MAX_ADDRESS
from bot.doors.service import Ask, RequestBody

KEY_PREFIX = "a2a:"
ARTIFACT = "answer"
MAX_ID = 80  # characters of a message or context id kept in the idempotency key
STATES = {
    "pending": TaskState.TASK_STATE_WORKING,
    "answered": TaskState.TASK_STATE_COMPLETED,
    "declined": TaskState.TASK_STATE_REJECTED,
    "cancelled": TaskState.TASK_STATE_CANCELED,
    "expired": TaskState.TASK_STATE_FAILED,
    "undeliverable": TaskState.TASK_STATE_FAILED,
}
TAKEN = {"text": (TEXT,), "data": (JSON,)}  # each kind of part taken, and its media types
Event = Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent


# -- a message, read ------------------------------------------------------------------------


class _Asked(BaseModel):
    """A data part's request. Strict, as the HTTP API's body: a string is a string."""

    model_config = ConfigDict(extra="forbid", strict=True)

    tool: str = Field(min_length=1, max_length=100)
    arguments: dict[str, Any] = Field(default_factory=dict)
    to: Annotated[str, Field(min_length=1, max_length=MAX_ADDRESS)] | None = None
    timeout_seconds: float | None = Field(None, gt=0, allow_inf_nan=False)


class _Options(BaseModel):
    """What a message's metadata may carry: who is asked, and for how long."""

    model_config = ConfigDict(extra="ignore", strict=True)

    to: Annotated[str, Field(min_length=1, max_length=MAX_ADDRESS)] | None = None
    timeout_seconds: float | None = Field(None, gt=0, allow_inf_nan=False)


M = TypeVar("M", bound=BaseModel)

NEEDS = (
    'a message needs a data part {"tool", "arguments", "to"}, or a text part with "to" in the '
    "message's metadata"
)


def ask_of(message: Message, default_to: str | None = None) -> Ask:
    """The door request a message asks for; InvalidParamsError saying what is wrong,
    ContentTypeNotSupportedError for a part the door cannot take."""
    for part in message.parts:
        _check_type(part)
    options = _read(_Options, _whole(_dict(message.metadata)), "metadata")
    data = [part for part in message.parts if part.HasField("data")]
    texts = [part.text for part in message.parts if part.HasField("text") and part.text.strip()]
    if data:
        asked = _read(_Asked, _whole(MessageToDict(data[0].data)), "data part")
        tool = SKILLS[asked.tool].tool if asked.tool in SKILLS else asked.tool
        to = asked.to or options.to or default_to
        timeout = asked.timeout_seconds or options.timeout_seconds
        arguments = asked.arguments
    elif texts:
        tool, arguments = "AskUserQuestion", {"question": "\n".join(texts)}
        to, timeout = options.to or default_to, options.timeout_seconds
    else:
        raise InvalidParamsError(message=NEEDS)
    if to is None:
        raise InvalidParamsError(message=f'"to" is missing: {NEEDS}', data={"field": "to"})
    return Ask(tool, arguments, to, timeout, idempotency_key=key_of(message), door="a2a")


def _check_type(part: Part) -> None:
    """A text part (text/plain) or a data part (application/json), else refused: a file's
    bytes or URL, or a part of another media type, is nothing a person here is asked with."""
    kind = part.WhichOneof("content")
    taken = TAKEN.get(kind or "")
    if taken is None or (part.media_type and part.media_type.lower() not in taken):
        what = f"{kind} part" + (f" of type {part.media_type[:100]}" if part.media_type else "")
        raise ContentTypeNotSupportedError(
            message=f"a {what} is not taken: send text (text/plain) or data (application/json)"
        )


def _read(model: type[M], value: Any, where: str) -> M:
    try:
        return model.model_validate(value)
    except ValidationError as err:
        errors = {".".join(str(p) for p in e["loc"]) or where: e["msg"] for e in err.errors()}
        listed = "; ".join(f"{k}: {v}" for k, v in errors.items())
        raise InvalidParamsError(message=f"invalid {where}: {listed}", data=errors) from None


def _dict(struct: Struct) -> dict[str, Any]:
    return MessageToDict(struct) if struct.fields else {}


def _whole(value: Any) -> Any:
    """`value` with its whole numbers as ints: a protobuf Value holds every number as a
    double, and the tools' strict models take 0.0 for no index."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _whole(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole(v) for v in value]
    return value


def key_of(message: Message) -> str:
    """The idempotency key of a message: its id, with the context the caller named."""
    ids = [message.message_id[:MAX_ID]]
    if message.context_id:
        ids.append(message.context_id[:MAX_ID])
    return KEY_PREFIX + json.dumps(ids, ensure_ascii=False)


def context_of(body: RequestBody) -> str:
    """The task's context: the one its message named, else the request's own id."""
    key = body.get("idempotency_key") or ""
    if key.startswith(KEY_PREFIX):
        try:
            ids = json.loads(key.removeprefix(KEY_PREFIX))
        except ValueError:
            ids = []
        if isinstance(ids, list) and len(ids) == 2 and isinstance(ids[1], str):
            return ids[1]
    return str(body["id"])


# -- a request, told ------------------------------------------------------------------------


def task_of(body: RequestBody) -> Task:
    """The request as a task."""
    task = Task(id=body["id"], context_id=context_of(body), status=status_of(body))
    artifact = artifact_of(body)
    if artifact is not None:
        task.artifacts.append(artifact)
    task.metadata.update({"hitl": _told(body)})
    return task


def status_of(body: RequestBody) -> TaskStatus:
    status = TaskStatus(state=STATES[body["status"]], timestamp=_moment(body))
    text = sentence(body)
    status.message.CopyFrom(new_text_message(text, context_id=context_of(body),
                                             task_id=body["id"], role=Role.ROLE_AGENT))  # fmt: skip
    return status


def artifact_of(body: RequestBody) -> Artifact | None:
    if "answer" not in body or body["status"] not in ("answered", "expired"):
        return None
    answer = body["answer"]
    return Artifact(
        artifact_id=ARTIFACT, name=ARTIFACT, parts=[new_data_part(answer, "application/json")]
    )


def final_events(body: RequestBody) -> list[Event]:
    """What a stream sends once the request settled: the answer (if any), then the status."""
    events: list[Event] = []
    artifact = artifact_of(body)
    context = context_of(body)
    if artifact is not None:
        events.append(TaskArtifactUpdateEvent(task_id=body["id"], context_id=context,
                                              artifact=artifact, last_chunk=True))  # fmt: skip
    events.append(TaskStatusUpdateEvent(task_id=body["id"], context_id=context,
                                        status=status_of(body)))  # fmt: skip
    return events


def sentence(body: RequestBody) -> str:
    """What the status message says."""
    status, by, reason = body["status"], body.get("answered_by"), body.get("reason")
    if status == "pending":
        until = f" (until {body['expires_at']})" if body.get("expires_at") else ""
        return f"Asked {body['to']}; waiting for the answer{until}."
    if status == "answered":
        return f"Answered by {by}." if by else "Answered."
    if status == "declined":
        head = f"Declined by {by}" if by else "Declined"
        return f"{head}: {reason}" if reason else f"{head}."
    if status == "cancelled":
        return f"Withdrawn: {reason}" if reason else "Withdrawn."
    if status == "expired":
        kept = " (the policy's default answer stands)" if "answer" in body else ""
        return f"Expired unanswered{kept}."
    return f"Could not be delivered: {reason}" if reason else "Could not be delivered."


def _told(body: RequestBody) -> dict[str, Any]:
    """The request as the task's metadata tells it, in A2A's camelCase (§5.5)."""
    keys = ("status", "tool", "to", "arguments", "created_at", "expires_at", "answered_by",
            "answered_at", "reason")  # fmt: skip
    told = {k: body[k] for k in keys if body.get(k) is not None}
    return {"requestId": body["id"], **{_camel(k): v for k, v in told.items()}}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.title() for word in rest)


def _moment(body: RequestBody) -> Timestamp:
    when = body.get("answered_at") or body.get("created_at")
    stamp = Timestamp()
    if when:
        stamp.FromDatetime(datetime.fromisoformat(str(when).replace("Z", "+00:00")))
    return stamp
