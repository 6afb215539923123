"""Where a request from a door (bot/doors.py) is posted in Slack: its address, found.

A user's address is their DM with the app (`conversations.open`); an e-mail address is the
user with it (`users.lookupByEmail`), in that DM; a channel's is checked to exist
(`conversations.info`). What Slack says does not exist is an UnknownAddressError naming it;
anything else (Slack unreachable after the retries) is a SlackCallError.
"""

from __future__ import annotations

from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.calls import call_slack_or_fail, slack_error
from adapters.slack.rooms import SlackRoom
from bot.addresses import Address, Addressee, UnknownAddressError

NOT_FOUND = frozenset({"user_not_found", "users_not_found", "channel_not_found"})
USER_IDS = "UW"  # the first letter of a user's id (W: Enterprise Grid)


async def find(client: AsyncWebClient, address: Address) -> Addressee:
    """The room and actor `address` names in Slack (see the module's docstring)."""
    if address.surface == "email":
        user = await _call(client.users_lookupByEmail, f"no Slack user has {address.where}",
                           email=address.where)  # fmt: skip
        return await _direct(client, str(user["user"]["id"]), None)
    if address.where[0] in USER_IDS:
        return await _direct(client, address.where, address.thread)
    await _call(client.conversations_info, f"no Slack channel {address.where} for this app",
                channel=address.where)  # fmt: skip
    room = SlackRoom(address.where, address.thread or "")
    return Addressee(room.room_id, address.user)


async def _direct(client: AsyncWebClient, user: str, thread: str | None) -> Addressee:
    opened = await _call(client.conversations_open, f"no Slack user {user}", users=user)
    room = SlackRoom(str(opened["channel"]["id"]), thread or "")
    return Addressee(room.room_id, user)


async def _call(method: Any, unknown: str, **args: str) -> Any:
    """The call's answer; UnknownAddressError(`unknown`) if Slack says there is no such one."""

    async def call() -> Any:
        try:
            return await method(**args)
        except SlackApiError as err:
            if slack_error(err) in NOT_FOUND:
                raise UnknownAddressError(unknown) from None
            raise

    return await call_slack_or_fail(call, method.__name__.replace("_", "."))
