"""Store URLs: ``sqlite:///path.db`` or ``postgresql://...``, mapped to the async drivers."""

from __future__ import annotations

from agentloop.errors import ConfigError

DEFAULT_URL = "sqlite:///agentloop.db"


def normalise_url(url: str) -> str:
    """The SQLAlchemy async URL for a store URL (``sqlite+aiosqlite``, ``postgresql+asyncpg``)."""
    if url.startswith(("sqlite+aiosqlite://", "postgresql+asyncpg://")):
        return url
    if url.startswith("sqlite://"):
        return "sqlite+aiosqlite://" + url[len("sqlite://") :]
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+asyncpg://" + url[len(prefix) :]
    raise ConfigError(
        f"store URL {url!r} is not supported; use sqlite:///path.db or postgresql://user@host/db"
    )


def is_sqlite(url: str) -> bool:
    return normalise_url(url).startswith("sqlite")
