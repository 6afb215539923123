"""`hitl-bridge demo`: an agent in the terminal, asking the person at the keyboard."""

from __future__ import annotations

import getpass
import logging

from adapters.console.surface import ConsoleSurface, Terminal
from adapters.settings import Settings
from bot import AIChannel, AIProvider, AnthropicAIProvider, Bridge, HumanInputToolHandler
from bot.scripted import ScriptedAIProvider
from bot.store import open_store

log = logging.getLogger(__name__)

SYSTEM_PROMPT = (
    "You are a release assistant working with a team. Before anything irreversible, ask for "
    "approval or confirmation with the human tools; ask questions when something is unclear."
)


def make_provider(settings: Settings) -> AIProvider:
    """The real Anthropic API with a key; the scripted model without one."""
    if settings.anthropic_api_key is None:
        return ScriptedAIProvider()
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
    surface = ConsoleSurface(bridge.handler_for, terminal, user=user)
    bridge.add_observer(surface.observe)
    await bridge.start()
    kind = "Anthropic API" if isinstance(provider, AnthropicAIProvider) else "scripted model"
    terminal.write(f"hitl-bridge demo — {kind}, store {settings.database_url}")
    try:
        await _converse(channel, terminal, user, message)
    finally:
        await surface.close()
        await bridge.close()
        if isinstance(provider, AnthropicAIProvider):
            await provider.close()
        await store.close()
    return 0


async def _converse(channel: AIChannel, terminal: Terminal, user: str, message: str | None) -> None:
    room = f"console:{user}"
    while True:
        text = message
        if text is None:
            text = await terminal.read_line("you")
            if text is None or text.strip() in {"quit", "exit"}:
                return
            text = text.strip() or "Deploy the new release, please."

        async def show(reply: str) -> None:
            terminal.write(f"agent> {reply}")

        await channel.respond(room, text, actor_id=user, on_text=show)
        if message is not None:
            return
