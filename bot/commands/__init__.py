"""The `hitl` commands people type in a conversation, answered the same on every surface
(bot/commands/commands.py), their admin views (admin.py) and the lines both answer with
(lines.py)."""

from bot.commands.answers import LISTED, grant_lines, pending_lines
from bot.commands.commands import Commands, Place, open_requests_of

__all__ = ["LISTED", "Commands", "Place", "grant_lines", "open_requests_of", "pending_lines"]
