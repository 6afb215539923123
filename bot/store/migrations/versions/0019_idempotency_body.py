"""A door request's body hash: the SHA-256 of what was asked with an idempotency key, so the
key reused with another body is refused (409) instead of answered with the first request.
Rows from before have none: a key of theirs still returns their request, whatever the body.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-01

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | Sequence[str] | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("door_requests", sa.Column("body_hash", sa.String(64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("door_requests") as batch:
        batch.drop_column("body_hash")
