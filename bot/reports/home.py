"""What a person's home page shows (Slack's App Home tab): their open requests and, for an
admin, the latest decisions and how long decisions take. A surface draws it its own way; the
requests are drawn with the request view every surface already uses, so their controls work
the same wherever they are clicked.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from bot.commands import open_requests_of
from bot.commands.answers import decision_lines
from bot.human_input import RequestRows
from bot.records import RequestRecord
from bot.reports.decision_times import WINDOW, decision_times, figures_line
from bot.requests.access import AnswerPolicy
from bot.words.phrases import Phrase

DECISIONS_READ = 2000  # the latest decisions the figures are computed over (a week's, mostly)


@dataclass(frozen=True, slots=True)
class AdminHome:
    decisions: list[Phrase]  # the latest, one line each
    figures: Phrase  # time to decision: median and 95th percentile over 7 days


@dataclass(frozen=True, slots=True)
class Home:
    mine: list[RequestRecord]  # open, for this person, oldest first
    admin: AdminHome | None  # for admins only


async def home_of(store: RequestRows, policy: AnswerPolicy, user: str, now: datetime) -> Home:
    mine = await open_requests_of(store, user)
    if not policy.is_admin(user):
        return Home(mine, None)
    decided = await store.decided_since(now - WINDOW, DECISIONS_READ)
    times = decision_times(decided, now)
    return Home(mine, AdminHome(decision_lines(decided), figures_line(times)))
