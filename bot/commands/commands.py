"""The `hitl` commands people type in a conversation, answered the same on every surface: what
waits for an answer here or for them anywhere, which tools run unasked here, revoking one of
those grants; and for admins (HITL_ADMINS) the views of every room (bot/commands/admin.py).

A surface hands over the command's words, where it was typed, who typed it (as the platform
authenticated them) and whether its answer is private (Slack's ephemeral reply, a Teams
personal chat); it gets phrases back (bot/requests/wording.py) and writes them its own way: a
Slack mention and date, a Teams name and UTC time. What only the asker may see (`mine`, the
admin views) is answered only privately.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.audit.refusals import AuditedRequests
from bot.commands.admin import ADMIN_ONLY, PRIVATE_ONLY, Admin, Asker
from bot.commands.answers import grant_lines, mine_lines, pending_lines, short, whom
from bot.gates.grants import GrantError, Grants
from bot.human_input import RequestRows
from bot.records import Grant, RequestRecord
from bot.requests.access import AnswerPolicy
from bot.requests.router import Router
from bot.words.phrases import Phrase


@dataclass(frozen=True, slots=True)
class Place:
    """Where a command was typed: the conversation `room_id`, and every room within it (a
    thread's id is the conversation's, `separator`, and the thread's)."""

    room_id: str
    separator: str

    def holds(self, room_id: str) -> bool:
        return room_id == self.room_id or room_id.startswith(self.room_id + self.separator)


async def open_requests_of(store: RequestRows, user: str) -> list[RequestRecord]:
    """The open requests for `user` (raised by them, or addressed to them), in every room."""
    return [r for r in await store.list_pending() if r.actor_id == user]


@dataclass
class Commands:
    """`pending` (the default), `mine`, `grants`, `revoke <id>`, and for admins `audit`,
    `cancel`, `pending` and `grants` of every room; typed as `command` (how the surface's
    people type it: `/hitl` on Slack, `@bot hitl` on Teams). `router` settles an admin's
    cancel; `surface` names where commands come from in the audit log."""

    store: AuditedRequests
    policy: AnswerPolicy
    grants: Grants | None = None
    command: str = "/hitl"
    router: Router | None = None
    surface: str = ""
    admin: Admin = field(init=False)

    def __post_init__(self) -> None:
        self.admin = Admin(self.store, self.grants, self.router, self.command, self.surface)

    async def answer(
        self,
        text: str,
        *,
        place: Place,
        user: str,
        private: bool = True,
        aliases: tuple[str, ...] = (),
    ) -> list[Phrase]:
        words = text.split()
        asked = words[0].lower() if words else "pending"
        asker = Asker(user, text, self.policy.is_admin(user, aliases), private)
        if asked in ADMIN_ONLY:
            return await self.admin.answer(asked, words[1:], asker)
        if asked == "mine" and len(words) == 1:
            if not private:
                return [PRIVATE_ONLY]
            return mine_lines(await open_requests_of(self.store, user))
        if asker.admin and private and asked in ("pending", "grants") and len(words) <= 1:
            return await self.admin.answer(asked, [], asker)
        if asked == "pending" and len(words) <= 1:
            waiting = [r for r in await self.store.list_pending() if place.holds(r.room_id)]
            return pending_lines(waiting)
        if asked in ("grants", "revoke") and self.grants is None:
            return [Phrase("Tool grants are not kept by this bridge.")]
        if asked == "grants" and len(words) == 1 and self.grants is not None:
            live = await self.grants.list(room_prefix=place.room_id)
            return grant_lines([g for g in live if place.holds(g.room_id)], self.command)
        if asked == "revoke" and len(words) == 2:
            return [await self._revoke(words[1], user)]
        return self.help(admin=asker.admin)

    def help(self, *, admin: bool = False) -> list[Phrase]:
        c = self.command
        lines = [
            Phrase(f"`{c}` or `{c} pending`: the requests waiting in this conversation."),
            Phrase(f"`{c} mine`: the requests waiting for your answer, anywhere."),
            Phrase(f"`{c} grants`: the tools allowed to run unasked here."),
            Phrase(f"`{c} revoke <id>`: revoke one."),
        ]
        return lines + (self.admin.help() if admin else [])

    async def _revoke(self, grant_id: str, user: str) -> Phrase:
        """Revoke a grant: its actor, whoever granted it, approvers and admins may."""
        assert self.grants is not None

        def allowed(grant: Grant) -> bool:
            return user == grant.granted_by or self.policy.may_answer(user, grant.actor_id)

        try:
            grant = await self.grants.revoke(short(grant_id, 40), by=user, allowed=allowed)
        except GrantError as err:
            return Phrase("Cannot revoke: {why}.", values={"why": str(err)})
        who, people = whom(grant.actor_id)
        values = {"id": grant.id, "tool": short(grant.tool_name)}
        return Phrase(f"Revoked `{{id}}`: {{tool}} asks {who} again.", people, values=values)
