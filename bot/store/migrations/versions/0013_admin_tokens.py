"""Admin tokens: a bearer token that may also sign in to the admin console (adapters/doors/admin);
and the requests indexed by creation time, the order of the console's table.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | Sequence[str] | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "api_tokens", sa.Column("admin", sa.Boolean(), server_default=sa.false(), nullable=False)
    )
    op.create_index("ix_requests_created_at", "requests", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_requests_created_at", table_name="requests")
    with op.batch_alter_table("api_tokens") as batch:
        batch.drop_column("admin")
