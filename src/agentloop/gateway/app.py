"""The FastAPI app: ``create_app(config)``.

A pure-ASGI middleware gives every request an id, a size limit on its body (413), a structured
log line, and turns any unexpected exception into the spec's error object (never a traceback).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentloop.gateway.auth import LOCAL_TENANT, Authenticator
from agentloop.gateway.config import GatewayConfig
from agentloop.gateway.routes import router as routes
from agentloop.gateway.routing import ModelRouter
from agentloop.gateway.service import Gateway
from agentloop.gateway.tooling import import_toolset
from agentloop.gateway.wire import ApiError, error_body
from agentloop.items import new_id
from agentloop.models.base import Model
from agentloop.store import Store
from agentloop.tools.tool import Tool

log = logging.getLogger("agentloop.gateway")


class BodyTooLarge(Exception):
    pass


def _json(status: int, body: dict[str, Any]) -> list[Message]:
    payload = json.dumps(body).encode()
    return [
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
            ],
        },
        {"type": "http.response.body", "body": payload},
    ]


class GatewayMiddleware:
    def __init__(self, app: ASGIApp, *, max_body_bytes: int) -> None:
        self.app = app
        self.max_body = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        headers = dict(scope.get("headers") or [])
        request_id = headers.get(b"x-request-id", b"").decode("latin-1")[:64] or new_id("req")
        scope.setdefault("state", {})["request_id"] = request_id
        status = 500
        response_started = False

        async def send_wrapper(message: Message) -> None:
            nonlocal status, response_started
            if message["type"] == "http.response.start":
                status = message["status"]
                response_started = True
                message = {
                    **message,
                    "headers": [
                        *message.get("headers", []),
                        (b"x-request-id", request_id.encode()),
                    ],
                }
            await send(message)

        received = 0

        async def receive_wrapper() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body:
                    raise BodyTooLarge
            return message

        try:
            length = int(headers.get(b"content-length", b"0") or 0)
        except ValueError:
            length = 0
        try:
            if length > self.max_body:
                raise BodyTooLarge
            await self.app(scope, receive_wrapper, send_wrapper)
        except BodyTooLarge:
            if not response_started:
                body = error_body(
                    413,
                    f"The request body is larger than {self.max_body} bytes.",
                    code="request_too_large",
                )
                for message in _json(413, body):
                    await send_wrapper(message)
        except Exception:
            log.exception("unhandled error", extra={"request_id": request_id})
            if not response_started:
                body = error_body(
                    500, f"Internal server error (request {request_id}).", code="internal_error"
                )
                for message in _json(500, body):
                    await send_wrapper(message)
        finally:
            state = scope.get("state", {})
            log.info(
                "%s %s %s",
                scope.get("method"),
                scope.get("path"),
                status,
                extra={
                    "request_id": request_id,
                    "method": scope.get("method"),
                    "path": scope.get("path"),
                    "status": status,
                    "tenant_id": state.get("tenant_id"),
                    "duration_ms": round((time.perf_counter() - started) * 1000, 2),
                },
            )


def _install_handlers(app: FastAPI) -> None:
    async def api_error(_r: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ApiError)
        return JSONResponse(exc.body(), status_code=exc.status)

    async def http_error(_r: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        message = "Unknown endpoint." if exc.status_code == 404 else str(exc.detail)
        return JSONResponse(
            error_body(exc.status_code, message, code=code), status_code=exc.status_code
        )

    async def validation_error(_r: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        err = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
        param = ".".join(str(p) for p in err["loc"][1:]) or None
        return JSONResponse(
            error_body(400, f"Invalid value: {err['msg']}.", code="invalid_value", param=param),
            status_code=400,
        )

    app.add_exception_handler(ApiError, api_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(RequestValidationError, validation_error)


def create_app(
    config: GatewayConfig | None = None,
    *,
    store: Store | None = None,
    models: Mapping[str, Model] | None = None,
    toolsets: Mapping[str, Sequence[Tool]] | None = None,
) -> FastAPI:
    """The gateway app. ``store``, ``models`` and ``toolsets`` may be given programmatically
    (tests, embedding); otherwise they come from ``config``."""
    cfg = config or GatewayConfig()
    loaded: dict[str, Sequence[Tool]] = {
        name: import_toolset(path) for name, path in cfg.toolsets.items()
    }
    loaded.update(toolsets or {})

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        own_store = store is None
        opened = store or await Store.open(cfg.server.store)
        router = ModelRouter(cfg, models)
        try:
            local = await opened.ensure_tenant(LOCAL_TENANT)
            auth = Authenticator(opened, host=cfg.server.host, local_tenant_id=local)
            await auth.check_startup(cfg.server.host)
            gateway = Gateway(config=cfg, store=opened, router=router, toolsets=loaded)
            app.state.gateway = gateway
            app.state.auth = auth
            yield
            await gateway.registry.shutdown()
        finally:
            await router.aclose()
            if own_store:
                await opened.aclose()

    app = FastAPI(
        title="agentloop gateway",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    _install_handlers(app)
    app.include_router(routes)
    app.add_middleware(GatewayMiddleware, max_body_bytes=cfg.server.max_body_bytes)
    return app


def app_from_env() -> FastAPI:
    """An app configured from ``agentloop.toml`` / ``AGENTLOOP_*`` (for ``uvicorn --factory``,
    e.g. several workers on PostgreSQL)."""
    from agentloop.gateway.config import load_config
    from agentloop.gateway.logs import configure

    config = load_config()
    configure(config.server.log_level)
    return create_app(config)
