"""Agent turns started by people's messages: run in the background, tracked, failures told."""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable

from bot.agent import AIChannel
from bot.failures import RepeatedFailures
from bot.records import StoreUnavailableError

log = logging.getLogger(__name__)

Post = Callable[[str], Awaitable[None]]
"""Post the agent's words in the room the turn runs in."""

SORRY = "Sorry, I could not finish that: something went wrong on my side."
UNAVAILABLE = (
    "hitl-bridge cannot record requests right now, so it cannot take this on; try again shortly."
)
# Messages already told UNAVAILABLE (a message delivered twice, say a mention's app_mention and
# message events, is told once): the latest this many.
_REFUSED_KEPT = 1024


class Turns:
    """The turns a surface started; each one's words go to the room it came from."""

    def __init__(self, channel: AIChannel) -> None:
        self.channel = channel
        self._running: set[asyncio.Task[None]] = set()
        self._failures = RepeatedFailures(log)
        self._refused: OrderedDict[str, None] = OrderedDict()

    def start(self, room_id: str, actor_id: str, text: str, post: Post) -> None:
        """Run a turn after the platform was answered (its ack must not wait for the model)."""
        task = asyncio.create_task(self._run(room_id, actor_id, text or "Hello", post))
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def cannot_record(self, key: str, err: StoreUnavailableError, post: Post) -> None:
        """A message (`key`, its one-time claim) came while the store cannot be written: tell
        the room the work is refused, once per message, instead of acking and dropping it."""
        self._failures.failed("taking a new message", err)
        if key in self._refused:
            return
        self._refused[key] = None
        while len(self._refused) > _REFUSED_KEPT:
            self._refused.popitem(last=False)
        await post(UNAVAILABLE)

    async def _run(self, room_id: str, actor_id: str, text: str, post: Post) -> None:
        try:
            await self.channel.respond(room_id, text, actor_id=actor_id, on_text=post)
        except StoreUnavailableError as err:
            self._failures.failed("running a turn", err)
            await post(UNAVAILABLE)
        except Exception:
            log.exception("turn in %s failed", room_id)
            await post(SORRY)

    async def close(self) -> None:
        """Cut the turns still running. A suspended bridge (a shutdown) leaves their requests
        pending and their transcripts as they were, for the run to be resumed."""
        for task in list(self._running):
            task.cancel()
        await asyncio.gather(*self._running, return_exceptions=True)
