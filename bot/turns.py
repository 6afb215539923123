"""Agent turns started by people's messages: run in the background, tracked, failures told."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from bot.agent import AIChannel

log = logging.getLogger(__name__)

Post = Callable[[str], Awaitable[None]]
"""Post the agent's words in the room the turn runs in."""

SORRY = "Sorry, I could not finish that: something went wrong on my side."


class Turns:
    """The turns a surface started; each one's words go to the room it came from."""

    def __init__(self, channel: AIChannel) -> None:
        self.channel = channel
        self._running: set[asyncio.Task[None]] = set()

    def start(self, room_id: str, actor_id: str, text: str, post: Post) -> None:
        """Run a turn after the platform was answered (its ack must not wait for the model)."""
        task = asyncio.create_task(self._run(room_id, actor_id, text or "Hello", post))
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def _run(self, room_id: str, actor_id: str, text: str, post: Post) -> None:
        try:
            await self.channel.respond(room_id, text, actor_id=actor_id, on_text=post)
        except Exception:
            log.exception("turn in %s failed", room_id)
            await post(SORRY)

    async def close(self) -> None:
        """Cut the turns still running. A suspended bridge (a shutdown) leaves their requests
        pending and their transcripts as they were, for the run to be resumed."""
        for task in list(self._running):
            task.cancel()
        await asyncio.gather(*self._running, return_exceptions=True)
