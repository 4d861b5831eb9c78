"""The packaged Alembic migrations, applied on start (idempotent)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection

MIGRATIONS = Path(__file__).parent / "migrations"


def alembic_config(connection: Connection | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def upgrade_connection(connection: Connection) -> None:
    """Bring the database behind ``connection`` to the latest revision (in its transaction)."""
    command.upgrade(alembic_config(connection), "head")
