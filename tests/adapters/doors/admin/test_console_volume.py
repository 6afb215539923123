"""The console's table and CSV export over 10,000 generated requests."""

from __future__ import annotations

import csv
import io
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
from sqlalchemy import Connection, insert

from adapters.doors.admin.charts import counted
from bot.store import SqlStore
from bot.store.tables import requests
from tests.adapters.doors.admin.conftest import Serve

COUNT = 10_000
TOOLS = ("approve_deploy", "ask_human", "run_command", "choose")
STATUSES = ("resolved", "rejected", "timed_out", "cancelled", "pending")
START = datetime(2026, 10, 1, tzinfo=UTC)


def generated(n: int) -> dict[str, Any]:
    made = START + timedelta(minutes=n)
    status = STATUSES[n % len(STATUSES)]
    settled = status != "pending"
    return {
        "id": f"req-{n:05}", "tool_name": TOOLS[n % len(TOOLS)], "arguments": {"n": n},
        "room_id": f"C{n % 7}", "tool_call_id": f"call-{n}", "channel_id": "slack",
        "channel_type": "slack", "actor_id": f"U{n % 13}", "detached": False, "status": status,
        "result": "approve" if status == "resolved" else None, "reason": None,
        "settled_by": f"U{n % 5}" if settled else None,
        "settled_at": made + timedelta(seconds=n % 600) if settled else None,
        "created_at": made, "expires_at": None, "message_refs": {},
    }  # fmt: skip


def insert_all(conn: Connection) -> None:
    conn.execute(insert(requests), [generated(n) for n in range(COUNT)])


async def test_ten_thousand_requests_filtered_paged_and_exported(
    serve: Serve, store: SqlStore
) -> None:
    await store.write(insert_all)
    served = await serve()
    expected = [n for n in range(COUNT) if n % len(TOOLS) == 1 and n % 7 == 3]
    async with aiohttp.ClientSession() as client:
        async with client.get(f"{served.url}/admin/requests.csv") as export:
            rows = list(csv.DictReader(io.StringIO(await export.text())))
        assert len(rows) == COUNT
        assert len({row["id"] for row in rows}) == COUNT  # each once, newest first
        assert rows[0]["id"] == f"req-{COUNT - 1:05}" and rows[-1]["id"] == "req-00000"

        query = "tool=ask_human&room=C3"
        async with client.get(f"{served.url}/admin/requests.csv?{query}") as export:
            filtered = list(csv.DictReader(io.StringIO(await export.text())))
        assert [row["id"] for row in filtered] == [f"req-{n:05}" for n in reversed(expected)]

        async with client.get(f"{served.url}/admin/requests?{query}&page=999") as page:
            text = await page.text()
        assert f'<span id="total">{counted(len(expected), "request")}</span>' in text
        shown = re.findall(r'class="request-link"[^>]*>([^<]+)<', text)
        last = len(expected) % 50 or 50
        assert shown == [f"req-{n:05}" for n in reversed(expected[:last])]  # the last page
