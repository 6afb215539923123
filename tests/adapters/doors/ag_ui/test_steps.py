"""adapters/doors/ag_ui/events.py's ToolCallSteps: a step around each tool call, paired within a run
(the events parsed back with ag-ui-protocol's own types)."""

from __future__ import annotations

from ag_ui.core import BaseEvent, Event, EventType, StepStartedEvent
from pydantic import TypeAdapter

from adapters.doors.ag_ui import events
from adapters.doors.ag_ui.events import ToolCallSteps, ToolResult

EVENT: TypeAdapter[Event] = TypeAdapter(Event)


def streamed(steps: ToolCallSteps, *items: BaseEvent | ToolResult) -> list[Event]:
    out = [event for item in items for event in steps.of(item)]
    return [EVENT.validate_json(event.model_dump_json(by_alias=True)) for event in out]


def test_a_call_finished_in_the_run_is_one_step_around_its_events_and_result() -> None:
    steps = ToolCallSteps()
    got = streamed(steps, *events.tool_call("c1", "lookup", {"q": 1}),
                   ToolResult("c1", "lookup", "{}"))  # fmt: skip
    assert [e.type for e in got] == [
        EventType.STEP_STARTED, EventType.TOOL_CALL_START, EventType.TOOL_CALL_ARGS,
        EventType.TOOL_CALL_END, EventType.TOOL_CALL_RESULT, EventType.STEP_FINISHED,
    ]  # fmt: skip
    assert {getattr(e, "step_name", "lookup") for e in got} == {"lookup"}
    assert steps.close() == []


def test_a_held_call_s_step_is_closed_with_the_run_and_its_result_gets_its_own() -> None:
    first = ToolCallSteps()
    streamed(first, *events.tool_call("c1", "requestApproval", {}))
    (closed,) = first.close()
    assert closed.type is EventType.STEP_FINISHED
    got = streamed(ToolCallSteps(), ToolResult("c1", "requestApproval", "{}"))
    assert [e.type for e in got] == [
        EventType.STEP_STARTED, EventType.TOOL_CALL_RESULT, EventType.STEP_FINISHED,
    ]  # fmt: skip
    assert isinstance(got[0], StepStartedEvent) and got[0].step_name == "requestApproval"
