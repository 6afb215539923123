"""Several questions to people at once, as one: each framework pause may hold several calls,
and a person should see them all together rather than one after the other."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable
from typing import TypeVar

T = TypeVar("T")


async def together(asked: Iterable[Awaitable[T]]) -> list[T]:
    """Every answer, in order. The first failure is raised as it is (not as a group), once
    the others are cancelled: a client helper cancelled withdraws its request, so nobody is
    left answering a question whose answer would be thrown away."""
    tasks = [asyncio.ensure_future(a) for a in asked]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
