"""The admin views of the `hitl` commands: every room's open requests and grants, the audit
log (`audit [@user] [tool] [since]`), and cancelling an open request (`cancel <id> [reason]`).

Only HITL_ADMINS see them, and only privately. Someone else asking is refused in one line and
the attempt is an audit line (`admin.refused`); each admin view used is one too
(`admin.command`): who looked at what is part of the record.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from bot.audit.refusals import AuditedRequests
from bot.commands.answers import LISTED, audit_lines, grant_lines, pending_lines, short
from bot.commands.audit_filter import AuditQueryError, read_audit_query
from bot.gates.grants import Grants
from bot.records import AuditEntry
from bot.requests.router import Refused, Router
from bot.words.phrases import Phrase, joined

ADMIN_ONLY = ("audit", "cancel")  # views no one else has (pending and grants: of this room)
REFUSED = "admin.refused"
USED = "admin.command"
PRIVATE_ONLY = Phrase("Ask me that in a private chat: a reply here is seen by everyone.")
NOT_ADMIN = Phrase("Only the bridge's admins may do that; the attempt is recorded.")
_REASON = 500  # characters of a cancel's reason


@dataclass(frozen=True, slots=True)
class Asker:
    """Who typed a command (as the platform authenticated them), what, and whether the
    answer reaches them alone."""

    user: str
    text: str
    admin: bool
    private: bool


@dataclass
class Admin:
    store: AuditedRequests
    grants: Grants | None
    router: Router | None
    command: str
    surface: str
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)

    async def answer(self, asked: str, words: list[str], asker: Asker) -> list[Phrase]:
        """An admin view, once the asker is known to be an admin asking privately."""
        if not asker.admin:
            await self._audit(REFUSED, asker, asked)
            return [NOT_ADMIN]
        if not asker.private:
            return [PRIVATE_ONLY]
        if asked == "cancel" and words:
            return await self._cancel(words[0], asker)
        if asked == "audit":
            return await self._audit_view(words, asker)
        if asked == "pending":
            await self._audit(USED, asker, asked)
            return pending_lines(await self.store.list_pending(), everywhere=True)
        if asked == "grants" and self.grants is not None:
            await self._audit(USED, asker, asked)
            live = await self.grants.list(limit=LISTED + 100)
            return grant_lines(live, self.command, everywhere=True)
        return self.help()

    def help(self) -> list[Phrase]:
        c = self.command
        return [
            Phrase(f"Admins: `{c} pending` and `{c} grants` list every room's."),
            Phrase(f"`{c} audit [@user] [tool] [since]`: the latest audit lines."),
            Phrase(f"`{c} cancel <id> [reason]`: cancel an open request."),
        ]

    async def _audit_view(self, words: list[str], asker: Asker) -> list[Phrase]:
        try:
            query = read_audit_query(words, self.clock())
        except AuditQueryError as err:
            return [Phrase("Cannot read that: {why}.", values={"why": str(err)}), *self.help()]
        await self._audit(USED, asker, "audit")
        entries = await self.store.list_audit(
            actor_id=query.actor_id, tool=query.tool, since=query.since, limit=LISTED
        )
        return audit_lines(entries)

    async def _cancel(self, request_id: str, asker: Asker) -> list[Phrase]:
        """Cancel through the router: the message edited, the model told, the settle audited."""
        if self.router is None:
            return [Phrase("Requests cannot be cancelled from here.")]
        reason = _reason(asker.text)
        outcome = await self.router.cancel(short(request_id, 80), asker.user, reason)
        await self._audit(USED, asker, "cancel")
        if isinstance(outcome, Refused):
            head = Phrase("Cannot cancel `{id}`:", values={"id": short(request_id, 80)})
            return [joined(head, outcome.notice)]
        values = {"id": outcome.record.id, "tool": short(outcome.record.tool_name)}
        return [Phrase("Cancelled `{id}` ({tool}); whoever waited on it is told.", values=values)]

    async def _audit(self, action: str, asker: Asker, command: str) -> None:
        detail = {"command": short(asker.text.strip() or command, 200), "surface": self.surface}
        await self.store.append_audit(AuditEntry(action, self.clock(), None, asker.user, detail))


def _reason(text: str) -> str:
    """The words after `cancel <id>`, as typed (spaces and all), cut to `_REASON`."""
    parts = text.strip().split(None, 2)
    return short(parts[2].strip(), _REASON) if len(parts) == 3 else ""
