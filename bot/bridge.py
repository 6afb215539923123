"""The composition root of the core: channels, hooks, the store, deadlines and the surfaces.

The seed calls it `kit`: `register_channel(ai)` and `@bridge.hook(...)` work as there. A
surface (Slack, Teams, the console) is an observer of every request's transitions.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from bot.agent import AIChannel
from bot.hooks import Hook, HookContext, HookExecution, HookRegistry, HookTrigger
from bot.human_input import HumanInputHandler, Observer, PendingInputEvent
from bot.records import RequestRecord, RequestStore
from bot.timers import DeadlineScheduler

log = logging.getLogger(__name__)


class Bridge:
    """Wires AI channels to hooks, a store and the surfaces that show requests to people."""

    def __init__(self, *, store: RequestStore | None = None, hook_budget: float = 30.0) -> None:
        self.store = store
        self.hooks = HookRegistry(hook_budget)
        self.channels: dict[str, AIChannel] = {}
        self.handlers: list[HumanInputHandler] = []
        self._observers: list[Observer] = []
        self._scheduler: DeadlineScheduler | None = None

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
        human = channel.human_input_handler
        if human is None:
            return
        human.handler.set_notifier(self._on_input_required, channel_id=channel.channel_id)
        self._adopt(human.handler)

    def _adopt(self, handler: HumanInputHandler) -> None:
        if any(handler is known for known in self.handlers):
            return
        if self.store is not None and handler.store is None:
            handler.store = self.store
        for observer in self._observers:
            handler.add_observer(observer)
        if self._scheduler is not None:
            handler.on_deadline_armed = self._scheduler.poke
        self.handlers.append(handler)

    def add_observer(self, observer: Observer) -> None:
        """Tell `observer` (a surface) every transition of every request of every channel."""
        self._observers.append(observer)
        for handler in self.handlers:
            handler.add_observer(observer)

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

    async def start(self) -> None:
        """Start durable deadlines: expire what passed while down, then sleep until the next."""
        if self.store is None or self._scheduler is not None:
            return
        self._scheduler = DeadlineScheduler(self.store, self._expire)
        for handler in self.handlers:
            handler.on_deadline_armed = self._scheduler.poke
        await self._scheduler.start()

    async def _expire(self, record: RequestRecord) -> None:
        handler = self.handler_for(record.channel_id)
        if handler is None:
            log.warning("request %s expired with no handler to settle it", record.id)
            return
        await handler.expire_record(record)

    async def close(self) -> None:
        """Stop deadlines, let in-flight settles and observers finish, run pending hooks."""
        if self._scheduler is not None:
            await self._scheduler.stop()
            self._scheduler = None
        for handler in self.handlers:
            await handler.drain()
        await self.hooks.drain()
