"""`hitl-bridge serve`: the production entry point (HTTP on aiohttp, or Slack's Socket Mode)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING

from aiohttp import web

from adapters.doors.a2a.loading import PATH as A2A_PATH
from adapters.doors.admin.access import PREFIX as ADMIN_PATH
from adapters.doors.admin.app import AdminConsole, open_console
from adapters.doors.ag_ui.loading import AgUiParts, LoadingAgUiDoor
from adapters.doors.api.routes import BASE as API_PATH
from adapters.doors.mcp.loading import PATH as MCP_PATH
from adapters.ops.observability import TracingFor, watched
from adapters.ops.tracing import TracedProvider, Tracing, tracing_from_environment
from adapters.serve.approvers import open_deciders, read_groups
from adapters.serve.door_service import DoorService, open_doors
from adapters.serve.http_limits import AppRunner
from adapters.serve.http_server import SLACK_PATH, TEAMS_PATH, Handler, build_web_app
from adapters.serve.readiness import Readiness
from adapters.serve.served_agent import (
    Agent,
    audit_redaction,
    make_provider,
    open_agent,
    read_agent_file,
)
from adapters.serve.settings import Settings, shown_url
from adapters.serve.startup import StartupError, database_step, listening_step, slack_step
from adapters.surfaces.teams.config import TeamsConfig, teams_config
from adapters.surfaces.teams.loading import ImportTeams, LoadingTeams, import_teams_app
from bot import AIChannel, AnthropicAIProvider, Bridge, ConfigurationError
from bot.audit.chain import AuditSealer, ChainCheck
from bot.bridge.people import PeopleNames
from bot.config.agent_file import DEFAULT_SUGGESTED_PROMPTS
from bot.durable.escalations import Escalations
from bot.gates.gate import approval_gate
from bot.gates.grants import Grants
from bot.human_input import RequestRules
from bot.human_input.log_lines import log_transition
from bot.human_tools.tool import BUILTIN_TOOLS
from bot.policies.deciders import Deciders
from bot.policies.delivery import Delivery
from bot.requests.access import AnswerPolicy
from bot.requests.router import Router
from bot.store import SqlStore, open_store
from bot.store.copies import CopyTables
from bot.store.escalations import EscalationTables
from bot.store.votes import VoteTables

# Each surface's SDK (seconds to import) is imported when the settings say it is served.
if TYPE_CHECKING:
    from adapters.ops.metrics import Metrics
    from adapters.surfaces.slack.app import SlackAdapter
    from adapters.surfaces.slack.socket_mode import SocketMode
    from adapters.surfaces.teams.app import TeamsAdapter

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


def people_names(slack: SlackAdapter | None) -> PeopleNames:
    """People's names from the surfaces served (the admin console shows people by them): the
    Slack adapter's cache (its status lines' names) when Slack is served, one cache for all
    (Teams adds its people once its SDK is in: adapters/surfaces/teams/loading.py)."""
    return slack.status_lines.names if slack is not None else PeopleNames([])


def check_model_settings(settings: Settings) -> None:
    """`serve` runs the Anthropic API with a key, the scripted demo model only when asked for
    (a workspace must not get the scripted model by a missing key); ConfigurationError else."""
    if not settings.scripted_model and not settings.has_anthropic_key:
        raise ConfigurationError(
            "hitl-bridge serve needs ANTHROPIC_API_KEY to be set "
            "(or HITL_MODEL=scripted for the scripted demo model)"
        )


# -- Teams (adapters/surfaces/teams): Slack and Teams are each optional, one of them is needed
# ----------


def _slack_if_set(settings: Settings) -> tuple[str, str] | None:
    """Slack's token and secret; None when neither is set (a Teams-only service)."""
    if settings.slack_bot_token is None and settings.slack_signing_secret is None:
        return None
    return check_slack_settings(settings)


NO_SURFACE = (
    "hitl-bridge serve needs Slack or Teams: set SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET "
    "for Slack, or TEAMS_CLIENT_ID and TEAMS_CLIENT_SECRET for Teams (both sets: both); to "
    "try it in this terminal without either, run `hitl-bridge demo`"
)


def _surfaces(settings: Settings) -> tuple[tuple[str, str] | None, TeamsConfig | None]:
    """Slack's token and secret, and Teams' configuration: each None when it is not set up,
    ConfigurationError when neither is (or one is half set up)."""
    teams = teams_config(settings)
    slack = _slack_if_set(settings)
    if slack is None and teams is None:
        raise ConfigurationError(NO_SURFACE)
    return slack, teams


# -- end Teams --------------------------------------------------------------------------------


@dataclass
class Service:
    """What serve runs, so shutdown can stop it in the right order."""

    store: SqlStore
    bridge: Bridge
    slack: SlackAdapter | None
    channel: AIChannel
    ready: bool = False
    teams: TeamsAdapter | None = None  # once `loading_teams` has it (its SDK is in)
    loading_teams: LoadingTeams | None = None
    agent: Agent | None = None  # its tools (MCP servers) stop with the service
    doors: DoorService | None = None  # the HTTP API (adapters/serve/door_service.py)
    admin: AdminConsole | None = None  # the admin console under /admin (adapters/doors/admin)
    escalations: Escalations | None = (
        None  # the policy's escalation steps (bot/durable/escalations.py)
    )
    sealer: AuditSealer | None = None  # seals the audit rows written into the hash chain
    metrics: Metrics | None = None  # /metrics on HITL_METRICS_ADDRESS (adapters/ops/metrics.py)
    tracing: Tracing | None = None  # spans to OTLP (adapters/ops/tracing.py), when configured
    ag_ui: LoadingAgUiDoor | None = None  # the agent over AG-UI at /ag-ui, loaded once ready


def request_rules(deciders: Deciders) -> RequestRules:
    """The policy file's rules for each request (bot/policies/deciders.py)."""
    return RequestRules(
        lifetime=deciders.lifetime,  # a rule's `timeout_seconds`
        expiry_answer=deciders.expiry_answer,  # a rule's `on_timeout` answer
        escalation_start=deciders.escalation_start,  # a rule's first `escalate` step
        audience=deciders.audience,  # who may answer, in every message
    )


async def build_service(
    settings: Settings,
    tracing_for: TracingFor = tracing_from_environment,
    import_teams: ImportTeams = import_teams_app,
) -> Service:
    slack_secrets, teams = _surfaces(settings)
    settings, config = read_agent_file(settings)
    check_model_settings(settings)
    deciders = open_deciders(settings)  # the policy file read before anything is opened
    # The Teams SDK (a second) imported in a thread while the rest is built and started.
    loading = LoadingTeams(import_teams) if teams is not None else None
    store = await open_store(settings.database_url, migrate=False)
    store.audit_redact = audit_redaction(settings, config)
    try:
        with database_step(settings.database_url):
            if not await store.schema_revision_ok():
                raise ConfigurationError(
                    f"the database at {shown_url(settings.database_url)} is behind this "
                    "version's migrations: run `hitl-bridge db upgrade` first"
                )
        # MCP servers started, or a StartupError; its requests under the policy's rules.
        agent = await open_agent(settings, config, rules=request_rules(deciders))
    except BaseException:
        await store.close()
        if loading is not None:
            await loading.cancel()
        raise
    bridge = Bridge(store=store, lease_seconds=settings.lease_seconds)
    human = agent.human
    human.handler.add_observer(log_transition)  # a line per request asked and settled
    grants = Grants(store)
    gate = approval_gate(human.handler, runs=store, grants=grants, timeout=settings.timeout_seconds)
    # The model and the gate, metered and traced where configured.
    seen = watched(settings, store, bridge, human.handler, make_provider(settings), gate,
                   tracing_for)  # fmt: skip
    metrics, trace_configs = seen.metrics, seen.trace_configs
    channel = agent.channel("slack", seen.provider, gate=seen.gate)
    bridge.register_channel(channel)
    policy = AnswerPolicy(admins=settings.admins, approvers=settings.approvers)
    # The doors ask with the built-in tools whatever the agent file offers the model.
    tools = {**BUILTIN_TOOLS, **human.tools}
    # One router answers every surface's clicks, submissions and replies.
    router = Router(
        store=store, handler_for=bridge.handler_for, handlers=(human.handler,), policy=policy,
        tools=tools, deciders=deciders, votes=VoteTables(store),
    )  # fmt: skip
    copies = CopyTables(store)
    # A rule's `escalate` steps: due times kept in the requests' rows, fired once by any worker.
    escalations = Escalations(EscalationTables(store), router)
    human.handler.add_escalation_listener(escalations.poke)
    slack = None
    if slack_secrets is not None:
        from adapters.surfaces.slack.app import SlackAdapter, slack_client

        token, secret = slack_secrets
        slack = SlackAdapter(
            bridge=bridge,
            channel=channel,
            client=slack_client(
                token, settings.slack_api_url, metrics.slack_call if metrics else None
            ),
            signing_secret=secret,
            store=store,
            router=router,
            grants=grants,
            copies=copies,
            trace_configs=trace_configs,
            suggested_prompts=config.suggested_prompts if config else DEFAULT_SUGGESTED_PROMPTS,
        )
    service = Service(store=store, bridge=bridge, slack=slack, channel=channel, agent=agent,
                      escalations=escalations, metrics=metrics, tracing=seen.tracing)  # fmt: skip
    service.doors = open_doors(settings, store, bridge, human.handler, tools, trace_configs,
                               webhooks_counted=metrics.webhook if metrics else None)  # fmt: skip
    if metrics is not None:
        metrics.worker.long_polls = service.doors.doors.polls.held
    d = service.doors
    parts = AgUiParts(bridge, channel, router, store, d.tokens, d.doors.polls, tools,
                      settings.ag_ui_turns_per_token)  # fmt: skip
    service.ag_ui = LoadingAgUiDoor(parts)
    read_groups(deciders, slack.client if slack is not None else None, None)
    names = people_names(slack)
    service.admin = open_console(settings, store, chain=ChainCheck(store), people=names)
    if loading is not None:  # the adapter is made once the SDK is in (Server.start)
        service.loading_teams = loading.build_with(
            dict(bridge=bridge, channel=channel, store=store, policy=policy, tools=tools,
                 config=teams, router=router, grants=grants, copies=copies,
                 counted=metrics.teams_call if metrics else None),
            deciders, names,
        )  # fmt: skip
    # Copies of requests where their rule's `deliver` says (approvals channel, DMs, Teams).
    bridge.mirror(Delivery(deciders, bridge.find, bridge.undeliverable_copy).rooms)
    return service


class Server:
    """A started service on its port: `await Server.start(settings)`, then `await stop()`."""

    def __init__(self, settings: Settings, service: Service, runner: web.AppRunner) -> None:
        self.settings = settings
        self.service = service
        self.runner = runner
        self._stopped = False
        self.socket_mode: SocketMode | None = None
        self.stopping = asyncio.Event()  # set by a signal, or a failure it cannot go on after
        self.failure: StartupError | None = None  # that failure: serve exits with its line
        self.metrics_runner: web.AppRunner | None = None  # /metrics, on its own port

    def fail(self, failure: StartupError) -> None:
        """Stop serving for a failure no retry mends (Slack refused SLACK_APP_TOKEN)."""
        if self.failure is None:
            self.failure = failure
        self.stopping.set()

    @classmethod
    async def start(
        cls, settings: Settings, *, tracing_for: TracingFor = tracing_from_environment,
        import_teams: ImportTeams = import_teams_app,
    ) -> Server:  # fmt: skip
        service = await build_service(settings, tracing_for, import_teams)

        async def health() -> bool:
            return service.ready

        slack, teams = service.slack, service.loading_teams
        runs = service.bridge.runs
        readiness = Readiness(
            service.store,
            started=lambda: service.ready,
            worker=runs.worker_id if runs is not None else None,
        )
        metrics = service.metrics
        slack_route: Handler | None = slack.handle if slack is not None else None
        teams_route: Handler | None = teams.handle if teams is not None else None
        if metrics is not None:  # each ack counted and timed
            slack_route = slack_route and metrics.acks("slack", slack_route)
            teams_route = teams_route and metrics.acks("teams", teams_route)
        app = build_web_app(
            health=health,
            slack=slack_route,
            teams=teams_route,
            ready=readiness.handle,
            mounts=[
                m.mount for m in (service.doors, service.ag_ui, service.admin) if m is not None
            ],
            middlewares=[service.tracing.middleware()] if service.tracing is not None else [],
        )
        # Requests in flight get 5 s to finish at shutdown: a worker exits within 10 s.
        runner = AppRunner(app, handle_signals=False, shutdown_timeout=5.0)
        await runner.setup()
        server = cls(settings, service, runner)
        try:
            with listening_step(settings.host, settings.port):
                await web.TCPSite(runner, settings.host, settings.port).start()
            await server._serve_metrics()
            if slack is not None:
                with slack_step(settings.slack_api_url):
                    await slack.start()
            if teams is not None:  # ready once it is in: its import began in build_service
                service.teams = await teams.load()
            await service.bridge.start()  # first: what expired while down is not escalated
            if service.escalations is not None:
                await service.escalations.start()
            service.sealer = AuditSealer(service.store)
            service.sealer.start()
            if service.doors is not None:
                await service.doors.start()
            if service.ag_ui is not None:
                await service.ag_ui.start()
            server.socket_mode = await _start_socket_mode(settings, service, server.fail)
        except BaseException:
            await server.stop()
            raise
        if service.doors is not None and settings.public_url is None:  # said once, here
            log.warning("HITL_PUBLIC_URL is unset: the A2A AgentCard names the address each "
                        "caller reached (%s here); set HITL_PUBLIC_URL to the address agents "
                        "use", server.url)  # fmt: skip
        service.ready = True
        return server

    async def _serve_metrics(self) -> None:
        """`/metrics` on HITL_METRICS_ADDRESS, a port of its own (never the public one)."""
        listen, metrics = self.settings.metrics_listen, self.service.metrics
        if listen is None or metrics is None:
            return
        self.metrics_runner = web.AppRunner(metrics.web_app(), handle_signals=False)
        await self.metrics_runner.setup()
        host, port = listen
        with listening_step(host, port, "HITL_METRICS_ADDRESS", "HITL_METRICS_ADDRESS"):
            await web.TCPSite(self.metrics_runner, host, port).start()

    @property
    def metrics_url(self) -> str | None:
        """Where /metrics is served, once started; None when it is not."""
        if self.metrics_runner is None or not self.metrics_runner.addresses:
            return None
        host, port = self.metrics_runner.addresses[0][:2]
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{port}/metrics"

    @property
    def url(self) -> str:
        host, port = self.runner.addresses[0][:2]
        return f"http://{host}:{port}"

    def serving_fields(self) -> dict[str, str | list[str]]:
        """What is served where: the version, the address, the surfaces, the doors, the
        database (its password as ***) and this worker's name. No secret is in it."""
        service = self.service
        surfaces = []
        if service.slack is not None:
            how = "Socket Mode" if self.socket_mode is not None else f"HTTP {SLACK_PATH}"
            surfaces.append(f"Slack ({how})")
        if service.teams is not None:
            surfaces.append(f"Teams ({TEAMS_PATH})")
        doors = [f"API {API_PATH}", f"MCP {MCP_PATH}", f"A2A {A2A_PATH}"]
        if service.doors is None:
            doors = []
        if service.admin is not None:
            doors.append(f"admin console {ADMIN_PATH}")
        runs = service.bridge.runs
        if self.metrics_url is not None:
            doors.append(f"metrics {self.metrics_url}")
        return {
            "version": _version(), "url": self.url, "surfaces": surfaces, "doors": doors,
            "database": shown_url(self.settings.database_url),
            "worker": runs.worker_id if runs is not None else "unnamed",
        }  # fmt: skip

    def serving_line(self) -> str:
        """The start's line: `serving_fields` said in words."""
        said = self.serving_fields()
        return (
            f"hitl-bridge serving on {said['url']} (version {said['version']}; "
            f"{', '.join(said['surfaces'])}; doors: {', '.join(said['doors']) or 'none'}; "
            f"database {said['database']}; worker {said['worker']})"
        )

    async def stop(self) -> None:
        """Stop taking requests, let those in flight (acks) finish, then close the rest.

        Open requests stay pending and runs are released for another worker (or this one,
        restarted) to resume: a shutdown is not an answer. A second call does
        nothing (the store is closed by the first).
        """
        if self._stopped:
            return
        self._stopped = True
        self.service.ready = False
        self.service.bridge.suspend()
        if self.socket_mode is not None:
            await self.socket_mode.close_async()  # type: ignore[no-untyped-call]
        if self.service.doors is not None:
            with contextlib.suppress(Exception):
                await self.service.doors.stop_waiting()
        await self.runner.cleanup()
        if self.metrics_runner is not None:
            await self.metrics_runner.cleanup()
        await _close(self.service)


async def serve(settings: Settings) -> int:
    """Run until SIGTERM or SIGINT; returns the exit status."""
    server = await Server.start(settings)
    # What is loaded by now (modules, the SDKs' models, the service) lives as long as the
    # process: keep it out of the cyclic GC, whose full passes over it (~250k objects) stalled
    # the event loop, and so every ack, for 100-250 ms under load (bench/slack_ack_latency.py).
    gc.collect()
    gc.freeze()
    frozen = asyncio.create_task(_freeze_once_loaded(server.service))  # the MCP SDK, too
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, server.stopping.set)
    log.info("%s", server.serving_line(), extra=server.serving_fields())
    try:
        await server.stopping.wait()
    finally:
        frozen.cancel()
        await server.stop()
    if server.failure is not None:
        raise server.failure
    return 0


def _version() -> str:
    """This package's version (`0` when run from a checkout that is not installed)."""
    try:
        return metadata.version("hitl-bridge")
    except metadata.PackageNotFoundError:
        return "0"


async def _freeze_once_loaded(service: Service) -> None:
    """Keep what the MCP, A2A and AG-UI doors load after the start (adapters/serve/lazy_import.py)
    out
    of the cyclic GC too, once it is in."""
    if service.doors is not None:
        with contextlib.suppress(Exception):
            await service.doors.mcp.loaded()
        with contextlib.suppress(Exception):
            await service.doors.a2a.loaded()
    if service.ag_ui is not None:
        with contextlib.suppress(Exception):
            await service.ag_ui.loaded()
    gc.collect()
    gc.freeze()


async def _start_socket_mode(
    settings: Settings, service: Service, refused: Callable[[StartupError], None]
) -> SocketMode | None:
    """Socket Mode when SLACK_APP_TOKEN is set: Slack connects out, no public URL needed.
    A token Slack refuses stops the start, or later (`refused`) the service."""
    if settings.slack_app_token is None or service.slack is None:
        return None
    from adapters.surfaces.slack.socket_mode import SocketMode

    token = settings.slack_app_token.get_secret_value()
    with slack_step(settings.slack_api_url, "SLACK_APP_TOKEN"):
        return await SocketMode.start(service.slack.app, token, refused)


async def _close(service: Service) -> None:
    if service.loading_teams is not None:
        await service.loading_teams.cancel()
    if service.doors is not None:
        with contextlib.suppress(Exception):
            await service.doors.close()
    if service.slack is not None:
        with contextlib.suppress(Exception):
            await service.slack.close()
    if service.teams is not None:
        with contextlib.suppress(Exception):
            await service.teams.close()
    if service.escalations is not None:
        await service.escalations.stop()
    if service.ag_ui is not None:
        await service.ag_ui.close()
    await service.bridge.close()
    # After the bridge: its last edits and card updates still use these clients.
    if service.slack is not None:
        await service.slack.close_clients()
    if service.teams is not None:
        await service.teams.close_clients()
    if service.agent is not None:
        await service.agent.close()
    provider = service.channel.provider
    if isinstance(provider, TracedProvider):
        provider = provider.inner
    if service.metrics is not None:
        from adapters.ops.metrics import MeteredModel

        if isinstance(provider, MeteredModel):
            provider = provider.inner
    if isinstance(provider, AnthropicAIProvider):
        await provider.close()
    if service.sealer is not None:  # after the bridge: its last settles are sealed too
        await service.sealer.stop()
    await service.store.close()
    if service.tracing is not None:  # last: the spans of the shutdown go too
        await service.tracing.close()
