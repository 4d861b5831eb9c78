"""API keys and tenants: every object belongs to one tenant; another tenant's id is a 404."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

import openai
import pytest
from tests.gateway.conftest import GatewayFactory
from tests.gateway.fakes import GateModel

from agentloop.errors import ConfigError
from agentloop.gateway.app import create_app
from agentloop.gateway.auth import is_loopback, refusal
from agentloop.gateway.config import GatewayConfig
from agentloop.store import Store

pytestmark = pytest.mark.anyio

DEMO = {"type": "agentloop:toolset", "name": "demo"}
PING = {"type": "function", "name": "ping", "parameters": {"type": "object"}}


@dataclass
class Keys:
    a: str
    b: str
    revoked: str


@pytest.fixture
async def keys(store_url: str) -> AsyncIterator[Keys]:
    """Keys for two fresh tenants (and a revoked one); all revoked afterwards so other tests
    keep local single-user mode."""
    store = await Store.open(store_url)
    suffix = uuid.uuid4().hex[:6]
    made = [await store.create_key(f"{name}-{suffix}") for name in ("acme", "globex", "gone")]
    await store.revoke_key(made[2][0].id)
    try:
        yield Keys(a=made[0][1], b=made[1][1], revoked=made[2][1])
    finally:
        for record, _ in made:
            await store.revoke_key(record.id)
        await store.aclose()


async def test_keys_are_required_once_configured(make_gateway: GatewayFactory, keys: Keys) -> None:
    async with make_gateway() as gw:
        for headers in ({}, {"authorization": "Bearer al-wrong"}, {"authorization": "Basic x"},
                        {"authorization": f"Bearer {keys.revoked}"}):  # fmt: skip
            response = await gw.http.get("/v1/models", headers=headers)
            assert response.status_code == 401, headers
            assert response.json()["error"]["type"] == "authentication_error"
        ok = await gw.sdk(keys.a).models.list()
        assert "scripted" in [m.id for m in ok.data]


async def test_tenant_b_cannot_reach_tenant_a_objects(
    make_gateway: GatewayFactory, keys: Keys
) -> None:
    async with make_gateway(host="0.0.0.0") as gw:
        a, b = gw.sdk(keys.a), gw.sdk(keys.b)
        mine = await a.responses.create(
            model="scripted",
            input=json.dumps({"script": [{"call": "ping"}]}),
            tools=[PING],  # type: ignore[list-item]
        )
        call_id = mine.output[0].call_id  # type: ignore[union-attr]
        with pytest.raises(openai.NotFoundError):
            await b.responses.retrieve(mine.id)
        with pytest.raises(openai.NotFoundError):
            await b.responses.input_items.list(mine.id)
        with pytest.raises(openai.NotFoundError):
            await b.responses.create(
                model="scripted",
                previous_response_id=mine.id,
                input=[{"type": "function_call_output", "call_id": call_id, "output": "x"}],
            )
        with pytest.raises(openai.NotFoundError):
            await b.responses.cancel(mine.id)
        with pytest.raises(openai.NotFoundError):
            await b.responses.delete(mine.id)
        # tenant A still has everything
        assert (await a.responses.retrieve(mine.id)).id == mine.id
        follow = await a.responses.create(
            model="scripted",
            previous_response_id=mine.id,
            input=[{"type": "function_call_output", "call_id": call_id, "output": "pong"}],
            tools=[PING],  # type: ignore[list-item]
        )
        assert follow.output_text == "Done. ping -> pong"
        await a.responses.delete(mine.id)


async def test_tenant_b_cannot_cancel_a_running_response(
    make_gateway: GatewayFactory, keys: Keys
) -> None:
    gate = GateModel()
    async with make_gateway(host="0.0.0.0", models={"gate": gate}) as gw:
        a, b = gw.sdk(keys.a), gw.sdk(keys.b)
        running = await a.responses.create(
            model="gate",
            input="go",
            tools=[DEMO],
            background=True,  # type: ignore[list-item]
        )
        await gate.reached.wait()
        with pytest.raises(openai.NotFoundError):
            await b.responses.cancel(running.id)
        with pytest.raises(openai.NotFoundError):
            await b.responses.retrieve(running.id)
        assert not gate.cancelled.is_set()
        assert (await a.responses.cancel(running.id)).status == "cancelled"


async def test_refuses_to_start_on_a_public_address_without_keys(tmp_store_url: str) -> None:
    config = GatewayConfig.model_validate({"server": {"host": "0.0.0.0", "store": tmp_store_url}})
    app = create_app(config)
    with pytest.raises(ConfigError, match=r"refusing to listen on 0\.0\.0\.0"):
        async with app.router.lifespan_context(app):
            pass


def test_loopback_detection() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "::1", "localhost", "127.0.0.2", "[::1]"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "10.0.0.1", "example.com", "::"))
    assert refusal("127.0.0.1", has_keys=False) is None
    assert refusal("0.0.0.0", has_keys=True) is None
    assert refusal("0.0.0.0", has_keys=False) is not None
