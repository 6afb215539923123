"""Holds: the worker deciding each request, workers' heartbeats, and proposals to holders.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-06

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.add_column("requests", sa.Column("held_by", sa.String(), nullable=True))
    op.add_column("requests", sa.Column("settled_proposal", sa.String(), nullable=True))
    op.create_index("ix_requests_held_by", "requests", ["held_by"])
    op.create_table(
        "holders",
        sa.Column("worker_id", sa.String(), nullable=False),
        sa.Column("alive_until", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("worker_id", name=op.f("pk_holders")),
    )
    op.create_table(
        "proposals",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("request_id", sa.String(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("result", sa.Text(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("by", sa.String(), nullable=True),
        sa.Column("at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(
            ["request_id"],
            ["requests.id"],
            name=op.f("fk_proposals_request_id_requests"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_proposals")),
    )
    op.create_index(op.f("ix_proposals_request_id"), "proposals", ["request_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_proposals_request_id"), table_name="proposals")
    op.drop_table("proposals")
    op.drop_table("holders")
    op.drop_index("ix_requests_held_by", table_name="requests")
    op.drop_column("requests", "settled_proposal")
    op.drop_column("requests", "held_by")
