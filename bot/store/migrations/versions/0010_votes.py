"""Votes: one per person on a request its policy rule needs several people to decide.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-03

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copies of the schema's types: a migration must not change when bot.store.schema does.
TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "votes",
        sa.Column("request_id", sa.String(), nullable=False),
        sa.Column("voter", sa.String(), nullable=False),
        sa.Column("approve", sa.Boolean(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("arguments_digest", sa.String(), nullable=False),
        sa.Column("at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(
            ["request_id"], ["requests.id"], name=op.f("fk_votes_request_id_requests"),
            ondelete="CASCADE",
        ),  # fmt: skip
        sa.PrimaryKeyConstraint("request_id", "voter", name=op.f("pk_votes")),
    )


def downgrade() -> None:
    op.drop_table("votes")
