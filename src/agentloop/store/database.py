"""Running store operations: one function per transaction, on the right engine.

Every operation is a plain function of a SQLAlchemy ``Connection`` run in one transaction:

- PostgreSQL: an async engine (asyncpg); the function runs through ``AsyncConnection.run_sync``
  (SQLAlchemy's greenlet bridge), so each statement is awaited on the event loop.
- SQLite: SQLite is an in-process library, so the async drivers only move each call to a
  thread (aiosqlite makes ~5 thread hand-offs per statement). Here the whole transaction runs
  in one dedicated thread on the standard ``sqlite3`` driver: one hand-off per operation, and
  one connection, so writes never contend inside the process (WAL, a busy timeout for other
  processes such as ``agentloop keys``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import StaticPool

from agentloop.store.migrate import upgrade_connection
from agentloop.store.url import normalise_url

T = TypeVar("T")
_PG_LOCK = 0x6167_6C6F  # an advisory-lock key ("aglo") serialising migrations of many workers


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "busy_timeout=10000"):
        cursor.execute(f"PRAGMA {pragma}")
    cursor.close()


class Database:
    """An engine and the way to run a transaction on it."""

    def __init__(self, url: str) -> None:
        full = normalise_url(url)
        self.dialect = "sqlite" if full.startswith("sqlite") else "postgresql"
        self._async: AsyncEngine | None = None
        self._sync: Engine | None = None
        self._thread: ThreadPoolExecutor | None = None
        if self.dialect == "sqlite":
            sync_url = full.replace("sqlite+aiosqlite", "sqlite", 1)
            memory = ":memory:" in sync_url or sync_url.rstrip("/") == "sqlite:"
            options: dict[str, Any] = {"connect_args": {"check_same_thread": False}}
            if memory:
                options["poolclass"] = StaticPool
            else:
                options.update(pool_size=1, max_overflow=0)
            self._sync = create_engine(sync_url, **options)
            event.listen(self._sync, "connect", _sqlite_pragmas)
            self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentloop-sqlite")
        else:
            self._async = create_async_engine(full, pool_size=10, max_overflow=20)

    @property
    def sync_engine(self) -> Engine:
        """The engine statements go through (for event listeners such as query counters)."""
        if self._sync is not None:
            return self._sync
        assert self._async is not None
        return self._async.sync_engine

    async def run(self, fn: Callable[[Connection], T], *, write: bool = False) -> T:
        """Run ``fn(connection)`` in one transaction (committed when ``write``)."""
        if self._async is not None:
            if write:
                async with self._async.begin() as conn:
                    return await conn.run_sync(fn)
            async with self._async.connect() as conn:
                return await conn.run_sync(fn)
        assert self._thread is not None
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._thread, self._sqlite, fn, write)

    def _sqlite(self, fn: Callable[[Connection], T], write: bool) -> T:
        assert self._sync is not None
        if write:
            with self._sync.begin() as conn:
                return fn(conn)
        with self._sync.connect() as conn:
            return fn(conn)

    async def migrate(self) -> None:
        """Apply the packaged migrations; on PostgreSQL under an advisory lock so that many
        workers starting together apply them once."""

        def go(conn: Connection) -> None:
            if self.dialect == "postgresql":
                from sqlalchemy import text

                conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_LOCK})
            upgrade_connection(conn)

        await self.run(go, write=True)

    async def dispose(self) -> None:
        if self._async is not None:
            await self._async.dispose()
        if self._sync is not None:
            assert self._thread is not None
            await asyncio.get_running_loop().run_in_executor(self._thread, self._sync.dispose)
            self._thread.shutdown(wait=True)
