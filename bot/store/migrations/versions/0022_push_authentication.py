"""A2A push notifications' authentication: a push config's scheme and credentials
(`AuthenticationInfo`, Bearer or Basic), and the Authorization header each of its deliveries is
sent with. Both are the caller's secrets: stored, as they must be sent, never logged.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-07

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0022"
down_revision: str | Sequence[str] | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("push_configs", sa.Column("auth_scheme", sa.String(), nullable=True))
    op.add_column("push_configs", sa.Column("auth_credentials", sa.Text(), nullable=True))
    op.add_column("webhook_deliveries", sa.Column("push_authorization", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("webhook_deliveries") as batch:
        batch.drop_column("push_authorization")
    with op.batch_alter_table("push_configs") as batch:
        batch.drop_column("auth_credentials")
        batch.drop_column("auth_scheme")
