"""AG-UI events built from the bridge's data, with the official types (`ag_ui.core`).

Pure: no I/O. Every event is a model of the `ag-ui-protocol` package, so what is written on
the wire is what the package validates; the door encodes them with its `EventEncoder`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ag_ui.core import (
    BaseEvent,
    Interrupt,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StepFinishedEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from adapters.doors.ag_ui.answers import answer_model
from bot.human_tools.tool import HumanTool
from bot.records import RequestRecord
from bot.requests.kind_of import kind_of
from bot.words.tool_names import GATE_TOOL

PROTOCOL = "1.0"
INPUT_REQUIRED = "input_required"  # an interrupt's reason: a person's answer is needed
TOOL_APPROVAL = "tool_approval"  # an approval gate's request in front of a tool call


def new_id() -> str:
    return uuid.uuid4().hex


def run_started(thread_id: str, run_id: str) -> RunStartedEvent:
    return RunStartedEvent(thread_id=thread_id, run_id=run_id, protocol_version=PROTOCOL)


def run_finished(thread_id: str, run_id: str, result: str | None = None) -> RunFinishedEvent:
    outcome = RunFinishedSuccessOutcome()
    return RunFinishedEvent(thread_id=thread_id, run_id=run_id, result=result, outcome=outcome)


def run_interrupted(thread_id: str, run_id: str, interrupts: list[Interrupt]) -> RunFinishedEvent:
    outcome = RunFinishedInterruptOutcome(interrupts=interrupts)
    return RunFinishedEvent(thread_id=thread_id, run_id=run_id, outcome=outcome)


def run_error(message: str, code: str) -> RunErrorEvent:
    return RunErrorEvent(message=message, code=code)


def text_message(text: str) -> list[BaseEvent]:
    """The model's words as one message, its text in one piece: a resumed run's, or a reply
    no piece of was streamed (adapters/doors/ag_ui/replies.py streams the others)."""
    message_id = new_id()
    return [
        TextMessageStartEvent(message_id=message_id, role="assistant"),
        TextMessageContentEvent(message_id=message_id, delta=text),
        TextMessageEndEvent(message_id=message_id),
    ]


def tool_call(call_id: str, name: str, arguments: Mapping[str, Any]) -> list[BaseEvent]:
    """A tool call as it is about to run, its arguments as they run (after any hook)."""
    return [
        ToolCallStartEvent(tool_call_id=call_id, tool_call_name=name),
        ToolCallArgsEvent(tool_call_id=call_id, delta=json.dumps(arguments, ensure_ascii=False)),
        ToolCallEndEvent(tool_call_id=call_id),
    ]


def tool_result(call_id: str, content: str) -> ToolCallResultEvent:
    return ToolCallResultEvent(
        message_id=new_id(), tool_call_id=call_id, content=content, role="tool"
    )


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A tool call's result, as the turn tells it: `ToolCallSteps` streams it in its step."""

    call_id: str
    name: str
    content: str


class ToolCallSteps:
    """The steps one run streams, one a tool call (named after the tool): STEP_STARTED before
    its TOOL_CALL_START, STEP_FINISHED after its TOOL_CALL_RESULT. AG-UI pairs steps within a
    run (a client refuses RUN_FINISHED while a step is open, and a STEP_FINISHED it saw no
    start of), so a call a person's answer holds has its step finished before the interrupt,
    and its result, in the run that resumes it, comes in a step of its own."""

    def __init__(self) -> None:
        self._open: dict[str, str] = {}  # tool call id -> its step's name

    def of(self, item: BaseEvent | ToolResult) -> list[BaseEvent]:
        """`item` as the run streams it, in its step."""
        if isinstance(item, ToolCallStartEvent):
            self._open[item.tool_call_id] = item.tool_call_name
            return [StepStartedEvent(step_name=item.tool_call_name), item]
        if isinstance(item, ToolResult):
            started = [] if item.call_id in self._open else [StepStartedEvent(step_name=item.name)]
            self._open.pop(item.call_id, None)
            result = tool_result(item.call_id, item.content)
            return [*started, result, StepFinishedEvent(step_name=item.name)]
        return [item]

    def close(self) -> list[BaseEvent]:
        """Finish the steps still open: the run ends."""
        names, self._open = list(self._open.values()), {}
        return [StepFinishedEvent(step_name=name) for name in names]


def response_schema(record: RequestRecord, tools: Mapping[str, HumanTool]) -> dict[str, Any] | None:
    """The JSON schema of the answer the request takes (None if it has none): the model a
    resume's answer is held to (adapters/doors/ag_ui/answers.py)."""
    model = answer_model(record, tools)
    return model.model_json_schema() if model is not None else None


def interrupt(record: RequestRecord, tools: Mapping[str, HumanTool]) -> Interrupt:
    """An open request as the interrupt that ends a run: answered by a resume entry whose
    `interruptId` is the request's id."""
    tool = tools.get(record.tool_name)
    kind = kind_of(record.tool_name, tool)
    arguments = record.arguments
    gist = kind.gist(arguments)
    title = kind.title(arguments)
    return Interrupt(
        id=record.id,
        reason=TOOL_APPROVAL if record.tool_name == GATE_TOOL else INPUT_REQUIRED,
        message=f"{title}: {gist}" if gist else title,
        tool_call_id=record.tool_call_id or None,
        response_schema=response_schema(record, tools),
        expires_at=_iso(record.expires_at),
        metadata={"tool": record.tool_name, "arguments": arguments},
    )


def _iso(when: datetime | None) -> str | None:
    return when.isoformat().replace("+00:00", "Z") if when is not None else None
