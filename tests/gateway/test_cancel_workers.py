"""Cancellation across workers: two apps (two workers) on one store. A cancel reaching the
worker that does not run the response asks the running one through the store; the run is
really cancelled there and the stored response keeps everything done before."""

from __future__ import annotations

import asyncio

import pytest
from tests.gateway.conftest import GatewayFactory
from tests.gateway.fakes import DEMO_TOOLSET as DEMO
from tests.gateway.fakes import GateModel, assert_work_kept, start_gated
from tests.gateway.wirecheck import parse_sse

pytestmark = pytest.mark.anyio

FAST = {"cancel_poll_interval": 0.02, "cancel_wait": 30.0}


async def test_cancel_through_another_worker_cancels_the_run(
    make_gateway: GatewayFactory,
) -> None:
    gate = GateModel()
    async with (
        make_gateway(models={"gate": gate}, **FAST) as a,
        make_gateway(models={"gate": gate}, **FAST) as b,
    ):
        created = await start_gated(a.client, gate)
        assert b.service.registry.ids() == []
        cancelled = await b.client.responses.cancel(created.id)
        assert gate.cancelled.is_set()  # the run on worker A was really cancelled
        assert cancelled.status == "cancelled"
        assert cancelled.incomplete_details is not None
        assert cancelled.incomplete_details.reason == "cancelled"  # type: ignore[comparison-overlap]
        assert_work_kept(cancelled)
        for worker in (a, b):
            stored = await worker.client.responses.retrieve(created.id)
            assert stored.status == "cancelled"
            assert [o.id for o in stored.output] == [o.id for o in cancelled.output]
        again = await a.client.responses.cancel(created.id)
        assert again.status == "cancelled"
        follow = await b.client.responses.create(
            model="scripted", previous_response_id=created.id, input="and now?"
        )
        assert follow.output_text == "echo: and now?"


async def test_cancel_a_stream_through_another_worker(make_gateway: GatewayFactory) -> None:
    gate = GateModel()
    async with (
        make_gateway(models={"gate": gate}, **FAST) as a,
        make_gateway(models={"gate": gate}, **FAST) as b,
    ):
        request = asyncio.create_task(
            a.http.post(
                "/v1/responses",
                json={"model": "gate", "input": "go", "tools": [DEMO], "stream": True},
            )
        )
        await gate.reached.wait()
        [running] = a.service.registry.ids()
        cancelled = await b.client.responses.cancel(running)
        assert gate.cancelled.is_set()
        assert cancelled.status == "cancelled"
        assert [o.type for o in cancelled.output] == [
            "function_call",
            "function_call_output",
            "message",
        ]
        events, done = parse_sse((await request).content)
        assert done and events[-1]["type"] == "response.incomplete"
        assert events[-1]["response"]["status"] == "cancelled"
        assert [o["id"] for o in events[-1]["response"]["output"]] == [
            o.id for o in cancelled.output
        ]


async def test_cancel_when_no_worker_stops_it_marks_it_cancelled(
    make_gateway: GatewayFactory,
) -> None:
    """Worker A runs the response but never looks at the store (as if it were gone); the
    cancel through B gives up after its bounded wait and marks the response cancelled."""
    gate = GateModel()
    async with (
        make_gateway(models={"gate": gate}, cancel_poll_interval=3600.0) as a,
        make_gateway(models={"gate": gate}, cancel_poll_interval=0.01, cancel_wait=0.05) as b,
    ):
        created = await start_gated(a.client, gate)
        cancelled = await b.client.responses.cancel(created.id)
        assert cancelled.status == "cancelled"
        assert not gate.cancelled.is_set()
        stored = await b.client.responses.retrieve(created.id)
        assert stored.status == "cancelled"
        assert stored.incomplete_details is not None
        # when worker A finally ends the run, the response stays cancelled
        await a.service.registry.shutdown()
        assert gate.cancelled.is_set()
        after = await b.client.responses.retrieve(created.id)
        assert after.status == "cancelled"
