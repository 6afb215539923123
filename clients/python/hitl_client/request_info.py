"""A request as the HTTP API tells it: the body of every create, read, list and cancel."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

Status = Literal["pending", "answered", "declined", "expired", "cancelled", "undeliverable"]


class RequestInfo(BaseModel):
    """One request, as it stood when the bridge answered (a snapshot: read it again with
    `HitlClient.get`). `answer` is the tool's answer JSON once answered."""

    # Fields the bridge adds later are ignored, so an older client keeps working. Validators
    # are built on first use, not at import (bench/client_import.py).
    model_config = ConfigDict(frozen=True, extra="ignore", defer_build=True)

    id: str
    status: Status
    to: str
    # Optional: a request whose row is reserved but not yet written is told by id and status.
    tool: str | None = None
    arguments: dict[str, Any] | None = None
    created_at: datetime | None = None
    expires_at: datetime | None = None
    answer: Any = None
    reason: str | None = None
    answered_by: str | None = None
    answered_at: datetime | None = None
    idempotency_key: str | None = None

    @property
    def settled(self) -> bool:
        """Whether it is over (answered, declined, expired, cancelled or undeliverable)."""
        return self.status != "pending"


class RequestPage(BaseModel):
    """One page of `GET /api/v1/requests`: newest first; `next` is the next page's `before`."""

    model_config = ConfigDict(frozen=True, extra="ignore", defer_build=True)

    requests: list[RequestInfo]
    next: str | None = None
