"""HumanInputHandler against its specification (RoomKit's, in docs/architecture.md).

Written from the spec, not from the implementation: every test asserts on the values a caller
sees (answers, exception types and messages, booleans, observer updates, stored rows).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.errors import AnswerInvalidError, HumanInputRejectedError
from bot.human_input import (
    HumanInputHandler,
    PendingInput,
    PendingInputEvent,
    PendingInputStatus,
    RenderState,
    RequestUpdate,
)
from bot.human_input.creator import RequestIds
from bot.records import RequestRecord, RequestStatus
from bot.store import SqlStore, open_store
from bot.tools.context import ToolCallContext, tool_turn_context
from tests.bot.conftest import settle_loop, watch, within

TOOL = "AskUserQuestion"
ARGS: dict[str, Any] = {"question": "Which colour?"}
DENIED = "Denied by ON_USER_INPUT_REQUIRED hook"


# -- helpers ----------------------------------------------------------------------------------


async def blocked_waiter(
    handler: HumanInputHandler, pending_id: str, timeout: float = 5.0
) -> asyncio.Task[str]:
    """A wait() task that has reached its block."""
    task = asyncio.create_task(handler.wait(pending_id, timeout=timeout))
    await settle_loop()
    assert not task.done(), "wait() returned before the request settled"
    return task


async def outcome_of(task: asyncio.Task[str]) -> str | BaseException:
    """The waiter's answer, or the exception it raised."""
    try:
        return await asyncio.wait_for(task, 2.0)
    except (Exception, asyncio.CancelledError) as error:
        return error


def resolve_at(
    handler: HumanInputHandler, pending_id: str, answer: str, when: float
) -> asyncio.Future[bool]:
    """Call resolve() at loop time `when`; the future holds what it returned."""
    loop = asyncio.get_running_loop()
    returned: asyncio.Future[bool] = loop.create_future()
    loop.call_at(when, lambda: returned.set_result(handler.resolve(pending_id, answer)))
    return returned


async def stored_record(store: SqlStore, request_id: str) -> RequestRecord:
    """The stored row of a request the test knows exists."""
    record = await store.get_request(request_id)
    assert record is not None, f"no stored request {request_id}"
    return record


class Recorder:
    """An observer that keeps every update it hears."""

    def __init__(self) -> None:
        self.updates: list[RequestUpdate] = []

    async def __call__(self, update: RequestUpdate) -> None:
        self.updates.append(update)

    def states(self, pending_id: str) -> list[RenderState]:
        return [u.state for u in self.updates if u.pending_id == pending_id]

    def last(self, pending_id: str) -> RequestUpdate:
        return [u for u in self.updates if u.pending_id == pending_id][-1]


# -- create, wait, resolve ----------------------------------------------------------------------


async def test_create_wait_resolve_returns_the_answer(handler: HumanInputHandler) -> None:
    pending = await handler.create(TOOL, ARGS, room_id="R1", tool_call_id="tc1", channel_id="a")
    assert isinstance(pending, PendingInput)
    assert (pending.tool_name, pending.arguments) == (TOOL, ARGS)
    assert (pending.room_id, pending.tool_call_id, pending.channel_id) == ("R1", "tc1", "a")
    assert pending.status is PendingInputStatus.PENDING
    assert pending.result is None and pending.detached is False
    waiter = await blocked_waiter(handler, pending.pending_id)

    assert handler.resolve(pending.pending_id, '{"answer": "blue"}') is True

    assert await outcome_of(waiter) == '{"answer": "blue"}'
    status: PendingInputStatus = pending.status  # resolve() moved it on from PENDING
    assert status is PendingInputStatus.RESOLVED
    assert pending.result == '{"answer": "blue"}'


async def test_every_request_gets_its_own_id(handler: HumanInputHandler) -> None:
    ids = {(await handler.create(TOOL, ARGS)).pending_id for _ in range(50)}
    assert len(ids) == 50


async def test_resolve_before_wait_is_replayed(handler: HumanInputHandler) -> None:
    pending = await handler.create(TOOL, ARGS)
    assert handler.resolve(pending.pending_id, "blue") is True
    assert pending.pending_id not in handler.pending
    assert await handler.wait(pending.pending_id, timeout=0.05) == "blue"
    assert await handler.wait(pending.pending_id, timeout=0.05) == "blue"


async def test_resolve_and_reject_of_an_unknown_id_return_false(
    handler: HumanInputHandler,
) -> None:
    assert handler.resolve("no-such-id", "x") is False
    assert handler.reject("no-such-id", "x") is False


@pytest.mark.parametrize("first", ["resolve", "reject"])
async def test_a_settled_request_cannot_be_settled_again(
    handler: HumanInputHandler, first: str
) -> None:
    pending = await handler.create(TOOL, ARGS)
    if first == "resolve":
        assert handler.resolve(pending.pending_id, "blue") is True
    else:
        assert handler.reject(pending.pending_id, "no") is True
    assert handler.resolve(pending.pending_id, "red") is False
    assert handler.reject(pending.pending_id, "late") is False
    assert pending.result == ("blue" if first == "resolve" else None)


async def test_double_resolve_the_waiter_gets_the_first_answer(
    handler: HumanInputHandler,
) -> None:
    pending = await handler.create(TOOL, ARGS)
    waiter = await blocked_waiter(handler, pending.pending_id)
    assert handler.resolve(pending.pending_id, "first") is True
    assert handler.resolve(pending.pending_id, "second") is False
    assert await outcome_of(waiter) == "first"
    assert await handler.wait(pending.pending_id) == "first"


async def test_two_waiters_on_one_request_both_get_the_answer(
    handler: HumanInputHandler,
) -> None:
    pending = await handler.create(TOOL, ARGS)
    one = await blocked_waiter(handler, pending.pending_id)
    two = await blocked_waiter(handler, pending.pending_id)
    assert handler.resolve(pending.pending_id, "blue") is True
    assert await outcome_of(one) == "blue"
    assert await outcome_of(two) == "blue"


async def test_two_waiters_both_wake_on_timeout_with_the_exact_message(
    handler: HumanInputHandler,
) -> None:
    pending = await handler.create(TOOL, ARGS)
    one = asyncio.create_task(handler.wait(pending.pending_id, timeout=0.05))
    two = asyncio.create_task(handler.wait(pending.pending_id, timeout=0.05))
    errors = [await outcome_of(one), await outcome_of(two)]
    for error in errors:
        assert type(error) is TimeoutError
        assert str(error) == "Human input timed out after 0.05s for tool 'AskUserQuestion'"
    assert pending.status is PendingInputStatus.TIMED_OUT
    assert handler.resolve(pending.pending_id, "late") is False


async def test_a_waiter_with_a_longer_timeout_wakes_with_the_request(
    handler: HumanInputHandler,
) -> None:
    """One settle per request: when it times out, every waiter wakes."""
    pending = await handler.create(TOOL, ARGS)
    short = asyncio.create_task(handler.wait(pending.pending_id, timeout=0.05))
    long = asyncio.create_task(handler.wait(pending.pending_id, timeout=30))
    assert isinstance(await outcome_of(short), TimeoutError)
    assert isinstance(await outcome_of(long), TimeoutError)


async def test_integer_timeout_is_formatted_without_decimals(
    handler: HumanInputHandler, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`after 300s`, as RoomKit prints it; the loop's clock is moved, not waited for."""
    loop = asyncio.get_running_loop()
    real_time = loop.time
    skew = [0.0]
    monkeypatch.setattr(loop, "time", lambda: real_time() + skew[0])
    pending = await handler.create(TOOL, ARGS)
    waiter = await blocked_waiter(handler, pending.pending_id, timeout=300)
    skew[0] = 299.0
    await settle_loop()
    assert not waiter.done(), "timed out a second early"
    skew[0] = 300.5
    error = await outcome_of(waiter)
    assert type(error) is TimeoutError
    assert str(error) == "Human input timed out after 300s for tool 'AskUserQuestion'"


async def test_create_timeout_bounds_a_request_nobody_waits_for(
    handler: HumanInputHandler,
) -> None:
    seen = watch(handler)
    pending = await handler.create(TOOL, ARGS, timeout=0.05)
    await seen.wait_for(RenderState.EXPIRED)
    await handler.drain()
    assert pending.status is PendingInputStatus.TIMED_OUT
    assert handler.pending == {}
    error = await outcome_of(asyncio.create_task(handler.wait(pending.pending_id)))
    assert type(error) is TimeoutError
    assert str(error) == "Human input timed out after 0.05s for tool 'AskUserQuestion'"


# -- rejection, timeout and replay --------------------------------------------------------------


async def test_reject_raises_rejected_error_and_is_replayed(handler: HumanInputHandler) -> None:
    pending = await handler.create(TOOL, ARGS)
    waiter = await blocked_waiter(handler, pending.pending_id)
    assert handler.reject(pending.pending_id, "not now") is True

    error = await outcome_of(waiter)
    assert type(error) is HumanInputRejectedError
    assert isinstance(error, RuntimeError)
    assert str(error) == "not now"
    assert pending.status is PendingInputStatus.REJECTED

    with pytest.raises(HumanInputRejectedError) as replayed:
        await handler.wait(pending.pending_id)
    assert str(replayed.value) == "not now"


async def test_timeout_is_replayed_on_a_later_wait(handler: HumanInputHandler) -> None:
    pending = await handler.create(TOOL, ARGS)
    with pytest.raises(TimeoutError) as first:
        await handler.wait(pending.pending_id, timeout=0.05)
    with pytest.raises(TimeoutError) as again:
        await handler.wait(pending.pending_id, timeout=30)
    assert str(again.value) == str(first.value)
    assert str(again.value) == "Human input timed out after 0.05s for tool 'AskUserQuestion'"


async def test_wait_on_an_unknown_id_raises_value_error(handler: HumanInputHandler) -> None:
    with pytest.raises(ValueError):
        await handler.wait("no-such-id", timeout=0.05)


async def test_retention_keeps_only_the_newest_outcomes() -> None:
    """Once wait() has retired its request, an outcome is replayed while it is among the
    `retention` newest; older ones are forgotten."""
    handler = HumanInputHandler(retention=2)
    first, second, third = [await handler.create(TOOL, ARGS) for _ in range(3)]
    assert handler.resolve(first.pending_id, "1")
    assert handler.reject(second.pending_id, "2")
    assert handler.resolve(third.pending_id, "3")
    assert await handler.wait(first.pending_id) == "1"  # retires it
    with pytest.raises(HumanInputRejectedError, match=r"^2$"):
        await handler.wait(second.pending_id)
    assert await handler.wait(third.pending_id) == "3"

    with pytest.raises(ValueError):
        await handler.wait(first.pending_id, timeout=0.05)
    with pytest.raises(HumanInputRejectedError, match=r"^2$"):
        await handler.wait(second.pending_id, timeout=0.05)
    assert await handler.wait(third.pending_id, timeout=0.05) == "3"


# -- RoomKit: an answer recorded before anyone waits is never lost -----------------------------


@pytest.mark.parametrize("retention", [0, 1, 128])
@pytest.mark.parametrize("others_waited", [True, False], ids=["others-waited", "others-not"])
async def test_resolve_before_wait_is_never_lost(retention: int, others_waited: bool) -> None:
    """ "The retention fills when the answer arrives, not when someone reads it": a request
    stays in the active set until wait() retires it, so the first wait() gets the answer,
    whatever `retention` is and however many other requests settle meanwhile."""
    handler = HumanInputHandler(retention=retention)
    seen = watch(handler)
    early = await handler.create(TOOL, ARGS)
    refused = await handler.create(TOOL, ARGS)
    expired = await handler.create(TOOL, ARGS, timeout=0.01)
    assert handler.resolve(early.pending_id, "blue") is True
    assert handler.reject(refused.pending_id, "no") is True
    await seen.wait_for(RenderState.EXPIRED)  # `expired` times out
    for i in range(300):
        other = await handler.create(TOOL, ARGS)
        assert handler.resolve(other.pending_id, str(i)) is True
        if others_waited:
            assert await handler.wait(other.pending_id) == str(i)

    assert await handler.wait(early.pending_id, timeout=0.05) == "blue"
    with pytest.raises(HumanInputRejectedError, match=r"^no$"):
        await handler.wait(refused.pending_id, timeout=0.05)
    with pytest.raises(TimeoutError, match=r"after 0.01s"):
        await handler.wait(expired.pending_id, timeout=0.05)
    # Retired now, and 300 settles later out of any retention here: only an id evicted from
    # the retention after being retired raises ValueError.
    with pytest.raises(ValueError):
        await handler.wait(early.pending_id)


async def test_resolve_before_wait_with_retention_one_in_the_seed_s_words() -> None:
    """A host that drops the request on resolve() (its own bookkeeping) cannot turn the
    answer it just recorded into a failure, even when retention=1 and another settles."""
    handler = HumanInputHandler(retention=1)
    pending = await handler.create(TOOL, ARGS)
    other = await handler.create(TOOL, ARGS)
    assert handler.resolve(pending.pending_id, '{"answer": "blue"}') is True
    assert handler.resolve(other.pending_id, "other") is True  # evicts the first from retention
    assert await handler.wait(pending.pending_id) == '{"answer": "blue"}'
    assert await handler.wait(other.pending_id) == "other"
    assert await handler.wait(other.pending_id) == "other"  # replayed from the retention
    with pytest.raises(ValueError):
        await handler.wait(pending.pending_id)  # retired, and evicted from the retention


async def test_retention_fills_on_settle_not_on_read() -> None:
    """Reading an outcome does not refresh it: the oldest settle is evicted first."""
    handler = HumanInputHandler(retention=2)
    first, second, third = [await handler.create(TOOL, ARGS) for _ in range(3)]
    handler.resolve(first.pending_id, "1")
    handler.resolve(second.pending_id, "2")
    assert await handler.wait(first.pending_id) == "1"
    handler.resolve(third.pending_id, "3")
    with pytest.raises(ValueError):
        await handler.wait(first.pending_id)
    assert await handler.wait(second.pending_id) == "2"


async def test_retention_zero_keeps_no_outcome() -> None:
    handler = HumanInputHandler(retention=0)
    pending = await handler.create(TOOL, ARGS)
    waiter = await blocked_waiter(handler, pending.pending_id)
    assert handler.resolve(pending.pending_id, "blue") is True
    assert await outcome_of(waiter) == "blue"  # a blocked waiter still gets it
    with pytest.raises(ValueError):
        await handler.wait(pending.pending_id)


# -- release and detached requests ---------------------------------------------------------------


async def test_release_of_an_unanswered_request_fails_its_waiter_plainly(
    handler: HumanInputHandler,
) -> None:
    pending = await handler.create_detached(TOOL, ARGS)
    assert pending.detached is True
    waiter = await blocked_waiter(handler, pending.pending_id)

    assert handler.release(pending.pending_id) is True

    error = await outcome_of(waiter)
    assert type(error) is RuntimeError
    assert not isinstance(error, HumanInputRejectedError)
    assert handler.pending == {}
    assert handler.resolve(pending.pending_id, "late") is False
    assert handler.release("no-such-id") is False


async def test_release_of_an_answered_detached_request_keeps_its_answer_replayable(
    handler: HumanInputHandler,
) -> None:
    """release() drops the request from the active set; the answer it had stays readable."""
    pending = await handler.create_detached(TOOL, ARGS)
    assert handler.resolve(pending.pending_id, "blue") is True
    assert handler.release(pending.pending_id) is True
    assert handler.release(pending.pending_id) is False  # dropped already
    assert handler.resolve(pending.pending_id, "red") is False
    assert await handler.wait(pending.pending_id) == "blue"
    assert await handler.wait(pending.pending_id) == "blue"


async def test_release_with_retention_zero_keeps_nothing_to_replay() -> None:
    handler = HumanInputHandler(retention=0)
    pending = await handler.create_detached(TOOL, ARGS)
    assert handler.resolve(pending.pending_id, "blue") is True
    assert await handler.wait(pending.pending_id) == "blue"  # detached: wait() does not retire
    assert handler.release(pending.pending_id) is True
    with pytest.raises(ValueError):
        await handler.wait(pending.pending_id)


async def test_a_detached_request_stays_until_released(handler: HumanInputHandler) -> None:
    """The caller owns a detached request's cleanup: waits do not retire it, release() does."""
    pending = await handler.create_detached(TOOL, ARGS, tool_call_id="tc-detached")
    assert handler.resolve(pending.pending_id, "blue") is True
    for _ in range(3):
        assert await handler.wait(pending.pending_id) == "blue"
    assert handler.asked("tc-detached")
    assert handler.release(pending.pending_id) is True
    assert handler.release(pending.pending_id) is False


async def test_detached_requests_expire_too(handler: HumanInputHandler) -> None:
    recorder = Recorder()
    handler.add_observer(recorder)
    seen = watch(handler)
    pending = await handler.create_detached(TOOL, ARGS, timeout=0.05)
    await seen.wait_for(RenderState.EXPIRED)
    await handler.drain()
    assert pending.status is PendingInputStatus.TIMED_OUT
    assert handler.pending == {}
    assert handler.resolve(pending.pending_id, "late") is False
    assert recorder.states(pending.pending_id) == [RenderState.EXECUTING, RenderState.EXPIRED]
    assert handler.release(pending.pending_id) is True


# -- the notifier (ON_USER_INPUT_REQUIRED) ------------------------------------------------------


async def test_the_notifier_is_told_about_the_request(handler: HumanInputHandler) -> None:
    events: list[PendingInputEvent] = []

    async def notifier(event: PendingInputEvent) -> None:
        events.append(event)

    handler.set_notifier(notifier)
    pending = await handler.create(
        TOOL, ARGS, room_id="R1", tool_call_id="tc1", channel_id="c1",
        channel_type="realtime_voice", actor_id="alice",
    )  # fmt: skip
    await settle_loop()
    assert len(events) == 1
    event = events[0]
    assert event.pending_id == pending.pending_id
    assert (event.tool_name, event.arguments, event.room_id) == (TOOL, ARGS, "R1")
    assert (event.tool_call_id, event.channel_id) == ("tc1", "c1")
    assert (event.channel_type, event.actor_id) == ("realtime_voice", "alice")
    assert handler.resolve(pending.pending_id, "blue") is True


async def test_a_denying_notifier_rejects_a_blocked_wait(handler: HumanInputHandler) -> None:
    waiting = asyncio.Event()

    async def notifier(event: PendingInputEvent) -> bool:
        await waiting.wait()
        return False

    handler.set_notifier(notifier)
    pending = await handler.create(TOOL, ARGS)
    waiter = await blocked_waiter(handler, pending.pending_id)
    waiting.set()

    error = await outcome_of(waiter)
    assert type(error) is HumanInputRejectedError
    assert str(error) == DENIED
    assert handler.resolve(pending.pending_id, "late") is False


async def test_a_synchronous_notifier_can_deny(handler: HumanInputHandler) -> None:
    handler.set_notifier(lambda event: False)
    pending = await handler.create(TOOL, ARGS)
    with pytest.raises(HumanInputRejectedError) as rejected:
        await handler.wait(pending.pending_id, timeout=1)
    assert str(rejected.value) == DENIED


async def test_a_notifier_returning_none_or_true_denies_nothing(
    handler: HumanInputHandler,
) -> None:
    for verdict in (None, True):

        def notifier(event: PendingInputEvent, verdict: bool | None = verdict) -> bool | None:
            return verdict

        handler.set_notifier(notifier)
        pending = await handler.create(TOOL, ARGS)
        await settle_loop()
        assert pending.pending_id in handler.pending
        assert handler.resolve(pending.pending_id, "ok") is True


async def test_the_wait_listens_while_a_slow_notifier_runs(handler: HumanInputHandler) -> None:
    """The notification runs alongside the wait: an answer given meanwhile is delivered."""
    release = asyncio.Event()
    finished: list[bool] = []

    async def slow_notifier(event: PendingInputEvent) -> bool:
        await release.wait()
        finished.append(True)
        return True

    handler.set_notifier(slow_notifier)
    pending = await handler.create(TOOL, ARGS)  # returns while the notifier still runs
    waiter = await blocked_waiter(handler, pending.pending_id)
    assert finished == []
    assert handler.resolve(pending.pending_id, "blue") is True
    assert await outcome_of(waiter) == "blue"
    assert finished == []
    release.set()
    await handler.drain()
    assert finished == [True]


async def test_a_late_denial_does_not_override_an_answer(handler: HumanInputHandler) -> None:
    release = asyncio.Event()

    async def notifier(event: PendingInputEvent) -> bool:
        await release.wait()
        return False

    handler.set_notifier(notifier)
    pending = await handler.create(TOOL, ARGS)
    waiter = await blocked_waiter(handler, pending.pending_id)
    assert handler.resolve(pending.pending_id, "blue") is True
    release.set()
    assert await outcome_of(waiter) == "blue"
    await handler.drain()
    assert pending.status is PendingInputStatus.RESOLVED


async def test_a_raising_notifier_denies_nothing() -> None:
    handler = HumanInputHandler(notifier_budget=0.05)

    async def broken(event: PendingInputEvent) -> bool:
        raise ConnectionError("websocket gone")

    handler.set_notifier(broken)
    pending = await handler.create(TOOL, ARGS)
    waiter = await blocked_waiter(handler, pending.pending_id)
    await handler.drain()
    assert pending.pending_id in handler.pending
    assert handler.resolve(pending.pending_id, "blue") is True
    assert await outcome_of(waiter) == "blue"


async def test_a_notifier_past_its_budget_denies_nothing() -> None:
    """A hook that overruns its budget is cut off; its late `False` is never heard."""
    handler = HumanInputHandler(notifier_budget=0.05)
    outcomes: list[str] = []
    cut = asyncio.Event()

    async def hanging(event: PendingInputEvent) -> bool:
        try:
            await asyncio.Event().wait()  # past any budget: only its cut ends it
        except asyncio.CancelledError:
            outcomes.append("cut")
            cut.set()
            raise
        outcomes.append("returned")
        return False

    handler.set_notifier(hanging)
    pending = await handler.create(TOOL, ARGS)
    waiter = await blocked_waiter(handler, pending.pending_id)
    await within(cut.wait())
    assert outcomes == ["cut"]
    assert pending.pending_id in handler.pending
    assert handler.resolve(pending.pending_id, "blue") is True
    assert await outcome_of(waiter) == "blue"


async def test_notifiers_are_routed_by_channel_with_a_default(
    handler: HumanInputHandler,
) -> None:
    heard: list[tuple[str, str]] = []

    def listener(name: str) -> Callable[[PendingInputEvent], None]:
        return lambda event: heard.append((name, event.channel_id))

    handler.set_notifier(listener("default"))
    handler.set_notifier(listener("A"), channel_id="a")
    handler.set_notifier(listener("B"), channel_id="b")
    for channel in ("a", "b", "c", ""):
        await handler.create(TOOL, ARGS, channel_id=channel)
    await settle_loop()
    assert sorted(heard) == [("A", "a"), ("B", "b"), ("default", ""), ("default", "c")]


async def test_a_second_notifier_for_a_channel_replaces_the_first(
    handler: HumanInputHandler,
) -> None:
    heard: list[str] = []
    handler.set_notifier(lambda event: heard.append("old"), channel_id="a")
    handler.set_notifier(lambda event: heard.append("new"), channel_id="a")
    await handler.create(TOOL, ARGS, channel_id="a")
    await settle_loop()
    assert heard == ["new"]


# -- close ---------------------------------------------------------------------------------------


async def test_closing_one_channel_spares_the_others(handler: HumanInputHandler) -> None:
    a1 = await handler.create(TOOL, ARGS, channel_id="a")
    a2 = await handler.create_detached(TOOL, ARGS, channel_id="a")
    b = await handler.create(TOOL, ARGS, channel_id="b")
    wait_a1 = await blocked_waiter(handler, a1.pending_id)
    wait_a2 = await blocked_waiter(handler, a2.pending_id)
    wait_b = await blocked_waiter(handler, b.pending_id)

    await handler.close(channel_id="a")

    for waiter in (wait_a1, wait_a2):
        error = await outcome_of(waiter)
        assert type(error) is RuntimeError
    assert set(handler.pending) == {b.pending_id}
    assert handler.resolve(a1.pending_id, "late") is False
    with pytest.raises(RuntimeError):
        await handler.create(TOOL, ARGS, channel_id="a")
    with pytest.raises(RuntimeError):
        await handler.create_detached(TOOL, ARGS, channel_id="a")

    assert not wait_b.done()
    assert handler.resolve(b.pending_id, "blue") is True
    assert await outcome_of(wait_b) == "blue"
    other = await handler.create(TOOL, ARGS, channel_id="b")
    assert handler.resolve(other.pending_id, "ok") is True


async def test_set_notifier_reopens_a_closed_channel(handler: HumanInputHandler) -> None:
    handler.set_notifier(lambda event: None, channel_id="a")
    await handler.close(channel_id="a")
    with pytest.raises(RuntimeError):
        await handler.create(TOOL, ARGS, channel_id="a")
    heard: list[str] = []
    handler.set_notifier(lambda event: heard.append(event.pending_id), channel_id="a")
    pending = await handler.create(TOOL, ARGS, channel_id="a")
    await settle_loop()
    assert heard == [pending.pending_id]
    assert handler.resolve(pending.pending_id, "blue") is True


async def test_close_with_a_displaced_registration_does_nothing(
    handler: HumanInputHandler,
) -> None:
    old = handler.set_notifier(lambda event: None, channel_id="a")
    new = handler.set_notifier(lambda event: None, channel_id="a")
    assert old != new
    pending = await handler.create(TOOL, ARGS, channel_id="a")
    waiter = await blocked_waiter(handler, pending.pending_id)

    await handler.close(channel_id="a", registration=old)
    await settle_loop()
    assert not waiter.done()
    assert pending.pending_id in handler.pending
    other = await handler.create(TOOL, ARGS, channel_id="a")

    await handler.close(channel_id="a", registration=new)
    assert type(await outcome_of(waiter)) is RuntimeError
    assert other.status is PendingInputStatus.CANCELLED
    with pytest.raises(RuntimeError):
        await handler.create(TOOL, ARGS, channel_id="a")


async def test_global_close_withdraws_everything_and_refuses_creates() -> None:
    handler = HumanInputHandler()
    recorder = Recorder()
    handler.add_observer(recorder)
    requests = [
        await handler.create(TOOL, ARGS, channel_id="a"),
        await handler.create(TOOL, ARGS, channel_id="b"),
        await handler.create_detached(TOOL, ARGS),
    ]
    waiters = [await blocked_waiter(handler, p.pending_id) for p in requests]

    await handler.close()

    for waiter in waiters:
        error = await outcome_of(waiter)
        assert type(error) is RuntimeError
    assert handler.pending == {}
    for request in requests:
        # close() returns once the surfaces have been told.
        assert recorder.states(request.pending_id) == [
            RenderState.EXECUTING,
            RenderState.CANCELLED,
        ]
    for make in (handler.create, handler.create_detached):
        with pytest.raises(RuntimeError):
            await make(TOOL, ARGS, channel_id="a")
    with pytest.raises(RuntimeError):
        await handler.create(TOOL, ARGS, channel_id="new")


async def test_global_close_does_not_wait_for_a_hung_notifier() -> None:
    """A notifier may take its whole budget (30 s by default); close() must not."""
    handler = HumanInputHandler()
    started = asyncio.Event()

    async def hung(event: PendingInputEvent) -> None:
        started.set()
        await asyncio.Event().wait()

    handler.set_notifier(hung)
    pending = await handler.create(TOOL, ARGS)
    await asyncio.wait_for(started.wait(), 1)
    await asyncio.wait_for(handler.close(), 1)
    assert pending.status is PendingInputStatus.CANCELLED


async def test_closing_a_channel_cuts_its_hanging_notifier_and_no_other(
    handler: HumanInputHandler,
) -> None:
    """close(channel_id=...) cancels that channel's notifier calls still running, only its."""
    started: dict[str, asyncio.Event] = {c: asyncio.Event() for c in ("a", "b", "c")}
    cut: list[str] = []

    async def hanging(event: PendingInputEvent) -> None:
        started[event.channel_id].set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cut.append(event.channel_id)
            raise

    handler.set_notifier(hanging, channel_id="a")
    handler.set_notifier(hanging, channel_id="b")
    handler.set_notifier(hanging)  # the default: serves channel "c"
    requests = {c: await handler.create(TOOL, ARGS, channel_id=c) for c in ("a", "b", "c")}
    for event in started.values():
        await asyncio.wait_for(event.wait(), 1)

    await asyncio.wait_for(handler.close(channel_id="a"), 1)

    assert cut == ["a"]
    assert requests["a"].status is PendingInputStatus.CANCELLED
    await settle_loop()
    assert cut == ["a"]
    assert handler.resolve(requests["b"].pending_id, "blue") is True
    assert handler.resolve(requests["c"].pending_id, "blue") is True
    await asyncio.wait_for(handler.close(), 1)
    assert sorted(cut) == ["a", "b", "c"]


async def test_close_from_inside_an_observer_does_not_deadlock() -> None:
    handler = HumanInputHandler()
    closed = asyncio.Event()

    async def observer(update: RequestUpdate) -> None:
        if update.state is RenderState.REJECTED:
            await handler.close()
            closed.set()

    handler.add_observer(observer)
    pending = await handler.create(TOOL, ARGS)
    handler.reject(pending.pending_id, "no")
    await asyncio.wait_for(closed.wait(), 1)
    await asyncio.wait_for(handler.drain(), 1)


# -- cancellation --------------------------------------------------------------------------------


async def test_a_cancelled_wait_withdraws_the_request(handler: HumanInputHandler) -> None:
    recorder = Recorder()
    handler.add_observer(recorder)
    pending = await handler.create(TOOL, ARGS)
    waiter = await blocked_waiter(handler, pending.pending_id)
    waiter.cancel()
    assert isinstance(await outcome_of(waiter), asyncio.CancelledError)

    assert handler.resolve(pending.pending_id, "late") is False
    assert handler.pending == {}
    assert pending.status is PendingInputStatus.CANCELLED
    await handler.drain()
    assert recorder.states(pending.pending_id) == [RenderState.EXECUTING, RenderState.CANCELLED]


async def test_cancelling_one_of_two_waiters_leaves_the_request_to_the_other(
    handler: HumanInputHandler,
) -> None:
    pending = await handler.create(TOOL, ARGS)
    one = await blocked_waiter(handler, pending.pending_id)
    two = await blocked_waiter(handler, pending.pending_id)
    one.cancel()
    assert isinstance(await outcome_of(one), asyncio.CancelledError)
    await settle_loop()
    assert pending.pending_id in handler.pending
    assert not two.done()
    assert handler.resolve(pending.pending_id, "blue") is True
    assert await outcome_of(two) == "blue"


async def test_cancelling_both_waiters_withdraws(handler: HumanInputHandler) -> None:
    pending = await handler.create(TOOL, ARGS)
    one = await blocked_waiter(handler, pending.pending_id)
    two = await blocked_waiter(handler, pending.pending_id)
    one.cancel()
    await outcome_of(one)
    two.cancel()
    await outcome_of(two)
    assert handler.resolve(pending.pending_id, "late") is False
    assert pending.status is PendingInputStatus.CANCELLED


async def test_a_waiter_that_timed_out_on_its_own_wait_for_withdraws(
    handler: HumanInputHandler,
) -> None:
    """An outer asyncio timeout is a cancellation: the late answer is not taken."""
    pending = await handler.create(TOOL, ARGS)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(handler.wait(pending.pending_id, timeout=30), 0.05)
    assert handler.resolve(pending.pending_id, "late") is False


# -- actor, snapshot -----------------------------------------------------------------------------


async def test_actor_id_comes_from_the_tool_turn(handler: HumanInputHandler) -> None:
    with tool_turn_context(ToolCallContext(room_id="R1", actor_id="alice")):
        from_turn = await handler.create(TOOL, ARGS)
        explicit = await handler.create(TOOL, ARGS, actor_id="bob")
    outside = await handler.create(TOOL, ARGS)
    assert from_turn.actor_id == "alice"
    assert explicit.actor_id == "bob"
    assert outside.actor_id is None


async def test_the_notifier_event_carries_the_turn_actor(handler: HumanInputHandler) -> None:
    actors: list[str | None] = []
    handler.set_notifier(lambda event: actors.append(event.actor_id))
    with tool_turn_context(ToolCallContext(actor_id="alice")):
        await handler.create(TOOL, ARGS)
    await settle_loop()
    assert actors == ["alice"]


async def test_pending_is_a_snapshot_of_pending_requests(handler: HumanInputHandler) -> None:
    one = await handler.create(TOOL, ARGS)
    two = await handler.create_detached(TOOL, ARGS)
    three = await handler.create(TOOL, ARGS)
    handler.resolve(two.pending_id, "x")

    snapshot = handler.pending
    assert set(snapshot) == {one.pending_id, three.pending_id}
    assert snapshot[one.pending_id] is one
    snapshot.clear()
    assert set(handler.pending) == {one.pending_id, three.pending_id}

    handler.reject(one.pending_id, "no")
    assert set(snapshot) == set()
    assert set(handler.pending) == {three.pending_id}


# -- observers -----------------------------------------------------------------------------------


async def test_observers_hear_every_transition(handler: HumanInputHandler) -> None:
    recorder = Recorder()
    handler.add_observer(recorder)
    with tool_turn_context(ToolCallContext(actor_id="alice")):
        answered = await handler.create(TOOL, ARGS, room_id="R1", channel_id="c1")
    refused = await handler.create(TOOL, ARGS)
    expired = await handler.create(TOOL, ARGS)
    withdrawn = await handler.create(TOOL, ARGS)
    await handler.drain()

    executing = recorder.last(answered.pending_id)
    assert executing.state is RenderState.EXECUTING
    assert (executing.tool_name, executing.arguments) == (TOOL, ARGS)
    assert (executing.room_id, executing.channel_id, executing.actor_id) == ("R1", "c1", "alice")
    assert executing.result is None and executing.settled_by is None

    assert handler.resolve(answered.pending_id, "blue", by="U1") is True
    assert handler.reject(refused.pending_id, "not mine", by="U2") is True
    with pytest.raises(TimeoutError):
        await handler.wait(expired.pending_id, timeout=0.05)
    task = await blocked_waiter(handler, withdrawn.pending_id)
    task.cancel()
    await outcome_of(task)
    await handler.drain()

    complete = recorder.last(answered.pending_id)
    assert complete.state is RenderState.COMPLETE
    assert (complete.result, complete.settled_by, complete.actor_id) == ("blue", "U1", "alice")
    assert complete.settled_at is not None and complete.settled_at >= complete.created_at

    rejected = recorder.last(refused.pending_id)
    assert rejected.state is RenderState.REJECTED
    assert (rejected.reason, rejected.settled_by, rejected.result) == ("not mine", "U2", None)

    timed_out = recorder.last(expired.pending_id)
    assert timed_out.state is RenderState.EXPIRED
    assert timed_out.reason == "Human input timed out after 0.05s for tool 'AskUserQuestion'"

    cancelled = recorder.last(withdrawn.pending_id)
    assert cancelled.state is RenderState.CANCELLED

    for request in (answered, refused, expired, withdrawn):
        assert len(recorder.states(request.pending_id)) == 2  # executing, then one ending


async def test_a_denial_is_heard_as_rejected(handler: HumanInputHandler) -> None:
    recorder = Recorder()
    handler.add_observer(recorder)
    handler.set_notifier(lambda event: False)
    pending = await handler.create(TOOL, ARGS)
    await settle_loop()
    await handler.drain()
    update = recorder.last(pending.pending_id)
    assert (update.state, update.reason) == (RenderState.REJECTED, DENIED)


async def test_an_observer_sees_a_request_s_updates_in_order(handler: HumanInputHandler) -> None:
    """A surface posts on `executing` and edits on the ending: the edit must not overtake."""
    log: list[str] = []

    async def slow_surface(update: RequestUpdate) -> None:
        log.append(f"start {update.state}")
        if update.state is RenderState.EXECUTING:
            await asyncio.sleep(0.05)  # posting the message
        log.append(f"end {update.state}")

    handler.add_observer(slow_surface)
    pending = await handler.create(TOOL, ARGS)
    await settle_loop()
    assert handler.resolve(pending.pending_id, "blue") is True
    await handler.drain()
    assert log == ["start executing", "end executing", "start complete", "end complete"]


async def test_a_failing_observer_does_not_silence_the_others(
    handler: HumanInputHandler,
) -> None:
    recorder = Recorder()

    async def broken(update: RequestUpdate) -> None:
        raise RuntimeError("surface down")

    handler.add_observer(broken)
    handler.add_observer(recorder)
    pending = await handler.create(TOOL, ARGS)
    handler.resolve(pending.pending_id, "blue")
    await handler.drain()
    assert recorder.states(pending.pending_id) == [RenderState.EXECUTING, RenderState.COMPLETE]


async def test_a_removed_observer_hears_nothing_more(handler: HumanInputHandler) -> None:
    recorder = Recorder()
    remove = handler.add_observer(recorder)
    first = await handler.create(TOOL, ARGS)
    await handler.drain()
    remove()
    handler.resolve(first.pending_id, "blue")
    await handler.create(TOOL, ARGS)
    await handler.drain()
    assert [u.state for u in recorder.updates] == [RenderState.EXECUTING]


async def test_announce_preparing_is_an_in_progress_update(handler: HumanInputHandler) -> None:
    recorder = Recorder()
    handler.add_observer(recorder)
    handler.announce_preparing(
        TOOL, {"question": "Whi"}, room_id="R1", tool_call_id="tc1", channel_id="c1",
        actor_id="alice",
    )  # fmt: skip
    await handler.drain()
    assert len(recorder.updates) == 1
    update = recorder.updates[0]
    assert update.state is RenderState.IN_PROGRESS
    wire: str = update.state  # a StrEnum: equal to its wire value
    assert wire == "inProgress"
    assert (update.tool_name, update.arguments) == (TOOL, {"question": "Whi"})
    assert (update.room_id, update.tool_call_id, update.channel_id) == ("R1", "tc1", "c1")
    assert update.actor_id == "alice"
    assert handler.pending == {}


# -- answer validation ---------------------------------------------------------------------------


async def test_a_refused_answer_returns_false_and_leaves_the_request_pending(
    handler: HumanInputHandler,
) -> None:
    """resolve() takes any string and says True or False: a validator's refusal is a False,
    never an exception for the answer's content."""
    seen: list[tuple[dict[str, Any], str]] = []

    def validate(arguments: dict[str, Any], raw: str) -> str:
        seen.append((arguments, raw))
        if raw != "blue":
            raise AnswerInvalidError(f"not a colour: {raw}")
        return '{"answer": "blue"}'

    handler.set_answer_validator(TOOL, validate)
    pending = await handler.create(TOOL, ARGS)
    waiter = await blocked_waiter(handler, pending.pending_id)

    assert handler.resolve(pending.pending_id, "42") is False
    await settle_loop()
    assert not waiter.done()
    assert pending.pending_id in handler.pending
    assert pending.status is PendingInputStatus.PENDING

    assert handler.resolve(pending.pending_id, "blue") is True
    assert await outcome_of(waiter) == '{"answer": "blue"}'  # the normalised answer
    assert seen == [(ARGS, "42"), (ARGS, "blue")]


async def test_a_validator_raising_anything_is_a_refusal(handler: HumanInputHandler) -> None:
    def broken(arguments: dict[str, Any], raw: str) -> str:
        raise KeyError(raw)

    handler.set_answer_validator(TOOL, broken)
    pending = await handler.create(TOOL, ARGS)
    assert handler.resolve(pending.pending_id, "anything") is False
    assert pending.pending_id in handler.pending


async def test_a_plain_string_to_a_tool_without_validator_reaches_the_waiter_verbatim(
    handler: HumanInputHandler,
) -> None:
    """A tool the user declared by name (no answer model of ours) gets the answer verbatim."""

    def refuse(arguments: dict[str, Any], raw: str) -> str:
        raise AnswerInvalidError("never")

    handler.set_answer_validator("confirmAction", refuse)  # another tool's model
    pending = await handler.create("MyOwnTool", ARGS)
    waiter = await blocked_waiter(handler, pending.pending_id)
    answer = 'blue, I think {not: "json"} \n\t é'
    assert handler.resolve(pending.pending_id, answer) is True
    assert await outcome_of(waiter) == answer
    assert pending.result == answer


async def test_a_validator_applies_to_its_tool_only(handler: HumanInputHandler) -> None:
    def refuse(arguments: dict[str, Any], raw: str) -> str:
        raise AnswerInvalidError("never")

    handler.set_answer_validator("confirmAction", refuse)
    pending = await handler.create(TOOL, ARGS)
    assert handler.resolve(pending.pending_id, "anything") is True


async def test_a_rejection_is_not_validated(handler: HumanInputHandler) -> None:
    def refuse(arguments: dict[str, Any], raw: str) -> str:
        raise AnswerInvalidError("never")

    handler.set_answer_validator(TOOL, refuse)
    pending = await handler.create(TOOL, ARGS)
    assert handler.reject(pending.pending_id, "no") is True


# -- one settle per request: resolve racing the deadline -----------------------------------------


async def test_resolve_racing_the_deadline_is_all_or_nothing(
    handler: HumanInputHandler,
) -> None:
    """resolve() returning True means the waiter gets that answer; False, it times out.

    The resolve is scheduled on the loop's clock at the deadline itself and a little either
    side, so both orders (and same-iteration ties) are exercised.
    """
    loop = asyncio.get_running_loop()
    rng = random.Random(7)
    seen = {"answered": 0, "timed_out": 0}
    for i in range(200):
        timeout = 0.001
        before = loop.time()
        pending = await handler.create(TOOL, ARGS, timeout=timeout)
        after = loop.time()
        waiter = asyncio.create_task(handler.wait(pending.pending_id, timeout=timeout))
        offset = 0.0 if i % 4 == 0 else rng.uniform(-0.0003, 0.0003)
        base = before if i % 2 else after
        returned = resolve_at(handler, pending.pending_id, f"a{i}", base + timeout + offset)
        outcome = await outcome_of(waiter)
        if await returned:
            assert outcome == f"a{i}", f"resolve() said True but the waiter got {outcome!r}"
            seen["answered"] += 1
        else:
            assert type(outcome) is TimeoutError, f"resolve() said False, waiter got {outcome!r}"
            seen["timed_out"] += 1
    assert seen["answered"] > 0 and seen["timed_out"] > 0, seen


async def test_resolve_in_the_same_iteration_as_a_zero_timeout(
    handler: HumanInputHandler,
) -> None:
    loop = asyncio.get_running_loop()
    for i in range(100):
        pending = await handler.create(TOOL, ARGS)
        waiter = asyncio.create_task(handler.wait(pending.pending_id, timeout=0))
        returned = resolve_at(handler, pending.pending_id, "x", loop.time())
        outcome = await outcome_of(waiter)
        if await returned:
            assert outcome == "x", (i, outcome)
        else:
            assert type(outcome) is TimeoutError, (i, outcome)


# -- with the SQL store (SQLite) ------------------------------------------------------------------


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'hitl.db'}"


@pytest.fixture
async def stores(db_url: str) -> AsyncIterator[list[SqlStore]]:
    """Two stores on one database file: two workers of one deployment."""
    first = await open_store(db_url)
    second = await open_store(db_url, migrate=False)
    yield [first, second]
    await first.close()
    await second.close()


# SQLite has no NOTIFY: a holder hears proposals at its heartbeat, every HOLD / 4 seconds.
HOLD = 0.4


@pytest.fixture
async def workers(stores: list[SqlStore]) -> AsyncIterator[list[HumanInputHandler]]:
    handlers = [HumanInputHandler(store=store, hold_seconds=HOLD) for store in stores]
    yield handlers
    for made in handlers:
        await asyncio.wait_for(made.drain(), 5)


async def test_store_create_writes_the_row(
    workers: list[HumanInputHandler], stores: list[SqlStore]
) -> None:
    handler = workers[0]
    pending = await handler.create(
        TOOL, ARGS, room_id="R1", tool_call_id="tc1", channel_id="c1", actor_id="alice",
        timeout=60,
    )  # fmt: skip
    record = await stores[1].get_request(pending.pending_id)
    assert record is not None
    assert record.status is RequestStatus.PENDING
    assert (record.tool_name, record.arguments, record.room_id) == (TOOL, ARGS, "R1")
    assert (record.tool_call_id, record.channel_id, record.actor_id) == ("tc1", "c1", "alice")
    assert record.detached is False
    assert record.expires_at is not None
    assert 59 <= (record.expires_at - record.created_at).total_seconds() <= 61
    assert [r.id for r in await stores[1].list_pending()] == [pending.pending_id]


async def test_store_close_during_create_leaves_no_pending_row(
    workers: list[HumanInputHandler], stores: list[SqlStore]
) -> None:
    handler = workers[0]
    creating = asyncio.create_task(handler.create(TOOL, ARGS, tool_call_id="tc-closed"))
    await asyncio.sleep(0)  # the row is being written
    await handler.close()
    with pytest.raises(RuntimeError, match="Human input handler is closed"):
        await creating
    record = await stores[1].request_for_tool_call("tc-closed")
    assert record is not None and record.status is RequestStatus.CANCELLED
    assert await stores[1].list_pending() == []


async def test_store_sync_resolve_is_persisted(
    workers: list[HumanInputHandler], stores: list[SqlStore]
) -> None:
    handler = workers[0]
    pending = await handler.create(TOOL, ARGS)
    waiter = await blocked_waiter(handler, pending.pending_id)
    assert handler.resolve(pending.pending_id, "blue", by="U1") is True
    assert handler.resolve(pending.pending_id, "red") is False  # claimed while being written
    assert await outcome_of(waiter) == "blue"
    record = await stored_record(stores[1], pending.pending_id)
    assert (record.status, record.result, record.settled_by) == (
        RequestStatus.RESOLVED,
        "blue",
        "U1",
    )


async def test_store_answer_is_a_compare_and_set(
    workers: list[HumanInputHandler], stores: list[SqlStore]
) -> None:
    handler = workers[0]
    pending = await handler.create(TOOL, ARGS)
    waiter = await blocked_waiter(handler, pending.pending_id)
    first, second = await asyncio.gather(
        handler.answer(pending.pending_id, "first", by="U1"),
        handler.answer(pending.pending_id, "second", by="U2"),
    )
    assert (first, second) == (True, False)
    assert await outcome_of(waiter) == "first"
    record = await stored_record(stores[0], pending.pending_id)
    assert (record.status, record.result, record.settled_by) == (
        RequestStatus.RESOLVED,
        "first",
        "U1",
    )
    assert await handler.decline(pending.pending_id, "late") is False


async def test_store_answer_validates_wherever_the_request_is_held(
    workers: list[HumanInputHandler], stores: list[SqlStore]
) -> None:
    """answer() checks the answer before the compare-and-set, held here or by another worker."""

    def validate(arguments: dict[str, Any], raw: str) -> str:
        if raw != "blue":
            raise AnswerInvalidError(raw)
        return raw.upper()

    holder, other = workers
    for made in workers:
        made.set_answer_validator(TOOL, validate)
    pending = await holder.create(TOOL, ARGS)
    for answering in (holder, other):
        with pytest.raises(AnswerInvalidError):
            await answering.answer(pending.pending_id, "42")
    assert (await stored_record(stores[0], pending.pending_id)).status is RequestStatus.PENDING
    assert pending.pending_id in holder.pending
    assert await other.answer(pending.pending_id, "blue") is True
    assert (await stored_record(stores[0], pending.pending_id)).result == "BLUE"


async def test_store_two_workers_racing_answer_one_wins(workers: list[HumanInputHandler]) -> None:
    holder, other = workers
    for _ in range(5):
        pending = await holder.create(TOOL, ARGS)
        waiter = await blocked_waiter(holder, pending.pending_id)
        won = await asyncio.gather(
            holder.answer(pending.pending_id, "from-holder", by="U1"),
            other.answer(pending.pending_id, "from-other", by="U2"),
        )
        assert sorted(won) == [False, True], won
        winner = "from-holder" if won[0] else "from-other"
        assert await outcome_of(waiter) == winner
        assert pending.result == winner


async def test_store_other_worker_s_answer_reaches_the_waiter(
    workers: list[HumanInputHandler], stores: list[SqlStore]
) -> None:
    """The other worker hands its answer to the holder (heard at its next heartbeat without
    NOTIFY), which settles it: answer() returns True once it is the waiter's answer."""
    holder, other = workers
    pending = await holder.create(TOOL, ARGS)
    waiter = await blocked_waiter(holder, pending.pending_id, timeout=5)
    assert await other.answer(pending.pending_id, "from-other", by="U2") is True
    assert await outcome_of(waiter) == "from-other"
    record = await stored_record(stores[0], pending.pending_id)
    assert (record.status, record.result) == (RequestStatus.RESOLVED, "from-other")


async def test_store_wait_loads_a_request_created_by_another_worker(
    workers: list[HumanInputHandler],
) -> None:
    creator, waiter_side = workers
    pending = await creator.create(TOOL, ARGS)
    waiter = asyncio.create_task(waiter_side.wait(pending.pending_id, timeout=0.2))
    await asyncio.sleep(0.02)  # loaded from the row and blocked
    assert not waiter.done()
    assert await creator.answer(pending.pending_id, "blue") is True
    assert await outcome_of(waiter) == "blue"
    # A settled stored request is replayed by any worker.
    assert await waiter_side.wait(pending.pending_id) == "blue"
    fresh = HumanInputHandler(store=waiter_side.store)
    assert await fresh.wait(pending.pending_id) == "blue"
    with pytest.raises(ValueError):
        await fresh.wait("no-such-id")


async def test_store_replays_a_stored_rejection_and_timeout(
    workers: list[HumanInputHandler],
) -> None:
    creator, reader = workers
    refused = await creator.create(TOOL, ARGS)
    assert await creator.decline(refused.pending_id, "no") is True
    expired = await creator.create(TOOL, ARGS, timeout=0.05)
    with pytest.raises(TimeoutError):
        await creator.wait(expired.pending_id)
    await creator.drain()
    with pytest.raises(HumanInputRejectedError, match=r"^no$"):
        await reader.wait(refused.pending_id)
    with pytest.raises(TimeoutError) as timed_out:
        await reader.wait(expired.pending_id)
    assert str(timed_out.value) == "Human input timed out after 0.05s for tool 'AskUserQuestion'"


async def test_store_answer_from_another_worker_is_settled_and_told_by_the_holder(
    workers: list[HumanInputHandler], stores: list[SqlStore]
) -> None:
    creator, other = workers
    heard_by_creator, heard_by_other = Recorder(), Recorder()
    creator.add_observer(heard_by_creator)
    other.add_observer(heard_by_other)
    pending = await creator.create(TOOL, ARGS)
    assert await other.answer(pending.pending_id, "blue", by="U9") is True
    assert await other.answer(pending.pending_id, "again") is False
    await creator.drain()
    await other.drain()
    # Told once, by the worker that wrote it.
    assert heard_by_creator.states(pending.pending_id) == [
        RenderState.EXECUTING,
        RenderState.COMPLETE,
    ]
    assert heard_by_other.states(pending.pending_id) == []
    assert heard_by_creator.last(pending.pending_id).settled_by == "U9"
    assert await other.wait(pending.pending_id) == "blue"
    assert await creator.wait(pending.pending_id) == "blue"


async def test_store_answer_settles_a_request_held_by_no_one(
    workers: list[HumanInputHandler], stores: list[SqlStore]
) -> None:
    """A request written by a process that is gone (no holder): any worker settles it."""
    other = workers[1]
    recorder = Recorder()
    other.add_observer(recorder)
    record = RequestRecord(id="req-orphan", tool_name=TOOL, arguments=ARGS, room_id="R1")
    await stores[0].create_request(record)
    assert await other.answer("req-orphan", "blue", by="U9") is True
    assert await other.answer("req-orphan", "again") is False
    await other.drain()
    assert recorder.states("req-orphan") == [RenderState.COMPLETE]
    assert recorder.last("req-orphan").settled_by == "U9"
    assert await other.wait("req-orphan") == "blue"


async def test_store_answer_racing_a_load_in_the_same_worker(
    stores: list[SqlStore],
) -> None:
    """answer() for a request not in memory while wait() loads it: the waiter is not left
    to find out at its deadline."""
    creator = HumanInputHandler(store=stores[0], hold_seconds=HOLD)
    worker = HumanInputHandler(store=stores[1], hold_seconds=HOLD)
    loop = asyncio.get_running_loop()
    for order in ("answer-first", "wait-first"):
        pending = await creator.create(TOOL, ARGS)
        tasks: list[asyncio.Task[Any]] = []
        if order == "answer-first":
            tasks.append(asyncio.create_task(worker.answer(pending.pending_id, "blue")))
            tasks.append(asyncio.create_task(worker.wait(pending.pending_id, timeout=5)))
        else:
            tasks.append(asyncio.create_task(worker.wait(pending.pending_id, timeout=5)))
            tasks.append(asyncio.create_task(worker.answer(pending.pending_id, "blue")))
        start = loop.time()
        done = await asyncio.wait_for(asyncio.gather(*tasks), 2)
        assert sorted(map(str, done)) == ["True", "blue"], order
        assert loop.time() - start < 1.0, order
    await creator.drain()
    await worker.drain()


async def test_store_expire_record_settles_a_request_not_in_memory(
    workers: list[HumanInputHandler], stores: list[SqlStore]
) -> None:
    """A request of a process that is gone (no live holder) is timed out by the sweep."""
    creator, sweeper = workers
    recorder = Recorder()
    sweeper.add_observer(recorder)
    now = datetime.now(UTC)
    pending = RequestRecord(
        id="req-left", tool_name=TOOL, arguments=ARGS, created_at=now,
        expires_at=now + timedelta(seconds=30),
    )  # fmt: skip
    await stores[0].create_request(pending)
    record = await stored_record(stores[1], pending.pending_id)

    await sweeper.expire_record(record)
    await sweeper.drain()

    stored = await stored_record(stores[1], pending.pending_id)
    assert stored.status is RequestStatus.TIMED_OUT
    assert stored.reason == "Human input timed out after 30s for tool 'AskUserQuestion'"
    assert recorder.states(pending.pending_id) == [RenderState.EXPIRED]
    assert recorder.last(pending.pending_id).reason == stored.reason
    # Expiring it again changes nothing and tells no one.
    await sweeper.expire_record(record)
    await sweeper.drain()
    assert recorder.states(pending.pending_id) == [RenderState.EXPIRED]
    assert await creator.answer(pending.pending_id, "late") is False


async def test_store_expire_record_leaves_a_live_holder_s_request_to_its_timer(
    workers: list[HumanInputHandler], stores: list[SqlStore]
) -> None:
    """The holder decides every settle: another worker's sweep does not time out its request
    (the holder's own timer does, at the same deadline)."""
    holder, sweeper = workers
    pending = await holder.create(TOOL, ARGS, timeout=30)
    waiter = await blocked_waiter(holder, pending.pending_id, timeout=30)
    await sweeper.expire_record(await stored_record(stores[1], pending.pending_id))
    await sweeper.drain()
    assert (await stored_record(stores[1], pending.pending_id)).status is RequestStatus.PENDING
    assert holder.resolve(pending.pending_id, "blue") is True
    assert await outcome_of(waiter) == "blue"


async def test_store_expire_record_of_a_request_in_memory_wakes_its_waiter(
    workers: list[HumanInputHandler], stores: list[SqlStore]
) -> None:
    holder = workers[0]
    pending = await holder.create(TOOL, ARGS, timeout=30)
    waiter = await blocked_waiter(holder, pending.pending_id, timeout=30)
    record = await stored_record(stores[0], pending.pending_id)
    await holder.expire_record(record)
    error = await outcome_of(waiter)
    assert type(error) is TimeoutError
    assert str(error) == "Human input timed out after 30s for tool 'AskUserQuestion'"


async def test_store_timeout_and_close_are_persisted(
    workers: list[HumanInputHandler], stores: list[SqlStore]
) -> None:
    handler = workers[0]
    expired = await handler.create(TOOL, ARGS)
    with pytest.raises(TimeoutError):
        await handler.wait(expired.pending_id, timeout=0.05)
    open_one = await handler.create(TOOL, ARGS)
    await handler.close()  # returns once every settle is recorded
    assert (await stored_record(stores[1], expired.pending_id)).status is RequestStatus.TIMED_OUT
    assert (await stored_record(stores[1], open_one.pending_id)).status is RequestStatus.CANCELLED


async def test_store_resolve_racing_the_deadline_is_all_or_nothing(
    workers: list[HumanInputHandler], stores: list[SqlStore]
) -> None:
    handler = workers[0]
    loop = asyncio.get_running_loop()
    for i in range(20):
        pending = await handler.create(TOOL, ARGS)
        waiter = asyncio.create_task(handler.wait(pending.pending_id, timeout=0.002))
        when = loop.time() + 0.002 + (i % 5 - 2) * 0.0005
        returned = resolve_at(handler, pending.pending_id, "x", when)
        outcome = await outcome_of(waiter)
        said = await returned
        await handler.drain()
        record = await stored_record(stores[0], pending.pending_id)
        if said:
            assert outcome == "x", (i, outcome)
            assert record.status is RequestStatus.RESOLVED
        else:
            assert type(outcome) is TimeoutError, (i, outcome)
            assert record.status is RequestStatus.TIMED_OUT


async def test_store_attached_after_create_does_not_strand_the_waiter(
    stores: list[SqlStore],
) -> None:
    """A request whose row is missing (created before the store was attached) still settles."""
    handler = HumanInputHandler()
    pending = await handler.create(TOOL, ARGS)
    handler.attach_store(stores[0])
    waiter = await blocked_waiter(handler, pending.pending_id, timeout=0.1)
    assert handler.resolve(pending.pending_id, "blue") is True
    assert await outcome_of(waiter) == "blue"
    await handler.drain()


def test_request_ids_are_24_hex_digits_drawn_afresh_after_a_fork() -> None:
    """Ids come from the OS's CSPRNG 128 at a time (bot/human_input/creator.py), as
    secrets.token_hex(12) made them; a forked child does not reuse its parent's."""
    ids = RequestIds()
    drawn = [ids.next() for _ in range(300)]
    assert len(set(drawn)) == 300
    assert all(len(i) == 24 and int(i, 16) >= 0 and i == i.lower() for i in drawn)
    ids.forget()
    assert ids.next() not in drawn
