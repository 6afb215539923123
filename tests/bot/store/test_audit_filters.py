"""list_audit's filters (actor, tool glob, since) and decided_since, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.records import AuditEntry, RequestRecord, RequestStatus, Settlement
from bot.store import SqlStore
from bot.store.journal import like

T0 = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


def request(request_id: str, tool_name: str, at: datetime) -> RequestRecord:
    return RequestRecord(
        id=request_id, tool_name=tool_name, arguments={}, room_id="slack:C1:1.0",
        tool_call_id=f"toolu_{request_id}", channel_id="agent", actor_id="U1", created_at=at,
    )  # fmt: skip


async def test_audit_lines_filtered_by_actor_tool_glob_and_since(store: SqlStore) -> None:
    await store.create_request(request("r1", "deploy_prod", T0))
    await store.create_request(request("r2", "deploy%x", T0 + timedelta(hours=1)))
    await store.create_request(request("r3", "AskUserQuestion", T0 + timedelta(hours=2)))
    await store.settle(Settlement("r1", RequestStatus.RESOLVED, T0 + timedelta(hours=3), by="U2"))
    await store.append_audit(AuditEntry("admin.refused", T0 + timedelta(hours=4), None, "U2"))

    def ids(entries: list[AuditEntry]) -> list[tuple[str, str | None]]:
        return [(e.action, e.request_id) for e in entries]

    assert ids(await store.list_audit(actor_id="U2")) == [
        ("admin.refused", None), ("request.resolved", "r1"),
    ]  # fmt: skip
    assert ids(await store.list_audit(tool="deploy*")) == [
        ("request.resolved", "r1"), ("request.created", "r2"), ("request.created", "r1"),
    ]  # fmt: skip
    # `%` and `_` in a glob are themselves; `?` is one character; any case.
    assert ids(await store.list_audit(tool="deploy%?")) == [("request.created", "r2")]
    assert ids(await store.list_audit(tool="deploy_prod")) == ids(
        await store.list_audit(request_id="r1")
    )
    assert ids(await store.list_audit(tool="askuser*")) == [("request.created", "r3")]
    since = await store.list_audit(since=T0 + timedelta(hours=2))
    assert ids(since) == [("admin.refused", None), ("request.resolved", "r1"),
                          ("request.created", "r3")]  # fmt: skip
    both = await store.list_audit(actor_id="U1", tool="deploy*", since=T0 + timedelta(minutes=1))
    assert ids(both) == [("request.created", "r2")]
    assert await store.list_audit(tool="nothing*") == []


def test_a_glob_becomes_an_escaped_like_pattern() -> None:
    assert like("deploy*") == "deploy%"
    assert like("a?c") == "a_c"
    assert like("50%_off\\") == "50\\%\\_off\\\\"


async def test_decided_since_lists_settled_requests_latest_first(store: SqlStore) -> None:
    for n, status in enumerate([RequestStatus.RESOLVED, RequestStatus.REJECTED, None]):
        await store.create_request(request(f"r{n}", "deploy", T0))
        if status is not None:
            at = T0 + timedelta(minutes=10 * (n + 1))
            await store.settle(Settlement(f"r{n}", status, at, by="U2"))

    decided = await store.decided_since(T0)
    assert [r.id for r in decided] == ["r1", "r0"]  # the pending r2 is no decision
    assert decided[0].settled_at == T0 + timedelta(minutes=20)
    assert [r.id for r in await store.decided_since(T0 + timedelta(minutes=15))] == ["r1"]
    assert [r.id for r in await store.decided_since(T0, limit=1)] == ["r1"]
