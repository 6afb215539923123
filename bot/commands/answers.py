"""The phrases the `hitl` commands answer with (`Phrase`, bot/words/phrases.py): one line
per request, grant, audit line or decision, each cut to `LISTED` lines with a count of the
rest. Pure. Whatever the model or a person chose (a tool name, a reason, a room) is a value,
escaped by each surface and never read as a template.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.gates.grants import shown_scope
from bot.records import AuditEntry, Grant, RequestRecord, RequestStatus
from bot.words.phrases import Phrase

LISTED = 20  # lines a reply lists before "… and N more"

_DECIDED = {
    RequestStatus.RESOLVED: "answered",
    RequestStatus.REJECTED: "declined",
    RequestStatus.TIMED_OUT: "expired",
    RequestStatus.CANCELLED: "cancelled",
    RequestStatus.UNDELIVERABLE: "undeliverable",
}


def pending_lines(requests: Sequence[RequestRecord], *, everywhere: bool = False) -> list[Phrase]:
    """One line per open request: what, for whom, until when; `everywhere` (an admin's view
    of every room) adds each request's id and room."""
    if not requests:
        where = "anywhere" if everywhere else "in this conversation"
        return [Phrase(f"Nothing is waiting for an answer {where}.")]
    lines = [Phrase(f"{len(requests)} request(s) waiting for an answer:")]
    for request in requests[:LISTED]:
        lines.append(request_line(request, with_room=everywhere))
    return lines + more(len(requests))


def request_line(request: RequestRecord, *, with_room: bool) -> Phrase:
    """`• [`id` ]tool for actor[ in room], until …`."""
    who, people = whom(request.actor_id)
    until = ", until {until}" if request.expires_at else ""
    moments = {"until": request.expires_at} if request.expires_at else {}
    values = {"tool": short(request.tool_name), "id": request.id, "room": short(request.room_id)}
    head = "• `{id}` {tool}" if with_room else "• {tool}"
    room = " in {room}" if with_room else ""
    return Phrase(f"{head} for {who}{room}{until}", people, moments, values)


def mine_lines(requests: Sequence[RequestRecord]) -> list[Phrase]:
    """The caller's open requests, in every room."""
    if not requests:
        return [Phrase("Nothing waits for your answer.")]
    lines = [Phrase(f"{len(requests)} request(s) waiting for your answer:")]
    for request in requests[:LISTED]:
        lines.append(request_line(request, with_room=True))
    return lines + more(len(requests))


def grant_lines(grants: Sequence[Grant], command: str, *, everywhere: bool = False) -> list[Phrase]:
    """One line per live grant: which tool, for whom, scoped to what, until when, granted by
    whom (and where, for an admin's view of every room); and how to revoke one."""
    if not grants:
        where = "anywhere" if everywhere else "in this conversation"
        return [Phrase(f"No tool is allowed to run unasked {where}.")]
    lines = [Phrase(f"{len(grants)} tool grant(s) {'in all' if everywhere else 'here'}:")]
    for grant in grants[:LISTED]:
        who, people = whom(grant.actor_id)
        scope = shown_scope(grant)
        values = {"id": grant.id, "tool": short(grant.tool_name), "scope": short(scope, 200)}
        values["room"] = short(grant.room_id)
        by = ", granted by {by}" if grant.granted_by else ""
        people = {**people, "by": grant.granted_by} if grant.granted_by else people
        scoped = " ({scope})" if scope else ""
        room = " in {room}" if everywhere else ""
        text = f"• `{{id}}` {{tool}} for {who}{scoped}{room}, until {{until}}{by}"
        lines.append(Phrase(text, people, {"until": grant.expires_at}, values))
    return [*lines, *more(len(grants)), Phrase(f"Revoke one with `{command} revoke <id>`.")]


def audit_lines(entries: Sequence[AuditEntry], shown: int = LISTED) -> list[Phrase]:
    """The audit lines, newest first: when, what, on which request, by whom, and the reason
    or command when the line has one."""
    if not entries:
        return [Phrase("No audit line matches.")]
    lines = [Phrase(f"The latest {min(len(entries), shown)} audit line(s):")]
    for entry in entries[:shown]:
        who, people = ("{actor}", {"actor": entry.actor_id}) if entry.actor_id else ("nobody", {})
        values = {"action": short(entry.action, 60), "id": short(entry.request_id or "", 60)}
        about = " `{id}`" if entry.request_id else ""
        note = entry.detail.get("reason") or entry.detail.get("command")
        said = ": {note}" if isinstance(note, str) and note else ""
        if said:
            values["note"] = short(str(note), 150)
        text = f"• {{at}} {{action}}{about} by {who}{said}"
        lines.append(Phrase(text, people, {"at": entry.at}, values))
    return lines


def decision_lines(decided: Sequence[RequestRecord], shown: int = 10) -> list[Phrase]:
    """The latest decisions: which tool, how it ended, by whom, when."""
    if not decided:
        return [Phrase("No request was decided in the last 7 days.")]
    lines = []
    for record in decided[:shown]:
        by = " by {by}" if record.settled_by else ""
        people = {"by": record.settled_by} if record.settled_by else {}
        moments = {"at": record.settled_at} if record.settled_at else {}
        at = " {at}" if record.settled_at else ""
        values = {"tool": short(record.tool_name), "id": record.id}
        outcome = _DECIDED.get(record.status, record.status.value)
        lines.append(Phrase(f"• {{tool}} `{{id}}` {outcome}{by}{at}", people, moments, values))
    return lines


def whom(actor_id: str | None) -> tuple[str, dict[str, str]]:
    return ("{actor}", {"actor": actor_id}) if actor_id else ("anyone", {})


def more(count: int, shown: int = LISTED) -> list[Phrase]:
    return [Phrase(f"… and {count - shown} more")] if count > shown else []


def short(text: str, limit: int = 100) -> str:
    """At most `limit` characters of a name the model or a person chose."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
