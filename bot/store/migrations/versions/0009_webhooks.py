"""Webhooks: one delivery per door request's settle, claimed, retried and finished by workers.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copies of the schema's types: a migration must not change when bot.store.schema does.
TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "webhook_deliveries",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("request_id", sa.String(), nullable=False),
        sa.Column("requester", sa.String(), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("first_at", TIMESTAMP, nullable=False),
        sa.Column("next_at", TIMESTAMP, nullable=False),
        sa.Column("lease_until", TIMESTAMP, nullable=True),
        sa.Column("worker", sa.String(), nullable=True),
        sa.Column("done_at", TIMESTAMP, nullable=True),
        sa.Column("outcome", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_deliveries")),
    )
    op.create_index(
        "ix_webhook_deliveries_request_id", "webhook_deliveries", ["request_id"], unique=True
    )
    op.create_index(
        "ix_webhook_deliveries_done_at_next_at", "webhook_deliveries", ["done_at", "next_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_webhook_deliveries_done_at_next_at", table_name="webhook_deliveries")
    op.drop_index("ix_webhook_deliveries_request_id", table_name="webhook_deliveries")
    op.drop_table("webhook_deliveries")
