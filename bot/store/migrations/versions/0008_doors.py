"""Doors: bearer tokens, and who asked each request made through the HTTP API or MCP.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copies of the schema's types: a migration must not change when bot.store.schema does.
TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "api_tokens",
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("token_hash", sa.String(), nullable=False),
        sa.Column("webhook_secret", sa.String(), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("revoked_at", TIMESTAMP, nullable=True),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_api_tokens")),
    )
    op.create_index("ix_api_tokens_token_hash", "api_tokens", ["token_hash"], unique=True)
    op.create_table(
        "door_requests",
        sa.Column("request_id", sa.String(), nullable=False),
        sa.Column("requester", sa.String(), nullable=False),
        sa.Column("address", sa.String(), nullable=False),
        sa.Column("idempotency_key", sa.String(), nullable=True),
        sa.Column("callback_url", sa.Text(), nullable=True),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("request_id", name=op.f("pk_door_requests")),
    )
    op.create_index(
        "ix_door_requests_requester_idempotency_key", "door_requests",
        ["requester", "idempotency_key"], unique=True,
    )  # fmt: skip
    op.create_index(
        "ix_door_requests_requester_created_at", "door_requests", ["requester", "created_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_door_requests_requester_created_at", table_name="door_requests")
    op.drop_index("ix_door_requests_requester_idempotency_key", table_name="door_requests")
    op.drop_table("door_requests")
    op.drop_index("ix_api_tokens_token_hash", table_name="api_tokens")
    op.drop_table("api_tokens")
