"""The store: responses, conversation items, tenants and API keys on SQLAlchemy 2 (async).

SQLite (embedded, the default) or PostgreSQL (many workers). Alembic migrations ship with the
package and are applied when a :class:`Store` is opened.
"""

from __future__ import annotations

from agentloop.store.repository import (
    ApiKeyRecord,
    Chain,
    NotFound,
    ResponseRecord,
    Store,
    StoreConflict,
)
from agentloop.store.url import normalise_url

__all__ = [
    "ApiKeyRecord",
    "Chain",
    "NotFound",
    "ResponseRecord",
    "Store",
    "StoreConflict",
    "normalise_url",
]
