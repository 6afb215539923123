"""A Slack room is a thread: `slack:<channel>:<thread_ts>` (thread_ts empty for a plain DM)."""

from __future__ import annotations

from dataclasses import dataclass

PREFIX = "slack:"


@dataclass(frozen=True, slots=True)
class SlackRoom:
    channel: str
    thread_ts: str  # "" when the conversation is a DM without threads

    @property
    def room_id(self) -> str:
        return f"{PREFIX}{self.channel}:{self.thread_ts}"


def parse_room(room_id: str) -> SlackRoom | None:
    """The Slack room a core room id names, or None for another surface's room."""
    if not room_id.startswith(PREFIX):
        return None
    channel, _, thread_ts = room_id.removeprefix(PREFIX).partition(":")
    return SlackRoom(channel, thread_ts) if channel else None
