"""Message copies: where each copy of a request, in a room other than its own, was posted.

A policy rule's `deliver` shows one request in several rooms, two of them possibly on one
surface (a Slack thread and a Slack approvals channel): their references are keyed by request,
surface and room, so each copy is edited when the request changes.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-01

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0014"
down_revision: str | Sequence[str] | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copies of the schema's types: a migration must not change when bot.store.schema does.
JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "message_copies",
        sa.Column("request_id", sa.String(), nullable=False),
        sa.Column("surface", sa.String(), nullable=False),
        sa.Column("room_id", sa.String(), nullable=False),
        sa.Column("ref", JSON, nullable=False),
        sa.ForeignKeyConstraint(
            ["request_id"], ["requests.id"], name=op.f("fk_message_copies_request_id_requests"),
            ondelete="CASCADE",
        ),  # fmt: skip
        sa.PrimaryKeyConstraint("request_id", "surface", "room_id", name=op.f("pk_message_copies")),
    )


def downgrade() -> None:
    op.drop_table("message_copies")
