"""Alembic environment: migrations run on a connection the store hands over (no alembic.ini)."""

from __future__ import annotations

from alembic import context

from agentloop.store.schema import metadata

VERSION_TABLE = "agentloop_alembic_version"

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, version_table=VERSION_TABLE)
with context.begin_transaction():
    context.run_migrations()
