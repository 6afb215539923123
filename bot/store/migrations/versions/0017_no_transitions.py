"""The transitions table goes: the audit log records every transition of a request already
(request.created, then request.<status> with who and when), so a second table only repeated it
at two statements a lifecycle.

The downgrade rebuilds the table from the audit log: one row per request.created and per
request.<status> of a request still there.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-01

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0017"
down_revision: str | Sequence[str] | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copies of the schema's types: a migration must not change when bot.store.schema does.
JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
TIMESTAMP = sa.DateTime(timezone=True)
SETTLED = ("resolved", "rejected", "timed_out", "cancelled", "undeliverable")


def upgrade() -> None:
    op.drop_index(op.f("ix_transitions_request_id"), table_name="transitions")
    op.drop_table("transitions")


def downgrade() -> None:
    op.create_table(
        "transitions",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("request_id", sa.String(), nullable=False),
        sa.Column("from_status", sa.String(), nullable=True),
        sa.Column("to_status", sa.String(), nullable=False),
        sa.Column("at", TIMESTAMP, nullable=False),
        sa.Column("by", sa.String(), nullable=True),
        sa.Column("detail", JSON, server_default="{}", nullable=False),
        sa.ForeignKeyConstraint(
            ["request_id"],
            ["requests.id"],
            name=op.f("fk_transitions_request_id_requests"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_transitions")),
    )
    op.create_index(op.f("ix_transitions_request_id"), "transitions", ["request_id"])
    settled = ", ".join(f"'request.{status}'" for status in SETTLED)
    # What the audit log says, in the old shape (a settle's reason was the transition's detail).
    op.execute(
        "INSERT INTO transitions (request_id, from_status, to_status, at, by, detail) "
        "SELECT a.request_id, NULL, 'pending', a.at, a.actor_id, '{}' FROM audit_log a "
        "JOIN requests r ON r.id = a.request_id WHERE a.action = 'request.created' ORDER BY a.id"
    )
    op.execute(
        "INSERT INTO transitions (request_id, from_status, to_status, at, by, detail) "
        "SELECT a.request_id, 'pending', substr(a.action, 9), a.at, a.actor_id, '{}' "
        f"FROM audit_log a JOIN requests r ON r.id = a.request_id WHERE a.action IN ({settled}) "
        "ORDER BY a.id"
    )
