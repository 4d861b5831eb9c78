"""Initial tables: tenants, API keys, conversations, responses, items, tool audit.

Revision ID: 0001
Revises:
Create Date: 2026-04-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "agentloop_tenants",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False, unique=True),
        sa.Column("created_at", sa.Integer, nullable=False),
    )
    op.create_table(
        "agentloop_api_keys",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column(
            "tenant_id", sa.String(64), sa.ForeignKey("agentloop_tenants.id"), nullable=False
        ),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("prefix", sa.String(32), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False, unique=True),
        sa.Column("created_at", sa.Integer, nullable=False),
        sa.Column("revoked_at", sa.Integer, nullable=True),
    )
    op.create_table(
        "agentloop_conversations",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("head_response_id", sa.String(64), nullable=True),
        sa.Column("created_at", sa.Integer, nullable=False),
    )
    op.create_table(
        "agentloop_responses",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("conversation_id", sa.String(64), nullable=False),
        sa.Column("seq_start", sa.Integer, nullable=False),
        sa.Column("input_end", sa.Integer, nullable=False),
        sa.Column("seq_end", sa.Integer, nullable=False),
        sa.Column("previous_response_id", sa.String(64), nullable=True),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("created_at", sa.Integer, nullable=False),
        sa.Column("completed_at", sa.Integer, nullable=True),
        sa.Column("background", sa.Boolean, nullable=False),
        sa.Column("key_id", sa.String(64), nullable=True),
        sa.Column("resource", sa.Text, nullable=False),
    )
    op.create_index(
        "ix_agentloop_responses_tenant", "agentloop_responses", ["tenant_id", "created_at"]
    )
    op.create_table(
        "agentloop_items",
        sa.Column("conversation_id", sa.String(64), primary_key=True),
        sa.Column("seq", sa.Integer, primary_key=True),
        sa.Column("response_id", sa.String(64), nullable=False),
        sa.Column("item_id", sa.String(64), nullable=True),
        sa.Column("data", sa.Text, nullable=False),
    )
    op.create_table(
        "agentloop_tool_audit",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("key_id", sa.String(64), nullable=True),
        sa.Column("response_id", sa.String(64), nullable=False),
        sa.Column("call_id", sa.String(128), nullable=False),
        sa.Column("tool", sa.String(200), nullable=False),
        sa.Column("arguments", sa.Text, nullable=False),
        sa.Column("decision", sa.String(32), nullable=False),
        sa.Column("outcome", sa.String(32), nullable=False),
        sa.Column("duration", sa.Float, nullable=False),
        sa.Column("cached", sa.Boolean, nullable=False),
        sa.Column("message", sa.Text, nullable=True),
        sa.Column("created_at", sa.Integer, nullable=False),
    )
    op.create_index("ix_agentloop_tool_audit_response", "agentloop_tool_audit", ["response_id"])


def downgrade() -> None:
    op.drop_table("agentloop_tool_audit")
    op.drop_table("agentloop_items")
    op.drop_index("ix_agentloop_responses_tenant", "agentloop_responses")
    op.drop_table("agentloop_responses")
    op.drop_table("agentloop_conversations")
    op.drop_table("agentloop_api_keys")
    op.drop_table("agentloop_tenants")
