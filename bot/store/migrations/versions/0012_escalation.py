"""Escalation: how many of a request's escalation steps have fired, and when the next is due.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | Sequence[str] | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copies of the schema's types: a migration must not change when bot.store.schema does.
TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.add_column(
        "requests",
        sa.Column("escalation_step", sa.Integer(), server_default="0", nullable=False),
    )
    op.add_column("requests", sa.Column("next_escalation_at", TIMESTAMP, nullable=True))
    op.create_index(
        "ix_requests_status_next_escalation_at", "requests", ["status", "next_escalation_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_requests_status_next_escalation_at", table_name="requests")
    # SQLite drops a column by rebuilding the table (migrations/env.py turns foreign keys off
    # meanwhile, so the rebuild cascades to no transition, proposal or vote).
    with op.batch_alter_table("requests") as batch:
        batch.drop_column("next_escalation_at")
        batch.drop_column("escalation_step")
