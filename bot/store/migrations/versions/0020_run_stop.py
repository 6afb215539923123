"""Who asked a room's run to stop from a worker that does not run it: the run's owner reads it
at its next lease renewal and stops the turn.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-06

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | Sequence[str] | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("stop_by", sa.String(), nullable=True))
    op.add_column("runs", sa.Column("stop_reason", sa.String(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("stop_by")
        batch.drop_column("stop_reason")
