"""The composition root of the core: channels, hooks, the store, deadlines and the surfaces.

RoomKit calls it `kit`: `register_channel(ai)` and `@bridge.hook(...)` work as there. A
surface (Slack, Teams, the console) joins with `attach(surface)`: it then hears every
transition of the requests in its rooms and speaks for runs resumed there (bot/bridge/surfaces.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from datetime import UTC, datetime
from typing import Any

from bot.agent import AIChannel, TextCallback
from bot.agent.hooks import Hook, HookContext, HookExecution, HookRegistry, HookTrigger
from bot.bridge.ports import RequestStore
from bot.bridge.surfaces import Surface
from bot.doors.addresses import Address, Addressee, UnknownAddressError
from bot.durable.leases import LEASE_SECONDS, RunLeases, left_by
from bot.durable.sweep import DeadlineScheduler
from bot.errors import UndeliverableError
from bot.failures import RepeatedFailures
from bot.human_input import HumanInputHandler, Observer, PendingInputEvent, RequestUpdate
from bot.records import AuditEntry, RequestRecord, StoreUnavailableError

log = logging.getLogger(__name__)

Mirror = Callable[[RequestUpdate], Iterable[str] | Awaitable[Iterable[str]]]
"""The other rooms a request is shown in, besides its own (bot/policies/delivery.py: a policy
rule's `deliver`)."""

UNDELIVERABLE_COPY = "undeliverable_copy"  # the audit line of a copy that could not be shown


class Bridge:
    """Wires AI channels to hooks, a store and the surfaces that show requests to people."""

    def __init__(
        self,
        *,
        store: RequestStore | None = None,
        hook_budget: float = 30.0,
        lease_seconds: float = LEASE_SECONDS,
    ) -> None:
        self.store = store
        self.hooks = HookRegistry(hook_budget)
        self.channels: dict[str, AIChannel] = {}
        self.handlers: list[HumanInputHandler] = []
        self._elsewhere_listeners: list[Callable[[str], None]] = []
        self._observers: list[Observer] = []
        self._scheduler: DeadlineScheduler | None = None
        self._surfaces: list[Surface] = []
        self._mirrors: list[Mirror] = []
        self._tasks: set[asyncio.Task[Any]] = set()
        self._adopter: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self._stop_listening: Callable[[], Awaitable[None]] = _nothing
        self.runs = RunLeases(store, lease_seconds=lease_seconds) if store is not None else None
        self._failures = RepeatedFailures(log)

    def hook(
        self,
        trigger: HookTrigger,
        *,
        execution: HookExecution = HookExecution.SYNC,
        priority: int = 0,
        name: str | None = None,
    ) -> Callable[[Hook], Hook]:
        """Decorator registering a hook for `trigger`."""

        def register(hook: Hook) -> Hook:
            self.hooks.register(trigger, hook, execution=execution, priority=priority, name=name)
            return hook

        return register

    def register_channel(self, channel: AIChannel) -> None:
        """Attach a channel: it shares the bridge's hooks and store; its requests notify."""
        self.channels[channel.channel_id] = channel
        self.hooks.adopt(channel.hooks)  # hooks set on the channel before it joined still run
        channel.hooks = self.hooks
        if self.store is not None:
            channel.store = self.store
            channel.runs = self.runs
        human = channel.human_input_handler
        if human is None:
            return
        human.handler.set_notifier(self._on_input_required, channel_id=channel.channel_id)
        self._adopt(human.handler)

    def _adopt(self, handler: HumanInputHandler) -> None:
        if any(handler is known for known in self.handlers):
            return
        if self.store is not None and handler.store is None:
            handler.attach_store(self.store)
        handler.add_observer(self._fan_out)
        handler.add_deadline_listener(self._deadline_created)
        self.handlers.append(handler)

    def _deadline_created(self, expires_at: datetime) -> None:
        """A request was created: the durable deadline sweep (once started) may sleep less."""
        if self._scheduler is not None:
            self._scheduler.poke(expires_at)

    def attach(self, surface: Surface) -> None:
        """Register a surface, all of it at once: it observes the requests of its rooms (its
        `room_prefix`) and of those mirrored to them, and `say`s a resumed run's words there."""
        for known in self._surfaces:
            if known.name == surface.name or _overlap(known.room_prefix, surface.room_prefix):
                raise ValueError(
                    f"surface {surface.name!r} ({surface.room_prefix!r}) clashes with the "
                    f"attached {known.name!r} ({known.room_prefix!r})"
                )
        self._surfaces.append(surface)
        self.add_observer(_in_rooms(surface.room_prefix, surface.observe))

    async def find(self, address: Address) -> Addressee:
        """The room and actor of an address (bot/doors/addresses.py): its surface's answer; an
        e-mail address, the first surface's that knows it. UnknownAddressError otherwise."""
        prefix = f"{address.surface}:"
        asked = [s for s in self._surfaces if address.surface == "email" or s.room_prefix == prefix]
        said: list[str] = []
        for surface in asked:
            try:
                return await surface.find(address)
            except UnknownAddressError as err:
                said.append(str(err))
        raise UnknownAddressError("; ".join(said) or f"no {address.surface} surface is served")

    def surface_for(self, room_id: str) -> Surface | None:
        """The attached surface whose room `room_id` is."""
        return next((s for s in self._surfaces if room_id.startswith(s.room_prefix)), None)

    def add_observer(self, observer: Observer) -> None:
        """Tell `observer` every transition of every request of every channel, once for the
        request's own room and once for each room it is mirrored to. (A surface is attached
        with `attach`, which also hears only its own rooms.)"""
        self._observers.append(observer)

    def mirror(self, rooms: Mirror) -> None:
        """Show requests in more rooms too: `rooms(update)` names them (say, a Slack thread's
        approvals also in a Teams channel), once per update for every observer. Each surface
        shows the rooms that are its own; an answer on any of them settles the one request,
        and every copy is updated."""
        self._mirrors.append(rooms)

    async def _fan_out(self, update: RequestUpdate) -> None:
        """The handlers' one observer: each of ours hears the update in its own room, then in
        each copy's, the observers side by side (one slow surface does not hold up another)."""
        observers = list(self._observers)
        if not observers:
            return
        # Where the copies go is looked up (a DM opened, say) while the own room is shown.
        copies = asyncio.ensure_future(self._copies(update))
        try:
            if len(observers) == 1:
                await self._show(observers[0], update, copies)
            else:
                await asyncio.gather(*(self._show(o, update, copies) for o in observers))
        finally:
            copies.cancel()  # done by then, unless the showing was cut short

    async def _copies(self, update: RequestUpdate) -> list[str]:
        rooms: list[str] = []
        for mirror in self._mirrors:
            try:
                named = mirror(update)
                found = await named if inspect.isawaitable(named) else named
            except Exception:
                log.exception("could not tell where else to show %s", update.pending_id)
                continue
            rooms.extend(r for r in found if r != update.room_id and r not in rooms)
        return rooms

    async def _show(
        self, observer: Observer, update: RequestUpdate, copies: asyncio.Future[list[str]]
    ) -> None:
        try:
            await observer(update)
        except UndeliverableError as err:
            await self._undeliverable(update, str(err))
        except Exception:
            log.exception("observer failed on %s of %s", update.state, update.pending_id)
        for room_id in await asyncio.shield(copies):
            try:
                await observer(dataclasses.replace(update, room_id=room_id, copy=True))
            except UndeliverableError as err:  # its own room decides, not a copy
                await self.undeliverable_copy(update, room_id, str(err))
            except Exception:
                log.exception("observer failed on %s of %s in %s", update.state,
                              update.pending_id, room_id)  # fmt: skip

    async def undeliverable_copy(self, update: RequestUpdate, where: str, reason: str) -> None:
        """A copy of a request could not be shown in `where` (a room, or the address it was
        to be found at): logged and audited; the request stays open in its own room."""
        log.warning("could not show a copy of %s in %s: %s", update.pending_id, where, reason)
        if self.store is None or not update.pending_id:
            return
        entry = AuditEntry(
            action=UNDELIVERABLE_COPY,
            at=datetime.now(UTC),
            request_id=update.pending_id,
            actor_id=None,
            detail={"room": where, "reason": reason},
        )
        try:
            await self.store.append_audit(entry)
        except StoreUnavailableError as err:
            log.warning("could not audit the undeliverable copy of %s: %s",
                        update.pending_id, err)  # fmt: skip

    async def _undeliverable(self, update: RequestUpdate, reason: str) -> None:
        """A surface could not show a new request in its own room, after its retries: the
        person cannot be asked, so the request settles as undeliverable now (not at its
        deadline) and its waiter, the model, is told so."""
        handler = self.handler_for(update.channel_id)
        if not update.pending_id or handler is None:
            log.error("could not show %s in %s: %s", update.pending_id or update.tool_name,
                      update.room_id, reason)  # fmt: skip
            return
        log.warning("request %s could not be delivered to %s: %s",
                    update.pending_id, update.room_id, reason)  # fmt: skip
        await handler.undeliverable(update.pending_id, reason)

    async def _on_input_required(self, event: PendingInputEvent) -> bool:
        context = HookContext(room_id=event.room_id, channel_id=event.channel_id)
        verdict = await self.hooks.run(HookTrigger.ON_USER_INPUT_REQUIRED, event, context)
        return not verdict.blocked

    def handler_for(self, channel_id: str) -> HumanInputHandler | None:
        """The handler serving a channel's requests (any, for a channel this process lacks)."""
        channel = self.channels.get(channel_id)
        if channel is not None and channel.human_input_handler is not None:
            return channel.human_input_handler.handler
        return self.handlers[0] if self.handlers else None

    def _speaker_for(self, room_id: str) -> TextCallback | None:
        """Where a resumed run's words go: the surface of its room."""
        surface = self.surface_for(room_id)
        if surface is None:
            log.warning("no surface attached for %s: a resumed run's words there are lost", room_id)
            return None
        say = surface.say

        async def speak(text: str) -> None:
            await say(room_id, text)

        return speak

    async def start(self) -> None:
        """With a store: expire what passed while down, hear other workers' settles, and
        adopt runs whose worker is gone; then keep doing so."""
        if self.store is None or self._scheduler is not None:
            return
        self._scheduler = DeadlineScheduler(self.store, self._expire)
        await self._scheduler.start()
        self._stop_listening = await self.store.listen_settled(self._settled_elsewhere)
        assert self.runs is not None  # a store brings runs
        self.runs.start()
        self._adopter = asyncio.create_task(self._adopt_forever(self.runs))

    def _settled_elsewhere(self, request_id: str) -> None:
        """Another worker settled a request: wake the waiter if it is one of ours."""
        for handler in self.handlers:
            self._spawn(handler.follow(request_id))
        for listener in self._elsewhere_listeners:
            listener(request_id)

    def on_settled_elsewhere(self, listener: Callable[[str], None]) -> None:
        """Tell `listener` the id of each request another worker settles (PostgreSQL's
        NOTIFY): the doors wake their long polls with it."""
        self._elsewhere_listeners.append(listener)

    async def _adopt_forever(self, runs: RunLeases) -> None:
        # Twice per lease: a dead worker's run is taken over within 1.5 leases. Stopped by an
        # event rather than cancelled, so no query is cut off holding a connection.
        while not self._stopping.is_set():
            try:
                await self.adopt_orphans(runs)
                self._failures.recovered("adopting orphaned runs")
            except StoreUnavailableError as err:
                self._failures.failed("adopting orphaned runs", err)
            except Exception:
                log.exception("adopting orphaned runs failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), runs.lease_seconds / 2)

    async def adopt_orphans(self, runs: RunLeases) -> int:
        """Resume every run whose worker stopped renewing it; returns how many were taken."""
        taken = 0
        for run in await runs.orphans():
            channel = self.channels.get(run.channel_id)
            if channel is None or not await runs.adopt(run):
                continue
            taken += 1
            log.info("resuming the run of %s %s", run.room_id, left_by(run.owner, runs.worker_id))
            on_text = self._speaker_for(run.room_id)
            self._spawn(channel.resume(run.room_id, actor_id=run.actor_id, on_text=on_text))
        return taken

    def _spawn(self, coroutine: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _expire(self, record: RequestRecord) -> None:
        handler = self.handler_for(record.channel_id)
        if handler is None:
            log.warning("request %s expired with no handler to settle it", record.id)
            return
        await handler.expire_record(record)

    def suspend(self) -> None:
        """Shutting down: turns cut from now on leave their requests and transcripts as they
        are, for another worker (or this one, restarted) to resume."""
        for handler in self.handlers:
            handler.suspend()
        for channel in self.channels.values():
            channel.suspended = True

    async def close(self) -> None:
        """Stop background work, let in-flight settles and observers finish; a suspended
        bridge also lets its runs' leases lapse so other workers adopt them at once."""
        self._stopping.set()
        if self._adopter is not None:
            await asyncio.gather(self._adopter, return_exceptions=True)
            self._adopter = None
        if self._scheduler is not None:
            await self._scheduler.stop()
            self._scheduler = None
        await self._stop_listening()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for handler in self.handlers:
            await handler.drain()
        await self.hooks.drain()
        if self.runs is not None:
            if any(channel.suspended for channel in self.channels.values()):
                await self.runs.release_all()
            else:
                await self.runs.stop()


async def _nothing() -> None:
    return None


def _in_rooms(prefix: str, observer: Observer) -> Observer:
    """`observer`, told only of the rooms whose ids start with `prefix`."""

    async def observe(update: RequestUpdate) -> None:
        if update.room_id.startswith(prefix):
            await observer(update)

    return observe


def _overlap(one: str, other: str) -> bool:
    """Whether a room id could belong to both prefixes."""
    return one.startswith(other) or other.startswith(one)
