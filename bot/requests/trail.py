"""Which message each update of a request goes to, on any surface that posts and edits messages.

A "Preparing…" message becomes the request's; every later update (the votes so far on it, a
step of its escalation, its ending) edits the request's message, wherever it was posted (here,
by another worker, or before a restart: the store keeps where); a step just fired is also said
in one message of its own; a request that could not be posted at all is undeliverable.
The surface only posts, edits and keeps where; the trail decides which, one request's updates
in the order they happened.

One request may be shown in several rooms (its own, and copies a policy's `deliver` adds, two
of them possibly on one surface): each room's message is its own, keyed by room.

Updates are in order within a worker; across workers they may cross. A vote drawn on one
worker (or a step fired there) can reach the platform after another worker's edit to the
request's ending, which would leave the ended request showing its controls. So once such an
edit is done the trail reads the request from the store (`current`): if it has ended meanwhile,
its ending is drawn again over the late edit. Any later change is written to the store before
its own edit is made, so it is drawn after this read, and after this edit.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Awaitable, Callable
from typing import Generic, Protocol, TypeVar

from bot.errors import UndeliverableError
from bot.human_input import RenderState, RequestUpdate
from bot.records import RequestRecord, RequestStatus
from bot.requests.ordering import InOrder
from bot.words.phrases import Phrase

log = logging.getLogger(__name__)

RoomT = TypeVar("RoomT", contravariant=True)
RefT = TypeVar("RefT")


class Messages(Protocol[RoomT, RefT]):
    """A surface's messages: `Ref` says where one was posted."""

    async def post(self, room: RoomT, update: RequestUpdate) -> RefT:
        """Post `update` drawn; UndeliverableError (saying why) if the platform refused."""
        ...

    async def edit(self, ref: RefT, update: RequestUpdate) -> bool:
        """Redraw the message at `ref` as `update`; False if the edit did not go through."""
        ...

    async def keep(self, update: RequestUpdate, ref: RefT) -> RefT:
        """Store where the request was posted in `update.room_id` (a copy's apart from the
        request's own: `update.copy`), for other workers and restarts; the ref kept."""
        ...

    async def stored(self, update: RequestUpdate) -> RefT | None:
        """Where the request was posted in `update.room_id`, as the store says (another
        worker, a restart)."""
        ...

    async def ping(self, room: RoomT, update: RequestUpdate, said: Phrase) -> None:
        """Post `said` in `room` as a message of its own, naming people so that they are
        notified (a step of the request's escalation: a reminder, approvers added)."""
        ...


Current = Callable[[str], Awaitable[RequestRecord | None]]
"""A request as the store has it now (`RequestRows.get_request`)."""

REDRAWS = 3  # endings drawn again at most, should it keep changing (its run's outcome)


class MessageTrail(Generic[RoomT, RefT]):
    def __init__(
        self, messages: Messages[RoomT, RefT], surface: str, current: Current | None = None
    ) -> None:
        """`current` reads a request from the store, for the ending another worker drew
        before a late edit here (see the module's docstring); without it, nothing is read."""
        self.messages = messages
        self.surface = surface
        self.current = current
        self._in_order = InOrder()
        # (room id, tool_call_id) -> its "Preparing…" message
        self._preparing: dict[tuple[str, str], RefT] = {}
        self._posted: dict[tuple[str, str], RefT] = {}  # (room id, request id) -> its message

    async def show(self, update: RequestUpdate, room: RoomT) -> None:
        """Show `update` in `room`, after the request's earlier updates."""
        await self._in_order.run(update, lambda: self._show(update, room))

    async def _show(self, update: RequestUpdate, room: RoomT) -> None:
        if update.state is RenderState.IN_PROGRESS:
            # Only an announcement: if it cannot be posted, the request itself will try again.
            with contextlib.suppress(UndeliverableError):
                preparing = await self.messages.post(room, update)
                self._preparing[update.room_id, update.tool_call_id] = preparing
            return
        if update.shown_again:
            await self._show_again(update, room)
            return
        if update.state is RenderState.EXECUTING:
            await self._post_request(update, room)
            return
        if not update.pending_id:  # announced, never asked (refused, or the turn was cut)
            announced = self._preparing.pop((update.room_id, update.tool_call_id), None)
            if announced is not None:
                await self.messages.edit(announced, update)
            return
        ref = self._posted.pop((update.room_id, update.pending_id), None)
        undeliverable = update.state is RenderState.UNDELIVERABLE
        if ref is None and not undeliverable:
            ref = await self.messages.stored(update)  # posted elsewhere, or before a restart
        if ref is None:
            # An undeliverable request never had a message; a copy that could not be posted
            # was logged and audited then.
            if not undeliverable and not update.copy:
                log.error("no %s message to edit for request %s", self.surface, update.pending_id)
            return
        await self.messages.edit(ref, update)

    async def _show_again(self, update: RequestUpdate, room: RoomT) -> None:
        """The votes so far on an open request, or a step of its escalation: its message
        edited, wherever it was posted (a vote may reach any worker, a step fire on any).
        Never a new request message: one that was not posted has nothing to show them on.
        A step just fired also says so in one message of its own (a reminder that pings)."""
        ref = self._posted.get((update.room_id, update.pending_id))
        ref = ref or await self.messages.stored(update)
        if ref is None:
            log.warning("no %s message to show request %s again on", self.surface,
                        update.pending_id)  # fmt: skip
            return
        await self.messages.edit(ref, update)
        if await self._ended_meanwhile(ref, update):
            return  # its ending is shown again; a reminder of it would be noise
        voted = update.tally.approvers + update.tally.decliners if update.tally else ()
        said = update.audience.ping(update.actor_id, voted) if update.audience else None
        if said is not None:
            await self.messages.ping(room, update, said)

    async def _ended_meanwhile(self, ref: RefT, update: RequestUpdate) -> bool:
        """Whether the request ended while `update` (open) was being drawn at `ref`; if it
        did, its ending is drawn again over it, as the store has it (and again if that moved
        on meanwhile: a gated call's run outcome), so the last edit is never the open one."""
        if self.current is None:
            return False
        drawn: tuple[object, ...] | None = None
        for _ in range(REDRAWS):
            latest = await self.current(update.pending_id)
            if latest is None or latest.status is RequestStatus.PENDING:
                return drawn is not None
            seen = (latest.status, latest.settled_by, latest.result, latest.reason,
                    latest.run_outcome)  # fmt: skip
            if seen == drawn:
                return True
            ending = dataclasses.replace(
                RequestUpdate.of(latest), room_id=update.room_id, copy=update.copy
            )
            log.info("request %s ended while its %s message was edited: drawn again",
                     update.pending_id, self.surface)  # fmt: skip
            await self.messages.edit(ref, ending)
            drawn = seen
        return True

    async def _post_request(self, update: RequestUpdate, room: RoomT) -> None:
        """Turn the "Preparing…" message into the request's, or post it; remember where."""
        key = (update.room_id, update.pending_id)
        preparing = (
            self._preparing.pop((update.room_id, update.tool_call_id), None)
            if update.tool_call_id
            else None
        )
        ref = preparing
        if ref is None or not await self.messages.edit(ref, update):
            try:
                ref = await self.messages.post(room, update)
            except UndeliverableError:
                if preparing is not None:  # where its ending is shown, if an edit gets through
                    self._posted[key] = preparing
                raise
        self._posted[key] = await self.messages.keep(update, ref)
