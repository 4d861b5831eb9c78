"""truncation: "auto" drops the oldest turns when the conversation outgrows the model;
"disabled" (the default) fails the response instead."""

from __future__ import annotations

import pytest
from tests.gateway.conftest import GatewayFactory
from tests.gateway.fakes import CountingModel

from agentloop.errors import ContextWindowExceeded
from agentloop.items import Message, OutputText
from agentloop.models.base import Model, ModelRequest, ModelResponse

pytestmark = pytest.mark.anyio


class SmallContext(Model):
    """Fits at most four items; answers with how many it was sent."""

    name = "small"

    async def request(self, request: ModelRequest) -> ModelResponse:
        if len(request.items) > 4:
            raise ContextWindowExceeded("This model's maximum context length is 4 items")
        text = f"saw {len(request.items)}"
        return ModelResponse(items=(Message(role="assistant", content=(OutputText(text=text),)),))


async def test_truncation_auto_keeps_a_long_conversation_going(
    make_gateway: GatewayFactory,
) -> None:
    models = {"small": SmallContext(), "counting": CountingModel()}
    async with make_gateway(models=models) as gw:
        previous = None
        for turn in range(5):
            r = await gw.client.responses.create(
                model="small", input=f"turn {turn}", previous_response_id=previous,
                truncation="auto",
            )  # fmt: skip
            assert r.status == "completed", r.error
            assert r.truncation == "auto"
            previous = r.id
        assert r.output_text in ("saw 3", "saw 4")
        # only what the model was sent was cut: the stored conversation is whole
        whole = await gw.client.responses.create(
            model="counting", input="how long?", previous_response_id=r.id
        )
        assert whole.output_text == "11 items"


async def test_truncation_disabled_fails_with_the_context_error(
    make_gateway: GatewayFactory,
) -> None:
    async with make_gateway(models={"small": SmallContext()}) as gw:
        previous = None
        statuses = []
        for turn in range(3):
            r = await gw.client.responses.create(
                model="small", input=f"turn {turn}", previous_response_id=previous
            )
            statuses.append(r.status)
            previous = r.id
        assert statuses == ["completed", "completed", "failed"]
        assert r.error is not None and r.error.code == "context_window_exceeded"
