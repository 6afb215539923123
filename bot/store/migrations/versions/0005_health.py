"""Health: one row the readiness check rewrites, proving the database takes writes.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-13

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    health = op.create_table(
        "health",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("checked_at", TIMESTAMP, nullable=False),
        sa.Column("checked_by", sa.String(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_health")),
    )
    # The one row, there from the start: concurrent probes then only ever update it.
    op.execute(health.insert().values(id=1, checked_at=sa.func.current_timestamp()))


def downgrade() -> None:
    op.drop_table("health")
