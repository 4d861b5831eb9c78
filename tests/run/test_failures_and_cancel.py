"""Behaviour 6: model failures and cancellation keep the items produced so far."""

from __future__ import annotations

import asyncio

import pytest

from agentloop import Agent, FunctionCall, FunctionCallOutput, tool
from agentloop.errors import ProviderUnavailable
from agentloop.testing import ScriptedModel, text, tool_call

pytestmark = pytest.mark.anyio


@tool(read_only=True)
async def echo(value: str) -> str:
    return value


async def test_model_error_fails_the_run_and_keeps_items() -> None:
    boom = ProviderUnavailable("upstream 503")
    model = ScriptedModel([tool_call("echo", value="a"), boom])
    result = await Agent(model, tools=[echo]).run("go")
    assert result.status == "failed" and result.reason == "model_error"
    assert result.error is boom
    assert [type(i).__name__ for i in result.items] == [
        "Message",
        "FunctionCall",
        "FunctionCallOutput",
    ]
    assert result.turns == 2


async def test_a_bug_in_a_model_adapter_is_a_failed_run_not_a_crash() -> None:
    model = ScriptedModel([ValueError("adapter bug")])
    result = await Agent(model).run("go")
    assert result.status == "failed" and isinstance(result.error, ValueError)


class _Gate:
    """A tool that signals when it starts and then blocks until cancelled."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = False

        @tool(read_only=True)
        async def block() -> str:
            self.started.set()
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                self.cancelled = True
                raise
            return "never"

        self.tool = block


async def test_cancelling_the_task_ends_cancelled_with_tools_cancelled() -> None:
    gate = _Gate()
    model = ScriptedModel([[tool_call("block"), tool_call("block")], text("never")])
    task = asyncio.create_task(Agent(model, tools=[gate.tool]).run("go"))
    await gate.started.wait()
    task.cancel()
    result = await task
    assert result.status == "cancelled" and result.reason == "cancelled"
    assert gate.cancelled
    # items so far are kept, and every call has an output so the history stays valid
    calls = [i for i in result.items if isinstance(i, FunctionCall)]
    outs = [i for i in result.items if isinstance(i, FunctionCallOutput)]
    assert len(calls) == 2 and len(outs) == 2
    assert all(o.is_error and "cancelled" in o.output for o in outs)


async def test_cancel_on_a_streamed_run() -> None:
    gate = _Gate()
    model = ScriptedModel([tool_call("block"), text("never")])
    stream = Agent(model, tools=[gate.tool]).stream("go")
    seen = []

    async def cancel_when_started() -> None:
        await gate.started.wait()
        stream.cancel()

    canceller = asyncio.create_task(cancel_when_started())
    async for event in stream:
        seen.append(event.type)
    await canceller
    assert seen[-1] == "run_finished"
    assert stream.result.status == "cancelled"
    assert gate.cancelled
    assert len(model.requests) == 1
    # the consumer's task is not left cancelled
    await asyncio.sleep(0)


async def test_cancel_between_events_stops_before_the_next_turn() -> None:
    model = ScriptedModel([tool_call("echo", value="a"), text("never")])
    stream = Agent(model, tools=[echo]).stream("go")
    async for event in stream:
        if event.type == "tool_call_finished":
            stream.cancel()
    assert stream.result.status == "cancelled"
    assert len(model.requests) == 1
    assert isinstance(stream.result.items[-1], FunctionCallOutput)


async def test_cancel_after_finish_is_harmless() -> None:
    stream = Agent(ScriptedModel([text("hi")])).stream("go")
    result = await stream.drain()
    stream.cancel()
    assert result.status == "completed"
