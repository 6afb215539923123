"""Deadlines share one loop timer per timeout (bot/human_input/ledger.py), which is what a
pending request's timer costs (bench/human_input_bench.py, (c)): they fire in deadline order
whatever the mix of timeouts, and let go of settled requests. The loop's clock is moved rather
than waited for.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from bot.human_input import HumanInputHandler, PendingInputStatus
from bot.human_input.ledger import SLACK
from tests.bot.conftest import settle_loop

TOOL = "AskUserQuestion"
ARGS: dict[str, Any] = {"question": "Which colour?"}


@pytest.fixture
async def clock(monkeypatch: pytest.MonkeyPatch) -> Callable[[float], None]:
    """Move the running loop's clock by `seconds` (timers fire as if that much time passed)."""
    loop = asyncio.get_running_loop()
    real_time = loop.time
    skew = [0.0]
    monkeypatch.setattr(loop, "time", lambda: real_time() + skew[0])

    def move(seconds: float) -> None:
        skew[0] += seconds

    return move


# -- one loop timer per timeout, in deadline order -----------------------------------------------


async def test_mixed_timeouts_expire_in_deadline_order(
    handler: HumanInputHandler, clock: Callable[[float], None]
) -> None:
    made = {}
    for name, timeout in (("a30", 30), ("b10", 10), ("c20", 20), ("d10", 10), ("e5", 5)):
        made[name] = await handler.create(TOOL, ARGS, timeout=timeout)
        clock(1)  # created a second apart: a30 falls due at 30, b10 at 11, ... e5 at 9
    due = {"e5": 9, "b10": 11, "d10": 13, "c20": 22, "a30": 30}
    elapsed = 5.0
    for now in (8.5, 9.5, 10.5, 11.5, 12.5, 13.5, 21.5, 22.5, 29.5, 30.5):
        clock(now - elapsed)
        elapsed = now
        await settle_loop()
        expired = {n for n, p in made.items() if p.status is PendingInputStatus.TIMED_OUT}
        assert expired == {n for n, at in due.items() if at < now}, now


async def test_a_shorter_wait_moves_a_deadline_in_and_only_once(
    handler: HumanInputHandler, clock: Callable[[float], None]
) -> None:
    pending = await handler.create(TOOL, ARGS, timeout=60)
    waiter = asyncio.create_task(handler.wait(pending.pending_id, timeout=5))
    await settle_loop()
    clock(5.5)
    with pytest.raises(TimeoutError, match="after 5s"):
        await asyncio.wait_for(waiter, 2.0)
    clock(60)  # its first deadline, now spent, fires nothing
    await settle_loop()
    assert pending.status is PendingInputStatus.TIMED_OUT
    assert pending.reason == "Human input timed out after 5s for tool 'AskUserQuestion'"


async def test_a_clock_set_back_keeps_deadlines_in_order(
    handler: HumanInputHandler, clock: Callable[[float], None]
) -> None:
    late = await handler.create(TOOL, ARGS, timeout=10)
    clock(-5)  # a later request with the same timeout now falls due before the first
    early = await handler.create(TOOL, ARGS, timeout=10)
    clock(10.5)
    await settle_loop()
    assert (early.status, late.status) == (PendingInputStatus.TIMED_OUT, PendingInputStatus.PENDING)
    clock(5)
    await settle_loop()
    assert late.status is PendingInputStatus.TIMED_OUT


async def test_requests_share_one_loop_timer_per_timeout(handler: HumanInputHandler) -> None:
    loop = asyncio.get_running_loop()

    def live_timers() -> int:
        return sum(not timer.cancelled() for timer in loop._scheduled)  # type: ignore[attr-defined]

    before = live_timers()
    requests = [await handler.create(TOOL, ARGS, timeout=t) for t in [30, 60] * 100]
    assert live_timers() - before == 2
    for request in requests:
        handler.resolve(request.pending_id, "blue")
    # Settling cancels and arms nothing: each timer fires once, finds nothing, and is dropped.
    assert live_timers() - before == 2


async def test_settled_requests_do_not_stay_in_the_deadline_queues(
    handler: HumanInputHandler,
) -> None:
    def held() -> int:
        queues = handler._deadlines._queues.values()
        return sum(len(queue.entries) - queue.head for queue in queues)

    requests = [await handler.create(TOOL, ARGS, timeout=30) for _ in range(1000)]
    for request in requests[:-10]:
        handler.resolve(request.pending_id, "blue")
    assert held() <= 2 * 10 + SLACK  # the ten still open, and a bounded number of settled ones
    for request in requests[-10:]:
        handler.reject(request.pending_id)
    assert held() == 0
