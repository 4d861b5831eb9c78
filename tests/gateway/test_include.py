"""include: encrypted reasoning is shown only when asked for, and always kept for continuing;
what the gateway cannot honour is a clear 400."""

from __future__ import annotations

import openai
import pytest
from tests.gateway.conftest import GatewayFactory

from agentloop.items import Message, OutputText, Reasoning
from agentloop.models.base import Model, ModelRequest, ModelResponse

pytestmark = pytest.mark.anyio
INCLUDE = ["reasoning.encrypted_content"]


class Thinker(Model):
    """Answers with an encrypted reasoning item and a message; records what it was sent."""

    name = "thinker"

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    async def request(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        thought = Reasoning(summary=("weighing it",), encrypted_content="opaque-blob")
        answer = Message(role="assistant", content=(OutputText(text="42"),))
        return ModelResponse(items=(thought, answer))


def _blob(response: object) -> object:
    reasoning = next(o for o in response.output if o.type == "reasoning")  # type: ignore[attr-defined]
    return getattr(reasoning, "encrypted_content", None)


async def test_encrypted_reasoning_only_when_included(make_gateway: GatewayFactory) -> None:
    thinker = Thinker()
    async with make_gateway(models={"thinker": thinker}) as gw:
        plain = await gw.client.responses.create(model="thinker", input="q")
        assert _blob(plain) is None
        shown = await gw.client.responses.create(model="thinker", input="q", include=INCLUDE)
        assert _blob(shown) == "opaque-blob"
        # retrieve follows its own include, whatever create asked for
        assert _blob(await gw.client.responses.retrieve(plain.id, include=INCLUDE)) == "opaque-blob"
        assert _blob(await gw.client.responses.retrieve(shown.id)) is None
        # streamed: the events follow include too
        stream = await gw.client.responses.create(model="thinker", input="q", stream=True)
        async for event in stream:
            if event.type == "response.output_item.done" and event.item.type == "reasoning":
                assert getattr(event.item, "encrypted_content", None) is None
        # continuing passes the stored blob back to the provider
        await gw.client.responses.create(
            model="thinker", input="next", previous_response_id=plain.id
        )
        sent = [i for i in thinker.requests[-1].items if isinstance(i, Reasoning)]
        assert sent and sent[0].encrypted_content == "opaque-blob"


async def test_logprobs_are_a_clear_400(make_gateway: GatewayFactory) -> None:
    async with make_gateway(models={"thinker": Thinker()}) as gw:
        with pytest.raises(openai.BadRequestError) as err:
            await gw.client.responses.create(
                model="thinker", input="q", include=["message.output_text.logprobs"]
            )
        assert err.value.body["param"] == "include"  # type: ignore[index]
        assert "log probabilities" in err.value.body["message"]  # type: ignore[index]
