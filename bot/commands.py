"""The `hitl` commands people type in a conversation, answered the same on every surface: what
waits for an answer here, which tools run unasked here, and revoking one of those grants.

A surface hands over the command's words, where it was typed and who typed it (as the
platform authenticated them); it gets phrases back (bot/requests/wording.py) and writes them
its own way: a Slack mention and date, a Teams name and UTC time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.access import AnswerPolicy
from bot.records import Grant, RequestRecord, RequestStore
from bot.requests.wording import Phrase
from bot.tools.grants import GrantError, Grants, shown_scope

LISTED = 20  # lines a reply lists before "… and N more"


@dataclass(frozen=True, slots=True)
class Place:
    """Where a command was typed: the conversation `room_id`, and every room within it (a
    thread's id is the conversation's, `separator`, and the thread's)."""

    room_id: str
    separator: str

    def holds(self, room_id: str) -> bool:
        return room_id == self.room_id or room_id.startswith(self.room_id + self.separator)


@dataclass
class Commands:
    """`pending` (the default), `grants`, `revoke <id>`, typed as `command` (how the surface's
    people type it: `/hitl` on Slack, `@bot hitl` on Teams)."""

    store: RequestStore
    policy: AnswerPolicy
    grants: Grants | None = None
    command: str = "/hitl"

    async def answer(self, text: str, *, place: Place, user: str) -> list[Phrase]:
        words = text.split()
        asked = words[0].lower() if words else "pending"
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
        return self.help()

    def help(self) -> list[Phrase]:
        c = self.command
        return [
            Phrase(f"`{c}` or `{c} pending`: the requests waiting in this conversation."),
            Phrase(f"`{c} grants`: the tools allowed to run unasked here."),
            Phrase(f"`{c} revoke <id>`: revoke one."),
        ]

    async def _revoke(self, grant_id: str, user: str) -> Phrase:
        """Revoke a grant: its actor, whoever granted it, approvers and admins may."""
        assert self.grants is not None

        def allowed(grant: Grant) -> bool:
            return user == grant.granted_by or self.policy.may_answer(user, grant.actor_id)

        try:
            grant = await self.grants.revoke(_short(grant_id, 40), by=user, allowed=allowed)
        except GrantError as err:
            return Phrase("Cannot revoke: {why}.", values={"why": str(err)})
        who, people = _whom(grant.actor_id)
        values = {"id": grant.id, "tool": _short(grant.tool_name)}
        return Phrase(f"Revoked `{{id}}`: {{tool}} asks {who} again.", people, values=values)


def pending_lines(requests: Sequence[RequestRecord]) -> list[Phrase]:
    """One line per open request: what, for whom, until when."""
    if not requests:
        return [Phrase("Nothing is waiting for an answer in this conversation.")]
    lines = [Phrase(f"{len(requests)} request(s) waiting for an answer:")]
    for request in requests[:LISTED]:
        who, people = _whom(request.actor_id)
        until = ", until {until}" if request.expires_at else ""
        moments = {"until": request.expires_at} if request.expires_at else {}
        values = {"tool": _short(request.tool_name)}
        lines.append(Phrase(f"• {{tool}} for {who}{until}", people, moments, values))
    return lines + _more(len(requests))


def grant_lines(grants: Sequence[Grant], command: str) -> list[Phrase]:
    """One line per live grant: which tool, for whom, scoped to what, until when, granted by
    whom; and how to revoke one."""
    if not grants:
        return [Phrase("No tool is allowed to run unasked in this conversation.")]
    lines = [Phrase(f"{len(grants)} tool grant(s) here:")]
    for grant in grants[:LISTED]:
        who, people = _whom(grant.actor_id)
        scope = shown_scope(grant)
        values = {"id": grant.id, "tool": _short(grant.tool_name), "scope": _short(scope, 200)}
        by = ", granted by {by}" if grant.granted_by else ""
        people = {**people, "by": grant.granted_by} if grant.granted_by else people
        scoped = " ({scope})" if scope else ""
        text = f"• `{{id}}` {{tool}} for {who}{scoped}, until {{until}}{by}"
        lines.append(Phrase(text, people, {"until": grant.expires_at}, values))
    return [*lines, *_more(len(grants)), Phrase(f"Revoke one with `{command} revoke <id>`.")]


def _whom(actor_id: str | None) -> tuple[str, dict[str, str]]:
    return ("{actor}", {"actor": actor_id}) if actor_id else ("anyone", {})


def _more(count: int) -> list[Phrase]:
    return [Phrase(f"… and {count - LISTED} more")] if count > LISTED else []


def _short(text: str, limit: int = 100) -> str:
    """At most `limit` characters of a name the model or a person chose."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
