"""`hitl-bridge doctor`: every check of adapters/ops/doctor/ and of each surface's doctor module,
composed for the deployment as it is configured, run side by side, printed a line each (or
as JSON with `--json`). Exit status 0 when none failed, 1 otherwise."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from adapters.ops.doctor import agent, model, policy, store, surfaces, webhooks
from adapters.ops.doctor.report import as_json, exit_status, lines
from adapters.ops.doctor.results import Result, failed
from adapters.ops.doctor.running import Check, run_checks
from adapters.serve.settings import Settings, settings_problem
from bot import ConfigurationError

if TYPE_CHECKING:
    import httpx
    from microsoft_teams.api.auth.cloud_environment import CloudEnvironment

    from bot.policies.directory import GroupSource

HTTP_SECONDS = 10.0  # per request to the login endpoint and Graph


async def diagnose(settings: Settings, *, cloud: CloudEnvironment | None = None) -> list[Result]:
    """Every check's results, in a fixed order. `cloud`: Teams' cloud (default: the SDK's)."""
    from adapters.surfaces.slack import doctor as slack
    from adapters.surfaces.teams import doctor as teams

    cloud = cloud or teams.sdk_cloud()
    async with _http() as http:
        sources: dict[str, GroupSource] = {}
        if (slack_groups := slack.group_source(settings)) is not None:
            sources["slack:"] = slack_groups
        if (entra_groups := teams.group_source(settings, cloud, http)) is not None:
            sources["entra:"] = entra_groups
        checks = [
            Check(store.DATABASE, lambda: store.database(settings)),
            Check(surfaces.SURFACES, lambda: surfaces.surfaces(settings, _teams_set_up(settings))),
            Check(slack.BOT_TOKEN, lambda: slack.bot_token(settings)),
            Check(slack.SIGNING, lambda: slack.signing_secret(settings)),
            Check(slack.SOCKET, lambda: slack.socket_mode(settings)),
            Check(teams.TEAMS, lambda: teams.credentials(settings, cloud, http)),
            Check(model.MODEL, lambda: model.model(settings, agent.model_of(settings))),
            Check(agent.AGENT, lambda: agent.agent_file(settings)),
            Check(policy.POLICY, lambda: policy.policy_file(settings, sources)),
            Check(webhooks.WEBHOOKS, lambda: webhooks.webhook_targets(settings)),
            Check(store.ADMIN, lambda: store.admin_console(settings)),
        ]
        return await run_checks(checks)


def _teams_set_up(settings: Settings) -> bool:
    """Whether Teams is set up, even half (its own check says what is missing)."""
    from adapters.surfaces.teams.config import teams_config

    try:
        return teams_config(settings) is not None
    except ConfigurationError:
        return True


@contextlib.asynccontextmanager
async def _http() -> AsyncIterator[httpx.AsyncClient]:
    import httpx

    async with httpx.AsyncClient(timeout=HTTP_SECONDS) as http:
        yield http


@dataclass(frozen=True, slots=True)
class Printed:
    text: str
    status: int


async def doctor(*, machine: bool) -> Printed:
    """The settings read (a bad one is a failed line of its own), then every check."""
    from pydantic import ValidationError

    try:
        settings = Settings()
    except ValidationError as err:
        results = [failed("configuration", settings_problem(err),
                          "correct the variable it names (docs/configuration.md)")]  # fmt: skip
    else:
        results = await diagnose(settings)
    text = as_json(results) if machine else "\n".join(lines(results))
    return Printed(text, exit_status(results))
