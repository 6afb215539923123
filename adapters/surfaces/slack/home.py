"""The App Home tab: a person's open requests with their controls and, for an admin, the latest
decisions and time-to-decision figures (bot/reports/home.py decides what; this draws and publishes
it).

Each request is drawn by the very function that draws its message
(adapters/surfaces/slack/messages.py),
so its buttons carry the same action ids and values: a click in App Home reaches the same
listener and the same router as a click in the channel. A home view holds at most 100 blocks:
requests that do not fit are counted in an "and N more" line.

The tab is published when its person opens it (`app_home_opened`) and again whenever one of
their requests changes, for the people who opened it since this worker started (cheap: one
`views.publish` per change of a request of someone who looks at the tab).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from adapters.surfaces.slack.blocks import Block, context, header, section
from adapters.surfaces.slack.calls import call_slack
from adapters.surfaces.slack.messages import render_message
from adapters.surfaces.slack.text import MODAL_BLOCKS, SECTION_TEXT, SLACK, truncate
from bot.human_input import RequestRows, RequestUpdate
from bot.human_tools.tool import HumanTool
from bot.reports.home import AdminHome, home_of
from bot.requests.access import AnswerPolicy
from bot.requests.router import Router

log = logging.getLogger(__name__)

HOME = "app_home_opened"
DIVIDER: Block = {"type": "divider"}


def draw_home(requests: Sequence[list[Block]], admin: AdminHome | None) -> dict[str, Any]:
    """The home view: a header, each request's blocks (a divider between them) while they
    fit in MODAL_BLOCKS beside the admin's part, then how many did not."""
    tail = _admin_blocks(admin)
    blocks: list[Block] = [header("Waiting for your answer")]
    if not requests:
        blocks.append(section("Nothing waits for your answer."))
    shown = 0
    for drawn in requests:
        room = MODAL_BLOCKS - len(tail) - 1  # one left for "and N more"
        if len(blocks) + len(drawn) + 1 > room:
            break
        blocks += [*drawn, DIVIDER]
        shown += 1
    if shown < len(requests):
        blocks.append(context(f"… and {len(requests) - shown} more: `/hitl mine` lists them all."))
    return {"type": "home", "blocks": blocks + tail}


def _admin_blocks(admin: AdminHome | None) -> list[Block]:
    if admin is None:
        return []
    lines = "\n".join(line.render(SLACK) for line in admin.decisions)
    return [
        header("Latest decisions"),
        section(truncate(lines, SECTION_TEXT)),
        context(admin.figures.render(SLACK)),
    ]


class HomeTab:
    """Publishes people's App Home tabs (views.publish)."""

    def __init__(
        self,
        *,
        client: AsyncWebClient,
        store: RequestRows,
        router: Router,
        tools: Mapping[str, HumanTool],
        later: Callable[[Coroutine[Any, Any, None]], None],
    ) -> None:
        self.client = client
        self.store = store
        self.router = router
        self.policy: AnswerPolicy = router.policy
        self.tools = tools
        self.later = later
        self.viewers: set[str] = set()  # who opened the tab since this worker started
        self._locks: dict[str, asyncio.Lock] = {}  # one publish per person at a time

    async def on_opened(self, event: Mapping[str, Any]) -> None:
        """`app_home_opened` on the Home tab (not the Messages tab): publish it."""
        user = event.get("user")
        if event.get("tab", "home") != "home" or not isinstance(user, str) or not user:
            return
        self.viewers.add(user)
        await self.publish(user)

    async def observe(self, update: RequestUpdate) -> None:
        """A request changed: its person's tab again, if they look at it (after the change is
        shown: never in the way of the request's own message)."""
        if update.actor_id in self.viewers:
            self.later(self.publish(update.actor_id))

    async def publish(self, user: str) -> None:
        """Read the person's home and publish it; one at a time per person, so the last one
        published was read last."""
        async with self._locks.setdefault(user, asyncio.Lock()):
            await self._publish(user)

    async def _publish(self, user: str) -> None:
        home = await home_of(self.store, self.policy, user, datetime.now(UTC))
        drawn = []
        for record in home.mine:
            update = await self.router.update(record)
            drawn.append(render_message(update, self.tools.get(record.tool_name)).blocks)
        view = draw_home(drawn, home.admin)
        await call_slack(
            lambda: self.client.views_publish(user_id=user, view=view), "views.publish"
        )
