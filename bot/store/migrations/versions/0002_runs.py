"""Runs (who is running the agent of a room, under a lease) and request lookup indexes.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_index("ix_requests_tool_call_id", "requests", ["tool_call_id"])
    op.create_index("ix_requests_room_id_status", "requests", ["room_id", "status"])
    op.create_table(
        "runs",
        sa.Column("room_id", sa.String(), nullable=False),
        sa.Column("channel_id", sa.String(), nullable=False),
        sa.Column("actor_id", sa.String(), nullable=True),
        sa.Column("owner", sa.String(), nullable=True),
        sa.Column("lease_until", TIMESTAMP, nullable=True),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("room_id", "channel_id", name=op.f("pk_runs")),
    )
    op.create_index("ix_runs_active_lease_until", "runs", ["active", "lease_until"])


def downgrade() -> None:
    op.drop_index("ix_runs_active_lease_until", table_name="runs")
    op.drop_table("runs")
    op.drop_index("ix_requests_room_id_status", table_name="requests")
    op.drop_index("ix_requests_tool_call_id", table_name="requests")
