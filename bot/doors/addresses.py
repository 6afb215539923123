"""Who a request from outside (the HTTP API, MCP) is for: the `to` string, read.

- `slack:U0123ABCD`: a direct message to that Slack user (the request is theirs);
- `slack:C0123ABCD`: a message in that channel, with no actor (anyone there may answer);
- `slack:C0123ABCD/U0123ABCD`: in the channel, addressed to that user;
- any Slack form with `@<thread_ts>`: posted in that thread;
- `teams:<conversation id>`: in that Teams conversation (anyone there may answer), or
  `teams:<conversation id>/<AAD object id>` addressed to that person;
- `email:a@b.c`: the Slack user with that e-mail address, in a direct message.

Reading is pure; finding the room (opening a DM, looking an e-mail up) is the surface's, which
raises `UnknownAddressError` for what it cannot reach.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_ADDRESS = 500  # characters: Teams conversation ids run to ~200
_EMAIL = re.compile(r"^[^@\s/]{1,64}@[^@\s/]{1,253}\.[^@\s/.]{2,63}$")
_SLACK_ID = re.compile(r"^[A-Z0-9]{2,}$")
_THREAD_TS = re.compile(r"^[0-9]{1,12}\.[0-9]{1,8}$")


class UnknownAddressError(ValueError):
    """`to` names nobody this bridge can reach: `str(err)` says which and why, in one line."""


@dataclass(frozen=True, slots=True)
class Address:
    """A `to` string, read: the surface (`slack`, `teams`, `email`), where, who, which thread."""

    surface: str
    where: str  # a channel or conversation id; a user id for a Slack DM; the e-mail address
    user: str | None = None  # who the request is for, within `where`
    thread: str | None = None  # Slack: the thread's ts

    @property
    def text(self) -> str:
        """The address as written back (in listings and audit lines)."""
        user = f"/{self.user}" if self.user else ""
        thread = f"@{self.thread}" if self.thread else ""
        return f"{self.surface}:{self.where}{user}{thread}"


@dataclass(frozen=True, slots=True)
class Addressee:
    """Where a surface will post a request, and whose it is (None: anyone there)."""

    room_id: str
    actor_id: str | None


def read_address(to: str) -> Address:
    """`to` read into an Address; UnknownAddressError naming what is wrong with it."""
    if len(to) > MAX_ADDRESS:
        raise UnknownAddressError(f"the address is longer than {MAX_ADDRESS} characters")
    surface, colon, rest = to.partition(":")
    if not colon or not rest:
        raise UnknownAddressError(
            f"'{to[:80]}' is not an address: use slack:<user or channel id>, "
            "teams:<conversation id> or email:<address>"
        )
    if surface == "slack":
        return _slack(to, rest)
    if surface == "teams":
        where, _, user = rest.partition("/")
        if not where or not where.isprintable() or (user and not user.isprintable()):
            raise UnknownAddressError(f"'{to[:80]}' is not a Teams conversation id")
        return Address("teams", where, user or None)
    if surface == "email":
        if not _EMAIL.fullmatch(rest):
            raise UnknownAddressError(f"'{rest[:80]}' is not an e-mail address")
        return Address("email", rest.lower())
    raise UnknownAddressError(f"'{surface[:40]}' is not a surface: use slack:, teams: or email:")


def _slack(to: str, rest: str) -> Address:
    head, _, thread = rest.partition("@")
    where, _, user = head.partition("/")
    if not _SLACK_ID.fullmatch(where) or (user and not _SLACK_ID.fullmatch(user)):
        raise UnknownAddressError(f"'{to[:80]}' is not a Slack user or channel id")
    if thread and not _THREAD_TS.fullmatch(thread):
        raise UnknownAddressError(f"'{thread[:40]}' is not a Slack thread timestamp")
    if where[0] in "UW" and user:
        raise UnknownAddressError(f"'{to[:80]}': a user cannot be addressed within a user")
    return Address("slack", where, user or None, thread or None)
