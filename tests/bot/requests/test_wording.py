"""The line under a request withdrawn because its turn was stopped (bot/bridge/turns.py)."""

from __future__ import annotations

from bot.human_input import RenderState
from bot.requests.wording import status_line


def line(reason: str | None, settled_by: str | None = "U0ALICE") -> str:
    return status_line(
        RenderState.CANCELLED, actor_id="U0ALICE", expires_at=None,
        settled_by=settled_by, settled_at=None, reason=reason,
    ).plain  # fmt: skip


def test_a_request_of_a_stopped_turn_says_who_stopped_it() -> None:
    assert line("Stopped by <@U0ALICE>") == "Stopped by U0ALICE"


def test_other_withdrawals_read_as_before() -> None:
    assert line("Cancelled by its requester") == "Withdrawn: no answer is needed any more."
    assert line("Stopped by someone", settled_by=None).startswith("Withdrawn")
    assert line("Stopping soon") == "Withdrawn: no answer is needed any more."
