"""Agent turns started by people's messages: run in the background, tracked, failures told,
and stopped on request.

A surface that shows a run live hands `start` a `TurnWatch`: the turn's steps as they happen
(bot/agent/steps.py), then how it ended. Anyone the turn concerns may stop it (`stop`): the
person whose message started it, whoever may answer one of its open requests (its approvers),
and admins. A stop withdraws the turn's open requests (their messages say who stopped it),
cancels the model call or tool it is in, and is audited. A turn another worker runs is asked to
stop through its run's row (bot/durable/leases.py): its owner cuts it at its next renewal.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

from bot.agent import AIChannel
from bot.bridge.watches import Ending, TurnEnd, TurnWatch
from bot.failures import RepeatedFailures, first_line
from bot.human_input import RequestUpdate
from bot.records import AuditEntry, RequestRecord, RunRecord, StoreUnavailableError
from bot.requests.router import Router

log = logging.getLogger(__name__)

Post = Callable[[str], Awaitable[None]]
"""Post the agent's words in the room the turn runs in."""

SORRY = "Sorry, I could not finish that: something went wrong on my side."
UNAVAILABLE = (
    "hitl-bridge cannot record requests right now, so it cannot take this on; try again shortly."
)
TURN_STOPPED = "turn.stopped"  # the audit line of a stop: who, where, whose turn
SUSPEND_GRACE = 2.0  # seconds a watch has to close its live view when the worker shuts down
# Messages already told UNAVAILABLE (a message delivered twice, say a mention's app_mention and
# message events, is told once): the latest this many.
_REFUSED_KEPT = 1024


class StopResult(StrEnum):
    STOPPED = "stopped"
    ASKED = "asked"  # another worker runs it: asked to stop, within a lease renewal
    NOT_RUNNING = "not_running"  # no turn runs in that room, on any worker
    NOT_YOURS = "not_yours"  # the person may not stop it


@dataclass
class RunningTurn:
    """A turn in progress: whose it is, its task, and who stopped it (if someone did)."""

    room_id: str
    actor_id: str
    task: asyncio.Task[None]
    watch: TurnWatch | None = None
    stopped_by: str | None = None
    ending: bool = False  # its end is being told: a stop no longer cuts it


class Turns:
    """The turns a surface started; each one's words go to the room it came from. `router`
    (who may answer what, and the audit log) lets people stop them."""

    def __init__(self, channel: AIChannel, router: Router | None = None) -> None:
        self.channel = channel
        self.router = router
        # Per room, its turns in the order they started: the first runs, the others wait for
        # the room (one turn at a time, the channel's room lock); a stop ends them all.
        self._running: dict[str, list[RunningTurn]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._failures = RepeatedFailures(log)
        self._refused: OrderedDict[str, None] = OrderedDict()
        if channel.runs is not None:
            channel.runs.on_stop_asked(self._stop_asked)

    def start(
        self, room_id: str, actor_id: str, text: str, post: Post, watch: TurnWatch | None = None
    ) -> None:
        """Run a turn after the platform was answered (its ack must not wait for the model)."""
        task = asyncio.create_task(self._run(room_id, actor_id, text or "Hello", post, watch))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        self._running.setdefault(room_id, []).append(RunningTurn(room_id, actor_id, task, watch))

    def running(self, room_id: str) -> RunningTurn | None:
        """The turn running in the room (the first of those there)."""
        return next(iter(self._live(room_id)), None)

    def _live(self, room_id: str) -> list[RunningTurn]:
        return [turn for turn in self._running.get(room_id, []) if not turn.task.done()]

    def _mine(self, room_id: str) -> RunningTurn | None:
        """The turn the current task runs."""
        task = asyncio.current_task()
        return next((t for t in self._running.get(room_id, []) if t.task is task), None)

    def _running_in(self, room_prefix: str) -> list[RunningTurn]:
        """The turns running here in rooms whose id starts with `room_prefix` (a Slack
        channel's threads)."""
        rooms = [room_id for room_id in self._running if room_id.startswith(room_prefix)]
        return [turn for room_id in rooms if (turn := self.running(room_id)) is not None]

    async def runs_in(self, room_prefix: str) -> dict[str, str | None]:
        """Room -> the person whose turn runs there, for the rooms whose id starts with
        `room_prefix`, on this worker and (with run leases) every other: a command typed
        without its thread finds the turn it means among them."""
        here = self._running_in(room_prefix)
        found: dict[str, str | None] = {turn.room_id: turn.actor_id for turn in here}
        runs = self.channel.runs
        if runs is not None:
            for run in await runs.store.active_runs(room_prefix, self.channel.channel_id):
                found.setdefault(run.room_id, run.actor_id)
        return found

    def request_changed(self, update: RequestUpdate) -> None:
        """A request in a room changed: the watch of the turn running there is told."""
        turn = self.running(update.room_id)
        if turn is not None and turn.watch is not None:
            turn.watch.request_changed(update)

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

    async def _run(
        self, room_id: str, actor_id: str, text: str, post: Post, watch: TurnWatch | None
    ) -> None:
        end = TurnEnd(Ending.FAILED)
        try:
            await self.channel.respond(room_id, text, actor_id=actor_id, on_text=post, steps=watch)
            end = TurnEnd(Ending.FINISHED)
        except StoreUnavailableError as err:
            self._failures.failed("running a turn", err)
            await post(UNAVAILABLE)
        except asyncio.CancelledError:
            stopped = self._mine(room_id)
            if stopped is None or stopped.stopped_by is None:
                await _suspended(watch)
                raise  # a shutdown: the run is left for a resume
            stopped.ending = True
            _task_of_this_turn().uncancel()  # the stop's own cancel, taken: the task goes on
            end = TurnEnd(Ending.STOPPED, stopped.stopped_by)
        except Exception:
            log.exception("turn in %s failed", room_id)
            await post(SORRY)
        finally:
            self._forget(room_id)
        if watch is not None:
            await watch.ended(end)

    def _forget(self, room_id: str) -> None:
        """The current task's turn is over: it is no longer among the room's."""
        mine = self._mine(room_id)
        turns = self._running.get(room_id, [])
        if mine is not None:
            turns.remove(mine)
        if not turns:
            self._running.pop(room_id, None)

    async def stop(
        self, room_id: str, by: str, shown_as: str = "", aliases: tuple[str, ...] = ()
    ) -> StopResult:
        """`by` stops the turn running in `room_id`, if they may (see the module's docstring);
        its open requests say "Stopped by `shown_as`" (their name as the surface writes it).
        `aliases` are their other ids (a Teams user's Bot Framework id an admin may be listed
        by)."""
        reason = f"Stopped by {shown_as or by}"
        turn = self.running(room_id)
        if turn is None:
            return await self._stop_elsewhere(room_id, (by, *aliases), reason)
        open_requests = await self._open_requests(room_id)
        if not await self._may_stop(turn.actor_id, (by, *aliases), open_requests):
            return StopResult.NOT_YOURS
        await self._stop_here(room_id, by, reason)
        await self._audit(room_id, turn.actor_id, by)
        return StopResult.STOPPED

    async def _stop_here(self, room_id: str, by: str, reason: str) -> None:
        """Halt the room's turn (the model is asked nothing more), withdraw its open
        requests, then cut whatever it is in, and the turns waiting for the room. In that
        order: a request withdrawn first says who stopped it, and the tool waiting on it
        returns to a turn that ends instead of going on."""
        turns = self._live(room_id)
        for turn in turns:
            turn.stopped_by = by
        self.channel.halt(room_id)
        for record in await self._open_requests(room_id):
            await self._withdraw(record, reason, by)
        for turn in turns:
            if not turn.ending:
                turn.task.cancel()

    async def _stop_elsewhere(self, room_id: str, ids: tuple[str, ...], reason: str) -> StopResult:
        """Ask the worker running the room's turn to stop it (see the module's docstring)."""
        runs, channel_id, by = self.channel.runs, self.channel.channel_id, ids[0]
        if runs is None:
            return StopResult.NOT_RUNNING
        run = await runs.store.active_run(room_id, channel_id)
        if run is None or run.owner == runs.worker_id:  # ours but not a turn of this surface
            return StopResult.NOT_RUNNING
        if not await self._may_stop(run.actor_id, ids, await self._open_requests(room_id)):
            return StopResult.NOT_YOURS
        if not await runs.store.ask_stop(room_id, channel_id, by, reason):
            return StopResult.NOT_RUNNING  # it ended meanwhile
        await self._audit(room_id, run.actor_id, by)
        return StopResult.ASKED

    def _stop_asked(self, run: RunRecord) -> None:
        """A stop asked on another worker of a turn this one runs (told at every renewal)."""
        turn = self.running(run.room_id)
        if turn is None or run.channel_id != self.channel.channel_id or turn.stopped_by:
            return
        by = run.stop_by or "someone"
        stopping = self._stop_here(run.room_id, by, run.stop_reason or f"Stopped by {by}")
        task = asyncio.create_task(stopping)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _may_stop(
        self, actor_id: str | None, ids: tuple[str, ...], open_requests: list[RequestRecord]
    ) -> bool:
        """The turn's person, an admin, or someone who may answer one of its open requests
        (`ids`: the person's ids, the first as the platform authenticated them)."""
        if actor_id in ids:
            return True
        router = self.router
        if router is None:
            return False
        if router.policy.is_admin(ids[0], ids[1:]):
            return True
        for record in open_requests:
            if await router.may_answer(record, ids[0], ids[1:]):
                return True
        return False

    async def _open_requests(self, room_id: str) -> list[RequestRecord]:
        router = self.router
        if router is not None and router.store is not None:
            found = await router.store.pending_in_room(room_id)
        else:
            handler = self.channel.human_input_handler
            found = list(handler.handler.pending.values()) if handler is not None else []
        mine = self.channel.channel_id
        return [r for r in found if r.room_id == room_id and r.channel_id == mine]

    async def _withdraw(self, record: RequestRecord, reason: str, by: str) -> None:
        """Cancel one open request of a stopped turn; one that settled meanwhile is left."""
        handler = self.router.handler_for(record.channel_id) if self.router else None
        if handler is None:
            human = self.channel.human_input_handler
            handler = human.handler if human is not None else None
        if handler is None:
            return
        try:
            await handler.cancel(record.id, reason, by=by)
        except StoreUnavailableError as err:
            self._failures.failed("withdrawing a stopped turn's request", err)

    async def _audit(self, room_id: str, actor_id: str | None, by: str) -> None:
        store = self.router.store if self.router is not None else None
        if store is None:
            return
        detail = {"room_id": room_id, "turn_actor": actor_id}
        entry = AuditEntry(TURN_STOPPED, datetime.now(UTC), actor_id=by, detail=detail)
        try:
            await store.append_audit(entry)
        except StoreUnavailableError as err:
            self._failures.failed("auditing a stop", err)

    async def close(self) -> None:
        """Cut the turns still running. A suspended bridge (a shutdown) leaves their requests
        pending and their transcripts as they were, for the run to be resumed."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


async def _suspended(watch: TurnWatch | None) -> None:
    """A shutdown cut the turn: its watch closes what it shows (a stream left open would
    stay so until the platform closes it), briefly; the run goes on on another worker."""
    if watch is None:
        return
    try:
        async with asyncio.timeout(SUSPEND_GRACE):
            await watch.ended(TurnEnd(Ending.SUSPENDED))
    except Exception as err:  # the shutdown goes on whatever the platform said
        log.info("could not close a turn's live view at shutdown: %s", first_line(err))


def _task_of_this_turn() -> asyncio.Task[object]:
    task = asyncio.current_task()
    assert task is not None  # _run always runs as a task (start)
    return task
