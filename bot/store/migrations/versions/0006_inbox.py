"""Inbox: interactions written before they are acked, applied once, replays recognised.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-14

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copies of the schema's types: a migration must not change when bot.store.schema does.
JSON = sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql")
TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "inbox",
        sa.Column("key", sa.String(), nullable=False),
        sa.Column("surface", sa.String(), nullable=False),
        sa.Column("payload", JSON, nullable=True),
        sa.Column("received_at", TIMESTAMP, nullable=False),
        sa.Column("applied_at", TIMESTAMP, nullable=True),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_inbox")),
    )
    op.create_index("ix_inbox_applied_at_received_at", "inbox", ["applied_at", "received_at"])


def downgrade() -> None:
    op.drop_index("ix_inbox_applied_at_received_at", table_name="inbox")
    op.drop_table("inbox")
