"""Over a real socket (uvicorn): events arrive as they happen, and a client that goes away in
the middle of a stream cancels the run; the stored response keeps what was done."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import uvicorn
from tests.gateway.conftest import DEMO_TOOLSET
from tests.gateway.fakes import GateModel
from tests.gateway.wirecheck import check_response, check_stream, parse_sse

from agentloop.gateway.app import create_app
from agentloop.gateway.config import GatewayConfig
from agentloop.store import Store

pytestmark = pytest.mark.anyio


@dataclass
class Served:
    base: str
    gate: GateModel
    app: Any


@pytest.fixture
async def served(store_url: str) -> AsyncIterator[Served]:
    """The app on uvicorn, on a free loopback port, in this event loop."""
    gate = GateModel()
    store = await Store.open(store_url)
    config = GatewayConfig.model_validate(
        {"server": {"store": store_url}, "toolsets": {"demo": DEMO_TOOLSET}}
    )
    app = create_app(config, store=store, models={"gate": gate})
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    uv_config = uvicorn.Config(app, log_level="warning", lifespan="on")
    server = uvicorn.Server(uv_config)
    uv_config.load()
    server.lifespan = uv_config.lifespan_class(uv_config)
    await server.startup(sockets=[sock])
    loop = asyncio.create_task(server.main_loop())
    try:
        yield Served(base=f"http://127.0.0.1:{port}", gate=gate, app=app)
    finally:
        server.should_exit = True
        await loop
        await server.shutdown(sockets=[sock])
        await store.aclose()


STREAM_BODY = {
    "model": "gate",
    "input": "go",
    "stream": True,
    "tools": [{"type": "agentloop:toolset", "name": "demo"}],
}


async def test_events_stream_before_the_run_ends(served: Served) -> None:
    async with (
        httpx.AsyncClient(base_url=served.base) as client,
        client.stream("POST", "/v1/responses", json=STREAM_BODY) as response,
    ):
        assert response.headers["content-type"].startswith("text/event-stream")
        seen: list[str] = []
        async for line in response.aiter_lines():
            if line.startswith("event: "):
                seen.append(line[7:])
            if "response.output_text.delta" in seen:
                break
        # the model is still blocked: these events came while the run was in progress
        assert served.gate.reached.is_set() and not served.gate.cancelled.is_set()
    assert seen[:2] == ["response.created", "response.in_progress"]
    assert seen.count("response.output_item.done") == 2  # the tool call and its output


async def test_client_disconnect_cancels_the_run_and_keeps_work(served: Served) -> None:
    registry = served.app.state.gateway.registry
    async with httpx.AsyncClient(base_url=served.base) as client:
        async with client.stream("POST", "/v1/responses", json=STREAM_BODY) as response:
            async for line in response.aiter_lines():
                if line == "event: response.output_text.delta":
                    break
            [response_id] = registry.ids()
            execution = registry.get(response_id, served.app.state.auth.local.tenant_id)
        # leaving the block closed the connection mid-stream
        await served.gate.cancelled.wait()
        await execution.finished.wait()
        stored = (await client.get(f"/v1/responses/{response_id}")).json()
    check_response(stored)
    assert stored["status"] == "cancelled"
    assert stored["incomplete_details"] == {"reason": "cancelled"}
    assert [o["type"] for o in stored["output"]] == [
        "function_call",
        "function_call_output",
        "message",
    ]
    assert stored["output"][2]["status"] == "incomplete"
    assert stored["output"][2]["content"][0]["text"] == "partial "


async def test_a_full_stream_over_the_socket_is_valid(served: Served) -> None:
    script = {"script": [[{"call": "add", "arguments": {"a": 1, "b": 2}}], {"say": "three"}]}
    body = {"model": "scripted", "input": json.dumps(script), "stream": True,
            "tools": [{"type": "agentloop:toolset", "name": "demo"}]}  # fmt: skip
    async with httpx.AsyncClient(base_url=served.base) as client:
        response = await client.post("/v1/responses", json=body)
    events, done = parse_sse(response.content)
    check_stream(events, done)
    assert events[-1]["response"]["output"][-1]["content"][0]["text"] == "three"
