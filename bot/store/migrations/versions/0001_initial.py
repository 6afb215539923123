"""Initial schema: requests, transitions, audit_log, transcripts, claims.

Revision ID: 0001
Revises:
Create Date: 2025-11-29

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copies of the schema's types: a migration must not change when bot.store.schema does.
JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
TIMESTAMP = sa.DateTime(timezone=True)
STATUSES = "'pending', 'resolved', 'rejected', 'timed_out', 'cancelled'"


def upgrade() -> None:
    op.create_table(
        "requests",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("tool_name", sa.String(), nullable=False),
        sa.Column("arguments", JSON, nullable=False),
        sa.Column("room_id", sa.String(), nullable=False),
        sa.Column("tool_call_id", sa.String(), nullable=False),
        sa.Column("channel_id", sa.String(), nullable=False),
        sa.Column("channel_type", sa.String(), nullable=False),
        sa.Column("actor_id", sa.String(), nullable=True),
        sa.Column("detached", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("result", sa.Text(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("settled_by", sa.String(), nullable=True),
        sa.Column("settled_at", TIMESTAMP, nullable=True),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("expires_at", TIMESTAMP, nullable=True),
        sa.Column("message_refs", JSON, server_default="{}", nullable=False),
        sa.CheckConstraint(f"status IN ({STATUSES})", name=op.f("ck_requests_status")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_requests")),
    )
    op.create_index("ix_requests_status_expires_at", "requests", ["status", "expires_at"])
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
    op.create_table(
        "audit_log",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("at", TIMESTAMP, nullable=False),
        sa.Column("action", sa.String(), nullable=False),
        sa.Column("request_id", sa.String(), nullable=True),
        sa.Column("actor_id", sa.String(), nullable=True),
        sa.Column("detail", JSON, server_default="{}", nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_log")),
    )
    op.create_index(op.f("ix_audit_log_request_id"), "audit_log", ["request_id"])
    op.create_table(
        "transcripts",
        sa.Column("room_id", sa.String(), nullable=False),
        sa.Column("channel_id", sa.String(), nullable=False),
        sa.Column("messages", JSON, nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("room_id", "channel_id", name=op.f("pk_transcripts")),
    )
    op.create_table(
        "claims",
        sa.Column("key", sa.String(), nullable=False),
        sa.Column("claimed_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_claims")),
    )
    op.create_index(op.f("ix_claims_claimed_at"), "claims", ["claimed_at"])


def downgrade() -> None:
    op.drop_index(op.f("ix_claims_claimed_at"), table_name="claims")
    op.drop_table("claims")
    op.drop_table("transcripts")
    op.drop_index(op.f("ix_audit_log_request_id"), table_name="audit_log")
    op.drop_table("audit_log")
    op.drop_index(op.f("ix_transitions_request_id"), table_name="transitions")
    op.drop_table("transitions")
    op.drop_index("ix_requests_status_expires_at", table_name="requests")
    op.drop_table("requests")
