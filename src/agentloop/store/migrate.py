"""Apply the packaged Alembic migrations to a store (on start, idempotent)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, text
from sqlalchemy.ext.asyncio import AsyncEngine

MIGRATIONS = Path(__file__).parent / "migrations"
_PG_LOCK = 0x6167_6C6F  # an arbitrary advisory-lock key ("aglo") serialising concurrent starts


def alembic_config(connection: Connection | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def _upgrade(connection: Connection) -> None:
    command.upgrade(alembic_config(connection), "head")


async def upgrade(engine: AsyncEngine) -> None:
    """Bring the database to the latest revision. On PostgreSQL an advisory lock makes many
    workers starting at once apply the migrations exactly once."""
    async with engine.connect() as conn:
        if engine.dialect.name == "postgresql":
            await conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_LOCK})
        await conn.run_sync(_upgrade)
        await conn.commit()
