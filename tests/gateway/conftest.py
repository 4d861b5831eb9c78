"""Gateway fixtures: the app in-process (openai SDK over ASGI) on SQLite and on PostgreSQL.

Every test using ``gw`` runs on both stores. PostgreSQL (127.0.0.1:5432, database ``test``, or
``AGENTLOOP_TEST_PG``) gets a fresh database per test session and xdist worker; when it is
unreachable the PostgreSQL tests skip, except under CI (``CI=true``) where they fail. Users
``postgres`` then ``root`` are tried.
Every exchange of every test is validated against the spec when the test ends.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from sqlalchemy import event
from tests.gateway.wirecheck import RecordingTransport

from agentloop.gateway.app import create_app
from agentloop.gateway.config import GatewayConfig
from agentloop.models.base import Model
from agentloop.store import Store
from agentloop.tools.tool import Tool

PG_CANDIDATES = (
    [os.environ["AGENTLOOP_TEST_PG"]]
    if os.environ.get("AGENTLOOP_TEST_PG")
    else [
        "postgresql://postgres@127.0.0.1:5432/test",
        "postgresql://root@127.0.0.1:5432/test",
    ]
)
DEMO_TOOLSET = "agentloop.gateway.demo_tools:TOOLS"


async def _pg_admin(dsn: str, sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(dsn.replace("postgresql+asyncpg://", "postgresql://"), timeout=3)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


def _pg_database(worker: str) -> Iterator[str]:
    """A fresh database for this session and xdist worker, dropped at the end."""
    name = f"agentloop_gw_{worker}_{uuid.uuid4().hex[:8]}"
    problems = []
    for admin in PG_CANDIDATES:
        try:
            asyncio.run(_pg_admin(admin, f'CREATE DATABASE "{name}"'))
            break
        except Exception as exc:
            problems.append(f"{admin}: {type(exc).__name__}: {exc}")
    else:
        reason = "PostgreSQL is not reachable (" + "; ".join(problems) + ")"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason + " (CI=true: the PostgreSQL tests must run)")
        pytest.skip(reason)
    base, _, _ = admin.rpartition("/")
    try:
        yield f"{base}/{name}"
    finally:
        asyncio.run(_pg_admin(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(scope="session", params=["sqlite", "postgresql"])
def store_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('gateway') / 'gateway.db'}"
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    yield from _pg_database(worker)


@pytest.fixture(autouse=True)
def _verbose_gateway_logs() -> Iterator[None]:
    """Gateway tests run with every agentloop log record built (a bad ``extra`` would raise)."""
    logger = logging.getLogger("agentloop")
    level = logger.level
    logger.setLevel(logging.DEBUG)
    yield
    logger.setLevel(level)


@dataclass
class QueryCounter:
    count: int = 0
    statements: list[str] = field(default_factory=list)

    def __call__(self, _conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        self.count += 1
        self.statements.append(statement)

    def reset(self) -> None:
        self.count = 0
        self.statements.clear()


@dataclass
class Gateway:
    """A running in-process gateway and clients for it."""

    app: Any
    store: Store
    transport: RecordingTransport
    http: httpx.AsyncClient
    client: openai.AsyncOpenAI
    queries: QueryCounter

    def sdk(self, api_key: str) -> openai.AsyncOpenAI:
        """Another SDK client on the same app, with its own API key."""
        return openai.AsyncOpenAI(
            api_key=api_key, base_url="http://gateway/v1", http_client=self.http, max_retries=0
        )

    @property
    def service(self) -> Any:
        return self.app.state.gateway


GatewayFactory = Callable[..., AbstractAsyncContextManager[Gateway]]


@pytest.fixture
def make_gateway(store_url: str) -> GatewayFactory:
    """``async with make_gateway(**server_options, models=..., toolsets=...) as gw``."""

    @asynccontextmanager
    async def factory(
        *,
        models: Mapping[str, Model] | None = None,
        toolsets: Mapping[str, Sequence[Tool]] | None = None,
        **server: Any,
    ) -> AsyncIterator[Gateway]:
        cfg = GatewayConfig.model_validate(
            {"server": {"store": store_url, **server}, "toolsets": {"demo": DEMO_TOOLSET}}
        )
        store = await Store.open(store_url)
        counter = QueryCounter()
        event.listen(store.sync_engine, "before_cursor_execute", counter)
        app = create_app(cfg, store=store, models=models, toolsets=toolsets)
        transport = RecordingTransport(app)
        try:
            async with (
                app.router.lifespan_context(app),
                httpx.AsyncClient(transport=transport, base_url="http://gateway") as http,
            ):
                client = openai.AsyncOpenAI(
                    api_key="local", base_url="http://gateway/v1", http_client=http, max_retries=0
                )
                yield Gateway(
                    app=app,
                    store=store,
                    transport=transport,
                    http=http,
                    client=client,
                    queries=counter,
                )
            transport.check_all()
        finally:
            await store.aclose()

    return factory


@pytest.fixture
async def gw(make_gateway: GatewayFactory) -> AsyncIterator[Gateway]:
    async with make_gateway() as gateway:
        yield gateway


@pytest.fixture
def tmp_store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'store.db'}"
