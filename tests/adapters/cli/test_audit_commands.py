"""`hitl-bridge audit list|verify|export` through the real command: in-process for what it
prints, and as a process of its own for verify's exit status on a tampered database."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import os
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Connection, delete, insert, select, update

from adapters.cli.command import main
from adapters.serve.served_agent import audit_redaction
from adapters.serve.settings import Settings
from bot.audit.chain import seal_chain
from bot.audit.redaction import REDACTED
from bot.config.agent_file import load_agent_file
from bot.store import SqlStore, open_store
from bot.store.tables import audit
from tests.adapters.cli.test_command import CLEAN, hitl
from tests.bot.store.generated import START, Generated, generate

COUNT = 300  # requests: 240 settled, so 540 rows


@pytest.fixture
def database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    for name in list(os.environ):
        if name.startswith(CLEAN):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)  # no stray .env is read
    url = f"sqlite+aiosqlite:///{tmp_path / 'ops.db'}"
    monkeypatch.setenv("HITL_DATABASE_URL", url)

    async def seeded() -> None:
        store = await open_store(url)
        try:
            await generate(store, COUNT)
        finally:
            await store.close()

    asyncio.run(seeded())
    yield url


def test_list_is_the_default_newest_first_and_filtered(
    database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["audit", "--limit", "5"]) == 0
    plain = capsys.readouterr().out.splitlines()
    assert main(["audit", "list", "--limit", "5"]) == 0
    assert capsys.readouterr().out.splitlines() == plain
    assert len(plain) == 5 and "request gen-000299" in plain[0]

    since = (START + timedelta(hours=1)).isoformat()
    assert main(["audit", "list", "--tool", "deploy", "--status", "rejected", "--since", since,
                 "--actor", "U04", "--limit", "1000"]) == 0  # fmt: skip
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 8 and all("by U04" in line for line in lines)
    assert {line.split()[1] for line in lines} == {"request.created", "request.rejected"}
    assert all(line.split()[0] >= since for line in lines)


def test_a_bad_date_is_one_line(database: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "export", "--since", "last tuesday"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("hitl-bridge: audit: 'last tuesday' is not a date")
    assert err.count("\n") == 1


def test_export_to_a_file_and_to_stdout_and_the_export_is_audited(
    database: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "audit.csv"
    assert main(["audit", "export", "--format", "csv", "--room", "slack:C1:1.0",
                 "--output", str(out)]) == 0  # fmt: skip
    table = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8"))))
    in_room = [Generated(n) for n in range(COUNT) if Generated(n).room == "slack:C1:1.0"]
    expected = sum(1 if one.status == "pending" else 2 for one in in_room)
    assert len(table) == expected and {row["room"] for row in table} == {"slack:C1:1.0"}
    assert capsys.readouterr().err == f"{expected} rows written to {out}\n"

    assert main(["audit", "export", "--format", "jsonl", "--until", "7d"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == 2 * COUNT - COUNT // 5 and rows[0]["chain_seq"] == 1
    assert main(["audit", "list", "--action", "audit", "--limit", "5"]) == 0
    exported = capsys.readouterr().out.splitlines()
    assert len(exported) == 2 and "audit.exported" in exported[0] and "by cli:" in exported[0]
    assert f'"rows": {expected}' in exported[1] and '"room": "slack:C1:1.0"' in exported[1]


@pytest.mark.subprocess  # `audit verify` runs as a process
def test_verify_names_the_changed_row_and_exits_1(database: str, tmp_path: Path) -> None:
    ok = hitl(tmp_path, "audit", "verify", HITL_DATABASE_URL=database)
    assert ok.returncode == 0 and ok.stderr == ""
    assert ok.stdout.startswith(f"{2 * COUNT - COUNT // 5} rows checked, chain intact")

    async def tamper() -> tuple[int, str, datetime]:
        store = await open_store(database, migrate=False)
        try:

            def edit(conn: Connection) -> tuple[int, str, datetime]:
                row = conn.execute(select(audit).where(audit.c.chain_seq == 42)).one()
                conn.execute(update(audit).where(audit.c.id == row.id).values(actor_id="U99"))
                return int(row.id), str(row.action), row.at

            return await store.write(edit)
        finally:
            await store.close()

    changed, action, at = asyncio.run(tamper())
    bad = hitl(tmp_path, "audit", "verify", HITL_DATABASE_URL=database)
    assert bad.returncode == 1 and bad.stderr == ""
    assert bad.stdout == (
        f"row id {changed} (chain_seq 42, {action}, {at.isoformat()}): "
        "content changed since it was sealed (hash mismatch)\n"
    )


def _delete_42(conn: Connection) -> None:
    conn.execute(delete(audit).where(audit.c.chain_seq == 42))


def _insert_backdated(conn: Connection) -> None:  # unsealed: verify seals it at the end
    conn.execute(insert(audit).values(
        at=START, action="request.resolved", request_id="gen-000007", actor_id="U99",
        detail={"result": '{"approved":true}'},
    ))  # fmt: skip


def _reorder_42_43(conn: Connection) -> None:  # places swapped, hashes kept
    first = conn.execute(select(audit).where(audit.c.chain_seq == 42)).one()
    second = conn.execute(select(audit).where(audit.c.chain_seq == 43)).one()
    conn.execute(update(audit).where(audit.c.id == first.id).values(chain_seq=-1))
    conn.execute(update(audit).where(audit.c.id == second.id).values(chain_seq=42))
    conn.execute(update(audit).where(audit.c.id == first.id).values(chain_seq=43))


@pytest.mark.subprocess
@pytest.mark.parametrize(("change", "named"), [
    pytest.param(_delete_42, "(chain_seq 43, ", id="deleted"),
    pytest.param(_insert_backdated, f"(chain_seq {2 * COUNT - COUNT // 5 + 1}, request.resolved",
                 id="inserted"),
    pytest.param(_reorder_42_43, "(chain_seq 42, ", id="reordered"),
])  # fmt: skip
def test_verify_names_a_deleted_inserted_or_reordered_row(
    database: str, tmp_path: Path, change: Callable[[Connection], None], named: str
) -> None:
    async def tamper() -> None:
        store = await open_store(database, migrate=False)
        try:
            await seal_chain(store)
            await store.write(change)
        finally:
            await store.close()

    asyncio.run(tamper())
    bad = hitl(tmp_path, "audit", "verify", HITL_DATABASE_URL=database)
    assert bad.returncode == 1 and bad.stderr == ""
    assert bad.stdout.startswith("row id ") and named in bad.stdout, bad.stdout
    assert bad.stdout.count("\n") == 1


def test_redacted_keys_come_from_the_environment_and_the_agent_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HITL_AUDIT_REDACT", "Password, api_key")
    agent = tmp_path / "agent.yaml"
    agent.write_text("tools:\n  - python: ops.tools:deploy\n    approval: true\n"
                     "    redact: [Token]\n")  # fmt: skip
    keys = audit_redaction(Settings(), load_agent_file(agent))
    assert keys == {"password", "api_key", "token"}
    url = f"sqlite+aiosqlite:///{tmp_path / 'r.db'}"
    details = asyncio.run(redacted_rows(url, keys))
    text = json.dumps(details)
    assert "hunter2" not in text and "k-9" not in text and "t-1" not in text
    created = details[0]["arguments"]
    assert created == {"env": "prod", "PASSWORD": REDACTED,
                       "auth": [{"api_key": REDACTED, "TOKEN": REDACTED}]}  # fmt: skip
    assert json.loads(str(details[1]["result"])) == {"approved": True, "password": REDACTED}


async def redacted_rows(url: str, keys: frozenset[str]) -> list[dict[str, object]]:
    from bot.records import RequestRecord, RequestStatus, Settlement

    store = await open_store(url)
    store.audit_redact = keys
    now = datetime.now(UTC)
    try:
        arguments = {"env": "prod", "PASSWORD": "hunter2",
                     "auth": [{"api_key": "k-9", "TOKEN": "t-1"}]}  # fmt: skip
        await store.create_request(RequestRecord(
            id="r1", tool_name="deploy", arguments=arguments, room_id="room",
            tool_call_id="toolu_1", channel_id="slack", channel_type="ai", actor_id="U1",
            detached=False, created_at=now, expires_at=None,
        ))  # fmt: skip
        answer = json.dumps({"approved": True, "password": "hunter2"})
        assert await store.settle(Settlement("r1", RequestStatus.RESOLVED, now, answer, by="U2"))
        stored = await store.get_request("r1")
        assert stored is not None and stored.arguments == arguments  # the request keeps them
        await seal_chain(store)
        return await details_of(store)
    finally:
        await store.close()


async def details_of(store: SqlStore) -> list[dict[str, object]]:
    def read(conn: Connection) -> list[dict[str, object]]:
        return [row.detail for row in conn.execute(select(audit).order_by(audit.c.id))]

    return await store.read(read)
