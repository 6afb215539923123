"""`hitl-bridge demo`: an agent in the terminal, asking the person at the keyboard."""

from __future__ import annotations

import getpass
import logging

from adapters.console.surface import ConsoleSurface, Terminal, room_of
from adapters.settings import Settings
from bot import AIChannel, AIProvider, AnthropicAIProvider, Bridge, HumanInputToolHandler
from bot.access import AnswerPolicy
from bot.requests.router import Router
from bot.scripted import ScriptedAIProvider
from bot.store import open_store

log = logging.getLogger(__name__)

SYSTEM_PROMPT = (
    "You are a release assistant working with a team. Before anything irreversible, ask for "
    "approval or confirmation with the human tools; ask questions when something is unclear."
)


def make_provider(settings: Settings) -> AIProvider:
    """The scripted model when asked for (HITL_MODEL=scripted) or without a key (`serve`
    refuses to start without either, see serve.check_model_settings); else the Anthropic API."""
    if settings.scripted_model or not settings.has_anthropic_key:
        return ScriptedAIProvider()
    assert settings.anthropic_api_key is not None
    return AnthropicAIProvider(
        model=settings.model,
        api_key=settings.anthropic_api_key.get_secret_value(),
        base_url=settings.anthropic_base_url,
    )


async def run_demo(settings: Settings, terminal: Terminal, message: str | None = None) -> int:
    """Run turns typed at the terminal (or just `message`); returns the exit status."""
    store = await open_store(settings.database_url)
    bridge = Bridge(store=store)
    human = HumanInputToolHandler.builtin(timeout=settings.timeout_seconds)
    provider = make_provider(settings)
    channel = AIChannel(
        "console", provider=provider, system_prompt=SYSTEM_PROMPT, human_input_handler=human
    )
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
    await bridge.start()
    kind = "Anthropic API" if isinstance(provider, AnthropicAIProvider) else "scripted model"
    terminal.write(f"hitl-bridge demo — {kind}, store {settings.database_url}")
    try:
        await _converse(channel, surface, user, message)
    finally:
        await surface.close()
        await bridge.close()
        if isinstance(provider, AnthropicAIProvider):
            await provider.close()
        await store.close()
    return 0


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
