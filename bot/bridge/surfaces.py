"""What every surface (Slack, Teams, the console) gives the bridge, registered in one call.

A surface owns the rooms whose ids start with its `room_prefix`. `Bridge.attach(surface)`
registers all of it at once, so no surface can forget a part:

- `observe(update)`: every transition of every request in its rooms (and of the requests
  mirrored to them), to post and edit the request's message;
- `say(room_id, text)`: the agent's words in one of its rooms when no turn of the surface's
  own is there to post them: a run resumed after a restart, or adopted from a dead worker;
- `find(address)`: the room and actor an address of a door's request names (bot/doors/addresses.py),
  or UnknownAddressError.

Answers, and refused attempts to answer, go the other way: a surface hands each to the core's
router (bot/requests/router.py), which decides it and audits a refusal under the surface's
`name`.
"""

from __future__ import annotations

from typing import Protocol

from bot.doors.addresses import Address, Addressee
from bot.human_input import RequestUpdate


class Surface(Protocol):
    """A chat platform the bridge shows requests on, and speaks for the agent in."""

    @property
    def name(self) -> str:
        """The surface's name ("slack"): audit lines and message references carry it."""
        ...

    @property
    def room_prefix(self) -> str:
        """The start of every room id that is this surface's ("slack:")."""
        ...

    async def observe(self, update: RequestUpdate) -> None:
        """Show one transition of a request in one of the surface's rooms."""
        ...

    async def say(self, room_id: str, text: str) -> None:
        """Post the agent's words in one of the surface's rooms."""
        ...

    async def find(self, address: Address) -> Addressee:
        """Where a request addressed so is posted, and whose it is; UnknownAddressError (one
        line naming it) for an address this surface cannot reach."""
        ...


class Claims(Protocol):
    """The store's port for one-time claims (the `claims` table): a chat event the platform
    delivered twice, or to two workers, is handled by whoever claims its key first."""

    async def claim_once(self, key: str) -> bool:
        """True for the first caller of `key` across every worker (event de-duplication)."""
        ...
