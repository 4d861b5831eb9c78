"""HTTP routes: ``/v1/responses`` (create, retrieve, delete, input items, cancel),
``/v1/models`` and ``/healthz``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from agentloop.gateway.runner import Principal
from agentloop.gateway.service import Gateway, check_include
from agentloop.gateway.wire import ApiError, parse_create

router = APIRouter()


class SSEResponse(StreamingResponse):
    """A streaming response that always watches for the client going away (so a disconnect
    cancels the run even while no event is being sent), whatever the server's ASGI version."""

    def __init__(self, content: AsyncIterator[bytes]) -> None:
        super().__init__(
            content,
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope = {**scope, "asgi": {**scope.get("asgi", {}), "spec_version": "2.3"}}
        await super().__call__(scope, receive, send)


def _gateway(request: Request) -> Gateway:
    gateway: Gateway = request.app.state.gateway
    return gateway


async def _principal(request: Request) -> Principal:
    principal: Principal = await request.app.state.auth(request.headers.get("authorization"))
    request.state.tenant_id = principal.tenant_id
    return principal


def _is_form(request: Request) -> bool:
    """True for a form body; a 415 for anything but JSON or a form."""
    kind = request.headers.get("content-type", "application/json").split(";")[0].strip().lower()
    if kind in ("application/json", "", "text/json"):
        return False
    if kind == "application/x-www-form-urlencoded":
        return True
    raise ApiError(
        415,
        f"Unsupported content type '{kind}'; send application/json.",
        code="unsupported_media_type",
    )


@router.post("/v1/responses", response_model=None)
async def create_response(request: Request) -> Response:
    principal = await _principal(request)
    form = _is_form(request)
    body = parse_create(await request.body(), form=form)
    execution = await _gateway(request).create(principal, body)
    if body.stream:
        return SSEResponse(execution.frames())
    if body.background:
        return JSONResponse(execution.live())
    return JSONResponse(await execution.wait())


@router.get("/v1/responses/{response_id}")
async def retrieve_response(request: Request, response_id: str) -> dict[str, Any]:
    principal = await _principal(request)
    query = request.query_params
    include = [*query.getlist("include"), *query.getlist("include[]")]
    check_include(include)
    return await _gateway(request).retrieve(principal, response_id, include=include)


@router.delete("/v1/responses/{response_id}")
async def delete_response(request: Request, response_id: str) -> dict[str, Any]:
    principal = await _principal(request)
    return await _gateway(request).delete(principal, response_id)


@router.post("/v1/responses/{response_id}/cancel")
async def cancel_response(request: Request, response_id: str) -> dict[str, Any]:
    principal = await _principal(request)
    return await _gateway(request).cancel(principal, response_id)


@router.get("/v1/responses/{response_id}/input_items")
async def list_input_items(request: Request, response_id: str) -> dict[str, Any]:
    principal = await _principal(request)
    query = request.query_params
    raw_limit = query.get("limit", "20")
    try:
        limit = int(raw_limit)
    except ValueError:
        limit = 0
    if not 1 <= limit <= 100:
        raise ApiError(
            400,
            "'limit' must be an integer between 1 and 100.",
            code="invalid_value",
            param="limit",
        )
    order = query.get("order", "desc")
    if order not in ("asc", "desc"):
        raise ApiError(400, "'order' must be 'asc' or 'desc'.", code="invalid_value", param="order")
    return await _gateway(request).input_items(
        principal, response_id, after=query.get("after"), limit=limit, order=order
    )


@router.get("/v1/models")
async def list_models(request: Request) -> dict[str, Any]:
    await _principal(request)
    names = _gateway(request).router.names()
    data = [{"id": n, "object": "model", "created": 0, "owned_by": "agentloop"} for n in names]
    return {"object": "list", "data": data}


@router.get("/healthz")
async def healthz(request: Request) -> JSONResponse:
    try:
        await _gateway(request).store.ping()
    except Exception:
        return JSONResponse({"status": "unavailable", "store": "unreachable"}, status_code=503)
    return JSONResponse({"status": "ok"})
