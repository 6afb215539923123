"""The HTTP API's bodies as pydantic models: what is read (validated, field by field) and what
is written; the OpenAPI document (adapters/doors/api/openapi.py) is generated from them."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Status = Literal["pending", "answered", "declined", "expired", "cancelled", "undeliverable"]


class CreateRequest(BaseModel):
    """`POST /api/v1/requests`: ask a person. Strict: a number is a number (not `true`, not
    "100"), a string a string."""

    model_config = ConfigDict(extra="forbid", strict=True)

    tool: str = Field(min_length=1, max_length=100, description="A human tool's name")
    arguments: dict[str, Any] = Field(default_factory=dict, description="The tool's arguments")
    to: str = Field(
        min_length=1, max_length=500,
        description="Who is asked: slack:<user or channel id>[/<user id>][@<thread ts>], "
        "teams:<conversation id>[/<AAD object id>] or email:<address>",
    )  # fmt: skip
    timeout_seconds: float | None = Field(
        default=None, gt=0, allow_inf_nan=False,
        description="How long the person has (the bridge's default if absent)",
    )  # fmt: skip
    idempotency_key: str | None = Field(
        default=None, min_length=1, max_length=200,
        description="The same key from the same token with the same body returns the first "
        "request, never a second one; with another body it is refused (409)",
    )  # fmt: skip
    callback_url: str | None = Field(
        default=None, max_length=2000,
        description="POSTed the request, signed, when it settles",
    )  # fmt: skip


class RequestOut(BaseModel):
    """A request as the API tells it (and as webhooks post it)."""

    id: str
    status: Status
    to: str
    tool: str | None = None
    arguments: dict[str, Any] | None = None
    created_at: datetime | None = None
    expires_at: datetime | None = None
    answer: Any = Field(default=None, description="The tool's answer, once answered")
    reason: str | None = Field(default=None, description="Why it was declined or cancelled")
    answered_by: str | None = None
    answered_at: datetime | None = None
    idempotency_key: str | None = None


class RequestPage(BaseModel):
    """`GET /api/v1/requests`: newest first; `next` is the `before` of the next page."""

    requests: list[RequestOut]
    next: str | None = None


class ApiError(BaseModel):
    """Every error the API answers with: a code, one line, and the invalid fields."""

    error: Literal[
        "unauthorized",
        "invalid",
        "not_found",
        "conflict",
        "too_large",
        "too_many_polls",
        "unavailable",
    ]
    message: str
    fields: dict[str, str] = Field(default_factory=dict)
