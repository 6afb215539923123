"""Where a request from a door (bot/doors/service.py) is posted in Slack: its address, found.

A user's address is their DM with the app (`conversations.open`); an e-mail address is the
user with it (`users.lookupByEmail`), in that DM; a channel's is checked to exist
(`conversations.info`). What Slack says does not exist is an UnknownAddressError naming it;
anything else (Slack unreachable after the retries) is a SlackCallError. What was found is
kept for a minute (`SlackAddresses`): a door asking the same channel or person again costs no
Web API call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from time import monotonic
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.surfaces.slack.calls import call_slack_or_fail, slack_error
from adapters.surfaces.slack.rooms import SlackRoom
from bot.doors.addresses import Address, Addressee, UnknownAddressError

NOT_FOUND = frozenset({"user_not_found", "users_not_found", "channel_not_found"})
USER_IDS = "UW"  # the first letter of a user's id (W: Enterprise Grid)
TTL = 60.0  # seconds a found address is kept


class SlackAddresses:
    """Addresses found in Slack, each kept `ttl` seconds (a found one only: a person added or
    a channel the app joined a moment later is found at the next try)."""

    def __init__(
        self, client: AsyncWebClient, *, ttl: float = TTL, clock: Callable[[], float] = monotonic
    ) -> None:
        self.client = client
        self.ttl, self.clock = ttl, clock
        self._found: dict[str, tuple[float, str]] = {}  # "email:a@b.c" -> (until, its value)

    async def find(self, address: Address) -> Addressee:
        """The room and actor `address` names in Slack (see the module's docstring)."""
        if address.surface == "email":
            user = await self._kept(address.text, self._user_by_email, address.where)
            return await self._direct(user, None)
        if address.where[0] in USER_IDS:
            return await self._direct(address.where, address.thread)
        await self._kept(f"channel:{address.where}", self._channel, address.where)
        room = SlackRoom(address.where, address.thread or "")
        return Addressee(room.room_id, address.user)

    async def _direct(self, user: str, thread: str | None) -> Addressee:
        channel = await self._kept(f"dm:{user}", self._dm, user)
        return Addressee(SlackRoom(channel, thread or "").room_id, user)

    async def _kept(self, key: str, look_up: Callable[[str], Awaitable[str]], what: str) -> str:
        now = self.clock()
        kept = self._found.get(key)
        if kept is not None and now < kept[0]:
            return kept[1]
        found = await look_up(what)
        self._found[key] = (now + self.ttl, found)
        return found

    async def _user_by_email(self, email: str) -> str:
        answer = await _call(self.client.users_lookupByEmail, f"no Slack user has {email}",
                             email=email)  # fmt: skip
        return str(answer["user"]["id"])

    async def _dm(self, user: str) -> str:
        opened = await _call(self.client.conversations_open, f"no Slack user {user}", users=user)
        return str(opened["channel"]["id"])

    async def _channel(self, channel: str) -> str:
        await _call(self.client.conversations_info, f"no Slack channel {channel} for this app",
                    channel=channel)  # fmt: skip
        return channel


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
