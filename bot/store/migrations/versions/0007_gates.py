"""Approval gates and grants: gated tool runs claimed once, grants, a request's run outcome.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-14

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copies of the schema's types: a migration must not change when bot.store.schema does.
JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.add_column("requests", sa.Column("run_outcome", sa.Text(), nullable=True))
    op.create_table(
        "gate_runs",
        sa.Column("key", sa.String(), nullable=False),
        sa.Column("request_id", sa.String(), nullable=True),
        sa.Column("tool_name", sa.String(), nullable=False),
        sa.Column("worker", sa.String(), nullable=False),
        sa.Column("claimed_at", TIMESTAMP, nullable=False),
        sa.Column("lease_until", TIMESTAMP, nullable=False),
        sa.Column("finished_at", TIMESTAMP, nullable=True),
        sa.Column("result", sa.Text(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("refused", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("outcome", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_gate_runs")),
    )
    op.create_table(
        "grants",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("room_id", sa.String(), nullable=False),
        sa.Column("actor_id", sa.String(), nullable=True),
        sa.Column("tool_name", sa.String(), nullable=False),
        sa.Column("arguments", JSON, server_default="{}", nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("expires_at", TIMESTAMP, nullable=False),
        sa.Column("granted_by", sa.String(), nullable=True),
        sa.Column("request_id", sa.String(), nullable=True),
        sa.Column("revoked_at", TIMESTAMP, nullable=True),
        sa.Column("revoked_by", sa.String(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_grants")),
    )
    op.create_index("ix_grants_room_id_tool_name", "grants", ["room_id", "tool_name"])
    op.create_index("ix_grants_request_id", "grants", ["request_id"], unique=True)


def downgrade() -> None:
    op.drop_index("ix_grants_request_id", table_name="grants")
    op.drop_index("ix_grants_room_id_tool_name", table_name="grants")
    op.drop_table("grants")
    op.drop_table("gate_runs")
    # SQLite drops a column by rebuilding the table (migrations/env.py turns foreign keys off
    # meanwhile, so the rebuild cascades to no transition or proposal).
    with op.batch_alter_table("requests") as batch:
        batch.drop_column("run_outcome")
