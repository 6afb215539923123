"""Reading a request back from the store while another worker (or task) is still writing it.

A click can reach this worker a moment after another one posted the message and before it
stored where; a second click can read the row while the first one's settle is being written.
Waiting a little for the row to catch up keeps an edit from being lost and a reply honest.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from bot.human_input import RequestRows
from bot.records import RequestRecord, RequestStatus

PATIENCE_SECONDS = 2.0


async def posted_record(
    store: RequestRows, request_id: str, surface: str, *, patience: float = PATIENCE_SECONDS
) -> RequestRecord | None:
    """The request once `surface`'s message reference is on it (None if there is no request)."""
    return await _record_when(
        store, request_id, lambda record: surface in record.message_refs, patience
    )


async def settled_record(
    store: RequestRows, request_id: str, *, patience: float = PATIENCE_SECONDS
) -> RequestRecord | None:
    """The request once the settle that decided it is written (a double click's first click
    holds the request while its row is being written)."""
    return await _record_when(
        store, request_id, lambda record: record.status is not RequestStatus.PENDING, patience
    )


async def _record_when(
    store: RequestRows,
    request_id: str,
    ready: Callable[[RequestRecord], bool],
    patience: float,
) -> RequestRecord | None:
    """The request as soon as `ready(record)`, or as it is when patience runs out."""
    loop = asyncio.get_running_loop()
    give_up = loop.time() + patience
    delay = 0.02
    while True:
        record = await store.get_request(request_id)
        if record is None or ready(record) or loop.time() >= give_up:
            return record
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.5)
