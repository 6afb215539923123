"""Teams' people by name (bot.bridge.people.PeopleDirectory): the names their activities carried.

Teams has no lookup by AAD object id without Microsoft Graph, but every activity names its
sender (`from.name`), which the surface keeps (surface.People): a person who has written to
the bot, or clicked one of its cards, is known by name; anyone else shows as their id.
"""

from __future__ import annotations

import uuid

from adapters.surfaces.teams.surface import People


class TeamsPeople:
    """Names of the people the Teams surface has heard from, by AAD object id."""

    def __init__(self, people: People) -> None:
        self.people = people

    def owns(self, person_id: str) -> bool:
        try:
            uuid.UUID(person_id)
        except ValueError:
            return False
        return True

    async def name(self, person_id: str) -> str | None:
        return self.people.name(person_id)
