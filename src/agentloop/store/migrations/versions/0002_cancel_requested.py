"""Cross-worker cancellation: ``cancel_requested`` on responses.

A cancel that reaches a worker other than the one running the response sets the flag; the
running worker notices it and cancels the run through the normal path.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "agentloop_responses",
        sa.Column("cancel_requested", sa.Boolean, nullable=False, server_default=sa.false()),
    )


def downgrade() -> None:
    with op.batch_alter_table("agentloop_responses") as batch:
        batch.drop_column("cancel_requested")
