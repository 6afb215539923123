"""Requests may settle as 'undeliverable': no surface could show them.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-13

"""

from collections.abc import Sequence

from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copies: a migration must not change when bot.records does.
BEFORE = "'pending', 'resolved', 'rejected', 'timed_out', 'cancelled'"
AFTER = f"{BEFORE}, 'undeliverable'"


def _statuses(allowed: str) -> None:
    # SQLite cannot alter a CHECK constraint: batch mode rebuilds the table (migrations/env.py
    # turns foreign keys off meanwhile, so the rebuild cascades to no transition or proposal).
    with op.batch_alter_table("requests") as batch:
        batch.drop_constraint(op.f("ck_requests_status"), type_="check")
        batch.create_check_constraint(op.f("ck_requests_status"), f"status IN ({allowed})")


def upgrade() -> None:
    _statuses(AFTER)


def downgrade() -> None:
    # The old schema has no such status: such requests read as withdrawn, with their reason.
    op.execute("UPDATE requests SET status = 'cancelled' WHERE status = 'undeliverable'")
    _statuses(BEFORE)
