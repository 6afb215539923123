"""Where a surface posted a request, read back from the store by any worker."""

from __future__ import annotations

import asyncio

from bot.records import RequestRecord, RequestStore

PATIENCE_SECONDS = 2.0


async def posted_record(
    store: RequestStore, request_id: str, surface: str, *, patience: float = PATIENCE_SECONDS
) -> RequestRecord | None:
    """The request once `surface`'s message reference is on it (None if it never comes).

    A click can reach this worker a moment after another worker posted the message and
    before it stored where: waiting a little for the reference keeps the edit from being lost.
    """
    loop = asyncio.get_running_loop()
    give_up = loop.time() + patience
    delay = 0.05
    while True:
        record = await store.get_request(request_id)
        if record is None or surface in record.message_refs or loop.time() >= give_up:
            return record
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.5)
