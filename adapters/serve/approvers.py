"""Who may answer, for `serve`: the policy file's rules (HITL_POLICY_FILE; without one, the
actor, HITL_APPROVERS and HITL_ADMINS) and the directory that reads the groups they name,
each surface adding its own source once its client exists."""

from __future__ import annotations

from typing import TYPE_CHECKING

from adapters.serve.settings import Settings
from bot.policies.deciders import Deciders
from bot.policies.directory import Directory
from bot.policies.rules import Policy

if TYPE_CHECKING:  # each surface's SDK is imported when that surface is served
    from slack_sdk.web.async_client import AsyncWebClient

    from adapters.surfaces.teams.app import TeamsAdapter


def open_deciders(settings: Settings) -> Deciders:
    """The policy (ConfigurationError, one line with file:line, if its file is wrong) over a
    directory with no sources yet: `read_groups` adds them."""
    policy = Policy.load(settings.policy_file, settings.approvers, settings.admins)
    return Deciders(policy, Directory({}))


def read_groups(
    deciders: Deciders, slack: AsyncWebClient | None, teams: TeamsAdapter | None
) -> None:
    """Slack user groups through Slack's Web API, Entra groups through Microsoft Graph with
    the Teams app's credentials (without them, an Entra group cannot be read: refused)."""
    directory = deciders.directory
    if directory is None:
        return
    if slack is not None:
        from adapters.surfaces.slack.groups import SlackGroups

        directory.add("slack:", SlackGroups(slack))
    if teams is not None and teams.config.authenticated:
        from adapters.surfaces.teams.groups import EntraGroups

        directory.add("entra:", EntraGroups.for_app(teams.app))
