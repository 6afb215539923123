"""Admin commands: an index on requests.settled_at, for the latest decisions (App Home's
figures read a week of them, latest first).

Revision ID: 0016
Revises: 0014
Create Date: 2026-12-01

"""

from collections.abc import Sequence

from alembic import op

revision: str = "0016"
down_revision: str | Sequence[str] | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_requests_settled_at", "requests", ["settled_at"])


def downgrade() -> None:
    op.drop_index("ix_requests_settled_at", table_name="requests")
