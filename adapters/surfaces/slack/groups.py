"""Slack user groups (`slack:S…`) read for the directory (bot/policies/directory.py) with
`usergroups.users.list` (the bot token needs `usergroups:read`)."""

from __future__ import annotations

from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.surfaces.slack.calls import SlackCallError, call_slack_or_fail, slack_error
from bot.policies.directory import GroupUnreadable

__all__ = ["PREFIX", "SlackGroups"]

PREFIX = "slack:"
# Errors about the group or the workspace's plan, which no retry changes: answered at once
# (the retried call would otherwise wait out its backoff first).
GROUP_ERRORS = frozenset({"no_such_subteam", "plan_upgrade_required", "paid_teams_only"})


class SlackGroups:
    """A `GroupSource` for Slack user groups: `members("slack:S0OPSTEAM")` is their `U…` ids."""

    def __init__(self, client: AsyncWebClient) -> None:
        self._client = client

    async def members(self, group: str) -> frozenset[str]:
        usergroup = group.removeprefix(PREFIX)
        if not usergroup:
            raise GroupUnreadable(group, "no Slack user group id")
        try:
            # One page: the method takes no cursor, Slack answers every member at once.
            response = await call_slack_or_fail(
                lambda: self._users(group, usergroup), "usergroups.users.list"
            )
        except SlackCallError as err:
            raise GroupUnreadable(group, str(err)) from None
        users: Any = response.get("users")
        if not isinstance(users, list) or not all(isinstance(user, str) for user in users):
            raise GroupUnreadable(group, "Slack usergroups.users.list answered without users")
        return frozenset(users)

    async def _users(self, group: str, usergroup: str) -> Any:
        try:
            return await self._client.usergroups_users_list(usergroup=usergroup)
        except SlackApiError as err:
            if (error := slack_error(err)) in GROUP_ERRORS:
                # Raised from inside the call: call_slack_or_fail lets it through, unretried.
                raise GroupUnreadable(
                    group, f"Slack usergroups.users.list failed: {error}"
                ) from None
            raise
