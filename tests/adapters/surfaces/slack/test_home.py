"""adapters/surfaces/slack/home.py's drawing: within a home view's 100 blocks, checked as Slack
would."""

from __future__ import annotations

from adapters.surfaces.slack.blocks import Block, section
from adapters.surfaces.slack.home import draw_home
from bot.reports.home import AdminHome
from bot.words.phrases import Phrase
from tests.fakes.slack_api import home_errors


def drawn(n: int, size: int) -> list[list[Block]]:
    """`n` requests of `size` blocks each (the last their actions)."""
    return [
        [*(section(f"request {i} part {j}") for j in range(size - 1)),
         {"type": "actions", "block_id": f"hitl_actions:r{i}", "elements": [
             {"type": "button", "action_id": "hitl_approve", "value": f"r{i}",
              "text": {"type": "plain_text", "text": "Approve"}}]}]
        for i in range(n)
    ]  # fmt: skip


ADMIN = AdminHome(
    [Phrase("• deploy `r1` answered by {by}", {"by": "U0ALICE001"})], Phrase("figures")
)


def test_requests_fill_the_view_and_the_rest_are_counted() -> None:
    view = draw_home(drawn(30, 6), ADMIN)
    blocks = view["blocks"]
    assert home_errors(view) == []
    # header, then 13 requests of 6 blocks and a divider each (92), "and N more", the admin's 3
    assert len(blocks) == 1 + 13 * 7 + 1 + 3 == 96
    assert blocks[-4]["elements"][0]["text"] == "… and 17 more: `/hitl mine` lists them all."
    assert [b["type"] for b in blocks[-3:]] == ["header", "section", "context"]
    assert "<@U0ALICE001>" in blocks[-2]["text"]["text"]


def test_without_requests_or_admin_part() -> None:
    view = draw_home([], None)
    assert home_errors(view) == []
    assert [b["type"] for b in view["blocks"]] == ["header", "section"]
    everything = draw_home(drawn(2, 5), None)
    assert len(everything["blocks"]) == 1 + 2 * 6
    assert "more" not in str(everything["blocks"])


def test_the_largest_request_still_fits() -> None:
    view = draw_home(drawn(3, 50), ADMIN)  # a message holds 50 blocks at most
    assert home_errors(view) == [] and len(view["blocks"]) <= 100
    assert view["blocks"][-4]["elements"][0]["text"].startswith("… and 2 more")
