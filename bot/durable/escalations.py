"""Escalations (docs/policies.md): each step fired at its offset, once, on any worker.

An open request whose policy rule has `escalate` steps carries in its row how many have fired
(`escalation_step`) and when the next is due (`next_escalation_at`): durable deadlines, swept
by the scheduler of bot/durable/sweep.py over those columns. A due step fires by a compare-and-set
on the row, with its audit line: of several workers sweeping at once exactly one fires it; one
that fell due while every worker was down fires at start (late, once); one at or after the
request's deadline never fires (bot/policies/escalation.py). The worker that fired it tells the
surfaces: the request's message edited (who may answer now, the reminder), and one message of
its own naming people (the approvers added; on a reminder, those who have not voted).
"""

from __future__ import annotations

import dataclasses
import logging
from datetime import datetime, timedelta
from typing import Any, Protocol

from bot.durable.sweep import DeadlineScheduler, utc_now
from bot.policies.escalation import Fired, fired_step, step_at
from bot.records import AuditEntry, EscalationState, RequestRecord
from bot.requests.router import Router

log = logging.getLogger(__name__)

REMINDED = "request.reminded"  # the audit line of a step that only reminds
ESCALATED = "request.escalated"  # of a step that adds approvers (and may remind too)
SAME_MOMENT = timedelta(milliseconds=1)  # a time read back from a database, rounded


class EscalationRows(Protocol):
    """Where requests' escalations stand (bot/store/escalations.py on a SqlStore)."""

    async def due_requests(self, now: datetime, limit: int = 500) -> list[RequestRecord]:
        """Pending requests whose next step is due at `now`, earliest first."""
        ...

    async def next_deadline(self) -> datetime | None:
        """When the earliest next step of a pending request is due."""
        ...

    async def advance(
        self,
        request_id: str,
        steps: tuple[int, int],
        next_at: datetime | None,
        entry: AuditEntry | None = None,
    ) -> bool:
        """Compare-and-set the fired steps from `steps[0]` to `steps[1]`, the next due at
        `next_at`, with `entry` audited; True only for the one caller that moved it."""
        ...


class Escalations:
    """Fires requests' escalation steps under the router's policy, and tells its surfaces.
    `start()` fires what fell due while the process was down; `poke(at)` wakes it for a
    step due earlier than it sleeps (`HumanInputHandler.add_escalation_listener`)."""

    def __init__(
        self, rows: EscalationRows, router: Router, *, recheck_interval: float = 60.0
    ) -> None:
        self.rows = rows
        self.router = router
        self._scheduler = DeadlineScheduler(
            rows, self.fire, recheck_interval=recheck_interval, name="escalation"
        )

    async def start(self) -> None:
        await self._scheduler.start()

    async def stop(self) -> None:
        await self._scheduler.stop()

    def poke(self, at: datetime) -> None:
        self._scheduler.poke(at)

    async def fire(self, record: RequestRecord) -> None:
        """Fire each step of `record` due by now, in order, each once across every worker
        (a step another worker fired first stops this one); then keep its next step's time."""
        rule = self.router.deciders.rule(record)
        now = utc_now()
        step = record.escalation_step
        while True:
            due = step_at(rule, step, record.created_at, record.expires_at)
            if due is None or due > now:
                break
            fired = fired_step(rule, step)
            after = step_at(rule, step + 1, record.created_at, record.expires_at)
            entry = _audit_entry(record, fired, now)
            if not await self.rows.advance(record.id, (step, step + 1), after, entry):
                return  # fired elsewhere, or the request ended
            step += 1
            record = dataclasses.replace(record, escalation=EscalationState(step, after))
            await self._tell(record, fired)
        if not _same(due, record.next_escalation_at):  # the policy file changed since
            await self.rows.advance(record.id, (step, step), due)

    async def _tell(self, record: RequestRecord, fired: Fired) -> None:
        """The request's message edited and the step said, on every surface showing it."""
        handler = self.router.handler_for(record.channel_id)
        if handler is None:
            log.warning("request %s escalated with no handler to tell", record.id)
            return
        tally = await self.router.tally_of(record)
        handler.show_again(record, tally, self.router.deciders.audience(record, fired))


def _audit_entry(record: RequestRecord, fired: Fired, at: datetime) -> AuditEntry:
    detail: dict[str, Any] = {
        "step": fired.index,
        "after_seconds": fired.after_seconds,
        "remind": fired.remind,
    }
    if fired.added:
        detail["approvers_added"] = [str(principal) for principal in fired.added]
    action = REMINDED if fired.remind and not fired.added else ESCALATED
    return AuditEntry(action, at, request_id=record.id, detail=detail)


def _same(one: datetime | None, other: datetime | None) -> bool:
    if one is None or other is None:
        return one is other
    return abs(one - other) < SAME_MOMENT
