"""A2A push notifications: a task's push configs, and their deliveries beside the webhooks'.

A push notification is sent by the webhook machinery (signed, retried, SSRF-checked), one
delivery per request and config: `webhook_deliveries` gains the config's id ("" for the HTTP
API's callback URL, so a request still has one such delivery) and the token sent with it.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-06

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | Sequence[str] | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copies of the schema's types: a migration must not change when bot.store.schema does.
TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "push_configs",
        sa.Column("request_id", sa.String(), nullable=False),
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("requester", sa.String(), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("token", sa.Text(), nullable=True),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("request_id", "id", name=op.f("pk_push_configs")),
    )
    op.add_column(
        "webhook_deliveries",
        sa.Column("push_config", sa.String(), nullable=False, server_default=""),
    )
    op.add_column("webhook_deliveries", sa.Column("push_token", sa.Text(), nullable=True))
    op.drop_index("ix_webhook_deliveries_request_id", table_name="webhook_deliveries")
    op.create_index(
        "ix_webhook_deliveries_request_id_push_config", "webhook_deliveries",
        ["request_id", "push_config"], unique=True,
    )  # fmt: skip


def downgrade() -> None:
    # Push deliveries have no place in the older table (one delivery a request): dropped.
    op.execute("DELETE FROM webhook_deliveries WHERE push_config <> ''")
    op.drop_index("ix_webhook_deliveries_request_id_push_config", table_name="webhook_deliveries")
    op.create_index(
        "ix_webhook_deliveries_request_id", "webhook_deliveries", ["request_id"], unique=True
    )
    with op.batch_alter_table("webhook_deliveries") as batch:
        batch.drop_column("push_token")
        batch.drop_column("push_config")
    op.drop_table("push_configs")
