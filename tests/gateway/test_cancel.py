"""Cancellation: POST /cancel stops a running response; the stored response keeps everything
done before (earlier turns, tool outputs, the partial answer)."""

from __future__ import annotations

import asyncio

import openai
import pytest
from tests.gateway.conftest import GatewayFactory
from tests.gateway.fakes import DEMO_TOOLSET as DEMO
from tests.gateway.fakes import GateModel, assert_work_kept, start_gated
from tests.gateway.wirecheck import parse_sse

pytestmark = pytest.mark.anyio


async def test_cancel_a_background_response_keeps_work_done(make_gateway: GatewayFactory) -> None:
    gate = GateModel()
    async with make_gateway(models={"gate": gate}) as gw:
        created = await gw.client.responses.create(
            model="gate",
            input="go",
            tools=[DEMO],
            background=True,  # type: ignore[list-item]
        )
        assert created.status == "in_progress" and created.background is True
        await gate.reached.wait()
        live = await gw.client.responses.retrieve(created.id)
        assert live.status == "in_progress"
        assert [o.type for o in live.output] == ["function_call", "function_call_output"]
        cancelled = await gw.client.responses.cancel(created.id)
        assert gate.cancelled.is_set()
        assert cancelled.status == "cancelled"
        assert_work_kept(cancelled)
        stored = await gw.client.responses.retrieve(created.id)
        assert stored.status == "cancelled"
        assert [o.id for o in stored.output] == [o.id for o in cancelled.output]
        again = await gw.client.responses.cancel(created.id)
        assert again.status == "cancelled"
        # the cancelled conversation can be continued
        follow = await gw.client.responses.create(
            model="scripted", previous_response_id=created.id, input="and now?"
        )
        assert follow.output_text == "echo: and now?"


async def test_cancel_a_streaming_response(make_gateway: GatewayFactory) -> None:
    gate = GateModel()
    async with make_gateway(models={"gate": gate}) as gw:
        request = asyncio.create_task(
            gw.http.post(
                "/v1/responses",
                json={"model": "gate", "input": "go", "tools": [DEMO], "stream": True},
            )
        )
        await gate.reached.wait()
        [running] = gw.service.registry.ids()
        cancelled = await gw.client.responses.cancel(running)
        assert cancelled.status == "cancelled"
        events, done = parse_sse((await request).content)
        assert done and events[-1]["type"] == "response.incomplete"
        assert events[-1]["response"]["status"] == "cancelled"
        assert events[-1]["response"]["incomplete_details"] == {"reason": "cancelled"}


async def test_cancel_a_finished_response_is_a_conflict(make_gateway: GatewayFactory) -> None:
    async with make_gateway() as gw:
        done = await gw.client.responses.create(model="scripted", input="quick")
        with pytest.raises(openai.ConflictError):
            await gw.client.responses.cancel(done.id)
        with pytest.raises(openai.NotFoundError):
            await gw.client.responses.cancel("resp_does_not_exist")


async def test_continuing_a_running_response_is_a_conflict(make_gateway: GatewayFactory) -> None:
    gate = GateModel()
    async with make_gateway(models={"gate": gate}) as gw:
        created = await start_gated(gw.client, gate)
        with pytest.raises(openai.ConflictError):
            await gw.client.responses.create(
                model="scripted", previous_response_id=created.id, input="too early"
            )
        with pytest.raises(openai.ConflictError):
            await gw.client.responses.delete(created.id)
        await gw.client.responses.cancel(created.id)


async def test_shutdown_cancels_and_stores_running_responses(
    make_gateway: GatewayFactory,
) -> None:
    gate = GateModel()
    async with make_gateway(models={"gate": gate}) as gw:
        created = await start_gated(gw.client, gate)
        await gw.service.registry.shutdown()
        stored = await gw.client.responses.retrieve(created.id)
        assert stored.status == "cancelled"
        assert len(stored.output) == 3


async def test_too_many_running_responses_for_a_tenant_is_429(
    make_gateway: GatewayFactory,
) -> None:
    gate = GateModel()
    async with make_gateway(models={"gate": gate}, max_concurrent_per_tenant=1) as gw:
        running = await start_gated(gw.client, gate)
        with pytest.raises(openai.RateLimitError):
            await gw.client.responses.create(model="scripted", input="one more")
        await gw.client.responses.cancel(running.id)
        after = await gw.client.responses.create(model="scripted", input="now there is room")
        assert after.status == "completed"
