"""together(): every answer in order, or the first failure as it is, the others cancelled
(a client helper cancelled withdraws its request)."""

from __future__ import annotations

import asyncio

import pytest

from hitl_client.frameworks.together import together


async def test_the_answers_come_in_the_order_asked() -> None:
    later = asyncio.Event()

    async def first() -> str:
        await later.wait()  # answered after the second
        return "first"

    async def second() -> str:
        later.set()
        return "second"

    assert await together([first(), second()]) == ["first", "second"]


async def test_the_first_failure_is_raised_as_it_is_and_the_rest_cancelled() -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def waiting() -> str:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    async def failing() -> str:
        await started.wait()
        raise ValueError("declined")

    with pytest.raises(ValueError, match="declined"):
        await together([waiting(), failing()])
    assert cancelled.is_set()
