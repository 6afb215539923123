"""A door's request as every door and webhook tells it: `RequestBody`, one JSON object, and the
words its `status` uses for each stored status."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from bot.records import Asked, RequestRecord, RequestStatus

SHOWN_STATUS = {
    RequestStatus.PENDING: "pending",
    RequestStatus.RESOLVED: "answered",
    RequestStatus.REJECTED: "declined",
    RequestStatus.TIMED_OUT: "expired",
    RequestStatus.CANCELLED: "cancelled",
    RequestStatus.UNDELIVERABLE: "undeliverable",
}
ANSWERED = (RequestStatus.RESOLVED, RequestStatus.TIMED_OUT)
STATUS_OF = {shown: status for status, shown in SHOWN_STATUS.items()}

RequestBody = dict[str, Any]


def request_body(record: RequestRecord | None, row: Asked) -> RequestBody:
    """A door's request as callers read it (the API, MCP results, webhooks)."""
    if record is None:  # reserved, its request not yet written
        return {"id": row.request_id, "status": "pending", "to": row.address}
    body: RequestBody = {
        "id": record.id,
        "status": SHOWN_STATUS[record.status],
        "tool": record.tool_name,
        "to": row.address,
        "arguments": record.arguments,
        "created_at": _iso(record.created_at),
        "expires_at": _iso(record.expires_at),
    }
    # An expired request's answer is the policy's default (`on_timeout`), if it had one.
    if record.status in ANSWERED and record.result is not None:
        body["answer"] = _parsed(record.result)
    if record.status is not RequestStatus.PENDING:
        body["reason"] = record.reason or None
        body["answered_by"] = record.settled_by
        body["answered_at"] = _iso(record.settled_at)
    if row.idempotency_key is not None:
        body["idempotency_key"] = row.idempotency_key
    return body


def _parsed(result: str) -> Any:
    try:
        return json.loads(result)
    except ValueError:
        return result


def _iso(when: datetime | None) -> str | None:
    return when.astimezone(UTC).isoformat().replace("+00:00", "Z") if when else None
