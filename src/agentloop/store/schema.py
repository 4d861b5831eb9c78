"""Tables of the store (SQLAlchemy Core). Migrations in ``migrations/versions`` create them.

A *conversation* is a linear list of items numbered by ``seq``. Each stored response owns the
range ``[seq_start, seq_end)`` of its conversation: its input items, then its output items
(from ``input_end``). Continuing a response appends to its conversation when it is the
conversation's head (``head_response_id``), otherwise the prefix is copied into a new
conversation (a fork), so rebuilding any chain is one range query, however long the chain.
"""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    false,
)

metadata = MetaData()

tenants = Table(
    "agentloop_tenants",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("name", String(200), nullable=False, unique=True),
    Column("created_at", Integer, nullable=False),
)

api_keys = Table(
    "agentloop_api_keys",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("tenant_id", String(64), ForeignKey("agentloop_tenants.id"), nullable=False),
    Column("name", String(200), nullable=False),
    Column("prefix", String(32), nullable=False),
    Column("hash", String(64), nullable=False, unique=True),
    Column("created_at", Integer, nullable=False),
    Column("revoked_at", Integer, nullable=True),
)

conversations = Table(
    "agentloop_conversations",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("tenant_id", String(64), nullable=False),
    Column("head_response_id", String(64), nullable=True),
    Column("created_at", Integer, nullable=False),
)

responses = Table(
    "agentloop_responses",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("tenant_id", String(64), nullable=False),
    Column("conversation_id", String(64), nullable=False),
    Column("seq_start", Integer, nullable=False),
    Column("input_end", Integer, nullable=False),
    Column("seq_end", Integer, nullable=False),
    Column("previous_response_id", String(64), nullable=True),
    Column("status", String(32), nullable=False),
    Column("model", String(200), nullable=False),
    Column("created_at", Integer, nullable=False),
    Column("completed_at", Integer, nullable=True),
    Column("background", Boolean, nullable=False),
    Column("key_id", String(64), nullable=True),
    Column("resource", Text, nullable=False),
    Column("cancel_requested", Boolean, nullable=False, server_default=false()),
    Index("ix_agentloop_responses_tenant", "tenant_id", "created_at"),
)

items = Table(
    "agentloop_items",
    metadata,
    Column("conversation_id", String(64), primary_key=True),
    Column("seq", Integer, primary_key=True),
    Column("response_id", String(64), nullable=False),
    Column("item_id", String(64), nullable=True),
    Column("data", Text, nullable=False),
)

tool_audit = Table(
    "agentloop_tool_audit",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("tenant_id", String(64), nullable=False),
    Column("key_id", String(64), nullable=True),
    Column("response_id", String(64), nullable=False),
    Column("call_id", String(128), nullable=False),
    Column("tool", String(200), nullable=False),
    Column("arguments", Text, nullable=False),
    Column("decision", String(32), nullable=False),
    Column("outcome", String(32), nullable=False),
    Column("duration", Float, nullable=False),
    Column("cached", Boolean, nullable=False),
    Column("message", Text, nullable=True),
    Column("created_at", Integer, nullable=False),
    Index("ix_agentloop_tool_audit_response", "response_id"),
)
