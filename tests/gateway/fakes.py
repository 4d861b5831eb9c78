"""Test models for the gateway: one that blocks mid-answer, one that counts its input."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import openai

from agentloop.items import FunctionCall, FunctionCallOutput, Message, OutputText, new_id
from agentloop.models.base import (
    Model,
    ModelRequest,
    ModelResponse,
    ResponseDone,
    StreamPart,
    TextDelta,
)


class GateModel(Model):
    """Turn 1 calls the server tool ``add``; turn 2 streams "partial " and then blocks until
    cancelled. ``reached`` is set when it blocks, ``cancelled`` when the block is cancelled."""

    name = "gate"

    def __init__(self) -> None:
        self.reached = asyncio.Event()
        self.cancelled = asyncio.Event()

    async def request(self, request: ModelRequest) -> ModelResponse:
        raise NotImplementedError

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamPart]:
        if not any(isinstance(i, FunctionCallOutput) for i in request.items):
            call = FunctionCall(call_id=new_id("call"), name="add", arguments='{"a": 1, "b": 2}')
            yield ResponseDone(response=ModelResponse(items=(call,), finish_reason="tool_calls"))
            return
        yield TextDelta(delta="partial ")
        self.reached.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        yield ResponseDone(response=ModelResponse(items=()))  # pragma: no cover


class CountingModel(Model):
    """Answers with how many items the request carried (to check conversation rebuilding)."""

    name = "counting"

    async def request(self, request: ModelRequest) -> ModelResponse:
        text = f"{len(request.items)} items"
        message = Message(role="assistant", content=(OutputText(text=text),))
        return ModelResponse(items=(message,))


DEMO_TOOLSET = {"type": "agentloop:toolset", "name": "demo"}


async def start_gated(client: openai.AsyncOpenAI, gate: GateModel) -> Any:
    """Start a background response on ``gate`` (turn 1 runs the server tool ``add``) and wait
    until its second turn blocks mid-answer."""
    created = await client.responses.create(
        model="gate",
        input="go",
        tools=[DEMO_TOOLSET],  # type: ignore[list-item]
        background=True,
    )
    await gate.reached.wait()
    return created


def assert_work_kept(response: Any) -> None:
    """A response cancelled while ``GateModel`` blocked keeps its first turn (the ``add`` call
    and its output) and the partial answer, marked incomplete."""
    assert [o.type for o in response.output] == [
        "function_call",
        "function_call_output",
        "message",
    ]
    partial = response.output[2]
    assert partial.status == "incomplete"
    assert partial.content[0].text == "partial "
