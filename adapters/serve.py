"""`hitl-bridge serve`: the production entry point (HTTP on aiohttp, or Slack's Socket Mode)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from dataclasses import dataclass, field

from aiohttp import web
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

from adapters.console.demo import SYSTEM_PROMPT, make_provider
from adapters.server import build_web_app
from adapters.settings import Settings
from adapters.slack.app import SlackAdapter, slack_client
from bot import AIChannel, AnthropicAIProvider, Bridge, ConfigurationError, HumanInputToolHandler
from bot.access import AnswerPolicy
from bot.store import SqlStore, open_store

log = logging.getLogger(__name__)


def check_slack_settings(settings: Settings) -> tuple[str, str]:
    """The bot token and signing secret, or ConfigurationError naming what is missing."""
    missing = [
        name
        for name, value in (
            ("SLACK_BOT_TOKEN", settings.slack_bot_token),
            ("SLACK_SIGNING_SECRET", settings.slack_signing_secret),
        )
        if value is None or not value.get_secret_value()
    ]
    if missing:
        raise ConfigurationError(f"hitl-bridge serve needs {' and '.join(missing)} to be set")
    assert settings.slack_bot_token is not None and settings.slack_signing_secret is not None
    return (
        settings.slack_bot_token.get_secret_value(),
        settings.slack_signing_secret.get_secret_value(),
    )


@dataclass
class Service:
    """What serve runs, so shutdown can stop it in the right order."""

    store: SqlStore
    bridge: Bridge
    slack: SlackAdapter
    channel: AIChannel
    ready: bool = False
    stopping: asyncio.Event = field(default_factory=asyncio.Event)


async def build_service(settings: Settings) -> Service:
    token, secret = check_slack_settings(settings)
    store = await open_store(settings.database_url, migrate=False)
    if not await store.schema_revision_ok():
        await store.close()
        raise ConfigurationError(
            f"the database at {settings.database_url} is behind this version's migrations: "
            "run `hitl-bridge db upgrade` first"
        )
    bridge = Bridge(store=store)
    human = HumanInputToolHandler.builtin(timeout=settings.timeout_seconds)
    channel = AIChannel(
        "slack",
        provider=make_provider(settings),
        system_prompt=SYSTEM_PROMPT,
        human_input_handler=human,
    )
    bridge.register_channel(channel)
    slack = SlackAdapter(
        bridge=bridge,
        channel=channel,
        client=slack_client(token, settings.slack_api_url),
        signing_secret=secret,
        store=store,
        policy=AnswerPolicy(admins=settings.admins, approvers=settings.approvers),
        tools=human.tools,
    )
    return Service(store=store, bridge=bridge, slack=slack, channel=channel)


async def serve(settings: Settings) -> int:
    """Run until SIGTERM or SIGINT; returns the exit status."""
    service = await build_service(settings)

    async def health() -> bool:
        return service.ready

    app = build_web_app(health=health, slack=service.slack.handle)
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, settings.host, settings.port)
    await site.start()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, service.stopping.set)
    socket_mode = None
    try:
        await service.slack.start()
        await service.bridge.start()
        socket_mode = await _start_socket_mode(settings, service)
        service.ready = True
        log.warning("hitl-bridge serving on http://%s:%s", settings.host, settings.port)
        await service.stopping.wait()
    finally:
        service.ready = False
        if socket_mode is not None:
            await socket_mode.close_async()  # type: ignore[no-untyped-call]
        await runner.cleanup()  # stops taking requests, lets those in flight finish
        await _close(service)
    return 0


async def _start_socket_mode(settings: Settings, service: Service) -> AsyncSocketModeHandler | None:
    """Socket Mode when SLACK_APP_TOKEN is set: Slack connects out, no public URL needed."""
    if settings.slack_app_token is None:
        return None
    token = settings.slack_app_token.get_secret_value()
    handler = AsyncSocketModeHandler(service.slack.app, token)
    await handler.connect_async()  # type: ignore[no-untyped-call]  # untyped in slack-bolt
    return handler


async def _close(service: Service) -> None:
    with contextlib.suppress(Exception):
        await service.slack.close()
    await service.bridge.close()
    provider = service.channel.provider
    if isinstance(provider, AnthropicAIProvider):
        await provider.close()
    await service.store.close()
