"""Slack's people by name (bot.bridge.people.PeopleDirectory): `users.info`, the display name
first."""

from __future__ import annotations

import re
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

USER_ID = re.compile(r"^[UW][A-Z0-9]{2,}$")  # a person (U…, or W… on Enterprise Grid)


class SlackPeople:
    """Names of the workspace's people, read with `users.info` (the users:read scope)."""

    def __init__(self, client: AsyncWebClient) -> None:
        self.client = client

    def owns(self, person_id: str) -> bool:
        return USER_ID.fullmatch(person_id) is not None

    async def name(self, person_id: str) -> str | None:
        try:
            response = await self.client.users_info(user=person_id)
        except SlackApiError as err:
            if err.response.get("error") == "user_not_found":
                return None
            raise
        return display_name(response.get("user") or {})


def display_name(user: dict[str, Any]) -> str | None:
    """What Slack shows for a person: the display name, else the real name, else the handle."""
    profile = user.get("profile") or {}
    for name in (profile.get("display_name"), profile.get("real_name"), user.get("real_name"),
                 user.get("name")):  # fmt: skip
        if isinstance(name, str) and name.strip():
            return name.strip()
    return None
