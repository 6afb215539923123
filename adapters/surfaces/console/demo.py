"""`hitl-bridge demo`: an agent in the terminal, asking the person at the keyboard."""

from __future__ import annotations

import asyncio
import getpass
import logging

from adapters.serve.served_agent import (
    SYSTEM_PROMPT,
    audit_redaction,
    make_provider,
    open_agent,
    read_agent_file,
)
from adapters.serve.settings import Settings
from adapters.surfaces.console.surface import ConsoleSurface, Terminal, room_of
from bot import AIChannel, AnthropicAIProvider, Bridge, ConfigurationError, RequestUpdate
from bot.gates.gate import approval_gate
from bot.gates.grants import Grants
from bot.requests.access import AnswerPolicy
from bot.requests.router import Router
from bot.store import SqlStore, open_store

log = logging.getLogger(__name__)

__all__ = ["SYSTEM_PROMPT", "make_provider", "run_demo"]


async def run_demo(settings: Settings, terminal: Terminal, message: str | None = None) -> int:
    """Run turns typed at the terminal (or just `message`); returns the exit status."""
    settings, config = read_agent_file(settings)
    if settings.policy_file is not None:
        # Its approvers are Slack and Teams people, and a rule may want two of them or forbid
        # the actor: nobody at this terminal could meet it, so the demo refuses it rather
        # than let the one person here approve what the policy gives to others.
        raise ConfigurationError(
            f"the demo does not apply HITL_POLICY_FILE ({settings.policy_file}): it has only "
            "you at the terminal; unset it for the demo, or try the policy with `serve`"
        )
    store = await open_store(settings.database_url)
    store.audit_redact = audit_redaction(settings, config)
    try:
        agent = await open_agent(settings, config)
    except BaseException:
        await store.close()
        raise
    bridge = Bridge(store=store)
    human = agent.human
    provider = make_provider(settings)
    # Gated tools ask here too; grants are kept (`hitl-bridge grants`).
    gate = approval_gate(
        human.handler, runs=store, grants=Grants(store), timeout=settings.timeout_seconds
    )
    channel = agent.channel("console", provider, gate=gate)
    bridge.register_channel(channel)
    user = getpass.getuser()
    router = Router(
        store=store,
        handler_for=bridge.handler_for,
        handlers=bridge.handlers,
        policy=AnswerPolicy(admins=settings.admins, approvers=settings.approvers),
        tools=human.tools,
    )
    surface = ConsoleSurface(router, terminal, user=user)
    bridge.attach(surface)
    room = room_of(user)
    # Before the bridge starts adopting lapsed runs: this one is the demo's to resume now.
    assert bridge.runs is not None  # a store brings runs
    left_open = await bridge.runs.take_over(room, channel.channel_id)
    await bridge.start()
    kind = "Anthropic API" if isinstance(provider, AnthropicAIProvider) else "scripted model"
    terminal.write(f"hitl-bridge demo — {kind}, store {settings.database_url}")
    interrupted = False
    try:
        if left_open:
            await _resume(channel, surface, store, user)
        await _converse(channel, surface, user, message)
    except asyncio.CancelledError:  # Ctrl-C: asyncio.run cancels this task, then exits 130
        interrupted = True
        raise
    finally:
        await surface.close()
        await bridge.close()
        await agent.close()
        if isinstance(provider, AnthropicAIProvider):
            await provider.close()
        await store.close()
        if interrupted:  # after the store closed: every withdrawal has been told by now
            terminal.write(f"demo stopped (Ctrl-C): {_requests(surface.withdrawn)} withdrawn")
    return 0


async def _resume(channel: AIChannel, surface: ConsoleSurface, store: SqlStore, user: str) -> None:
    """Carry on the run a demo killed mid-turn left open, asking again what it had asked: a
    resumed wait is not announced anew (a chat message would still show it), a terminal must."""
    room = room_of(user)
    waiting = await store.pending_in_room(room)
    surface.terminal.write(
        f"resuming the turn a stopped demo left open ({_requests(len(waiting))} waiting)"
    )
    for record in waiting:
        surface.ask(RequestUpdate.of(record))

    async def show(reply: str) -> None:
        await surface.say(room, reply)

    await channel.resume(room, actor_id=user, on_text=show)


def _requests(count: int) -> str:
    return f"{count} open request{'' if count == 1 else 's'}"


async def _converse(
    channel: AIChannel, surface: ConsoleSurface, user: str, message: str | None
) -> None:
    room = room_of(user)

    async def show(reply: str) -> None:
        await surface.say(room, reply)

    while True:
        text = message
        if text is None:
            text = await surface.terminal.read_line("you")
            if text is None or text.strip() in {"quit", "exit"}:
                return
            text = text.strip() or "Deploy the new release, please."
        await channel.respond(room, text, actor_id=user, on_text=show)
        if message is not None:
            return
