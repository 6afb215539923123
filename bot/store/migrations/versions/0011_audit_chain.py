"""The audit log's hash chain: each row's place in the chain, its predecessor's hash and its own.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-04

Rows are written without them (the hot path stays an insert) and sealed after commit by
bot/audit/chain.py; rows already there are sealed, in id order, by the first sealer to run.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | Sequence[str] | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UNSEALED = sa.text("chain_seq IS NULL")


def upgrade() -> None:
    op.add_column("audit_log", sa.Column("chain_seq", sa.BigInteger(), nullable=True))
    op.add_column("audit_log", sa.Column("prev_hash", sa.String(), nullable=True))
    op.add_column("audit_log", sa.Column("hash", sa.String(), nullable=True))
    op.create_index("ix_audit_log_chain_seq", "audit_log", ["chain_seq"], unique=True)
    op.create_index(
        "ix_audit_log_unsealed", "audit_log", ["id"],
        sqlite_where=UNSEALED, postgresql_where=UNSEALED,
    )  # fmt: skip
    op.create_index("ix_audit_log_at", "audit_log", ["at"])


def downgrade() -> None:
    op.drop_index("ix_audit_log_at", table_name="audit_log")
    op.drop_index("ix_audit_log_unsealed", table_name="audit_log")
    op.drop_index("ix_audit_log_chain_seq", table_name="audit_log")
    with op.batch_alter_table("audit_log") as batch:
        batch.drop_column("hash")
        batch.drop_column("prev_hash")
        batch.drop_column("chain_seq")
