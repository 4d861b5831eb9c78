"""Behaviours 1-3: final answers, tool round trips, several calls per response."""

from __future__ import annotations

import asyncio

import pytest

from agentloop import Agent, FunctionCall, FunctionCallOutput, Message, ScriptExhausted, tool
from agentloop.testing import ScriptedModel, text, tool_call

pytestmark = pytest.mark.anyio


@tool(read_only=True)
async def echo(value: str) -> str:
    """Echo a value."""
    return value


async def test_text_only_answer_completes_in_one_turn() -> None:
    model = ScriptedModel([text("hello")])
    result = await Agent(model).run("hi")
    assert result.status == "completed"
    assert result.reason == "final_answer"
    assert result.output == "hello"
    assert result.turns == 1
    assert result.tool_calls == 0
    assert result.usage.input_tokens == 10 and result.usage.output_tokens == 5
    assert result.usage.total_tokens == 15


async def test_tool_outputs_are_fed_back_and_history_reads_in_order() -> None:
    model = ScriptedModel([tool_call("echo", value="a"), tool_call("echo", value="b"), text("ok")])
    result = await Agent(model, tools=[echo]).run("go")
    kinds = [type(i).__name__ for i in result.items]
    assert kinds == [
        "Message",
        "FunctionCall",
        "FunctionCallOutput",
        "FunctionCall",
        "FunctionCallOutput",
        "Message",
    ]
    outputs = [i for i in result.items if isinstance(i, FunctionCallOutput)]
    assert [o.output for o in outputs] == ["a", "b"]
    calls = [i for i in result.items if isinstance(i, FunctionCall)]
    assert [c.call_id for c in calls] == [o.call_id for o in outputs]
    # the model saw the previous output on its next request
    second = model.requests[1].items
    assert isinstance(second[-1], FunctionCallOutput) and second[-1].output == "a"
    assert result.turns == 3 and result.tool_calls == 2
    assert result.usage.total_tokens == 45
    assert result.new_items == result.items[1:]
    assert all(i.id for i in result.items)


async def test_outputs_follow_the_models_order_not_completion_order() -> None:
    finished: list[str] = []

    @tool(read_only=True)
    async def wait(name: str, delay: float) -> str:
        await asyncio.sleep(delay)
        finished.append(name)
        return name

    model = ScriptedModel(
        [
            [
                tool_call("wait", name="slow", delay=0.05),
                tool_call("wait", name="fast", delay=0.0),
                tool_call("wait", name="mid", delay=0.01),
            ],
            text("done"),
        ]
    )
    result = await Agent(model, tools=[wait]).run("go")
    assert finished == ["fast", "mid", "slow"]
    outputs = [i.output for i in result.items if isinstance(i, FunctionCallOutput)]
    assert outputs == ["slow", "fast", "mid"]
    # all calls ran before the next model call
    assert len(model.requests) == 2
    assert sum(isinstance(i, FunctionCallOutput) for i in model.requests[1].items) == 3


async def test_stream_yields_events_in_order_and_ends_with_run_finished() -> None:
    model = ScriptedModel([tool_call("echo", value="x"), text("bye")])
    stream = Agent(model, tools=[echo]).stream("go")
    types = [event.type async for event in stream]
    assert types[0] == "run_started"
    assert types[-1] == "run_finished"
    assert types.count("turn_started") == 2 and types.count("turn_completed") == 2
    assert types.index("tool_call_started") < types.index("tool_call_finished")
    assert "text_delta" in types
    assert stream.result.output == "bye"


async def test_tool_call_finished_event_carries_details() -> None:
    model = ScriptedModel([tool_call("echo", value="x", call_id="c1"), text("bye")])
    events = [e async for e in Agent(model, tools=[echo]).stream("go")]
    done = next(e for e in events if e.type == "tool_call_finished")
    assert done.call_id == "c1" and done.name == "echo" and done.output == "x"  # type: ignore[union-attr]
    assert done.is_error is False and done.cached is False  # type: ignore[union-attr]
    assert done.duration >= 0  # type: ignore[union-attr]


async def test_input_may_be_a_list_of_items_or_dicts() -> None:
    model = ScriptedModel([text("ok")])
    history = [
        {"type": "message", "role": "user", "content": "first"},
        {"type": "message", "role": "assistant", "content": "reply"},
        {"role": "user", "content": [{"type": "input_text", "text": "second"}]},
    ]
    result = await Agent(model).run(history)
    assert [m.text for m in result.items if isinstance(m, Message)] == [
        "first",
        "reply",
        "second",
        "ok",
    ]
    assert len(result.new_items) == 1


async def test_instructions_and_tool_schemas_reach_the_model() -> None:
    model = ScriptedModel([text("ok")])
    await Agent(model, instructions="Be brief.", tools=[echo]).run("hi")
    request = model.requests[0]
    assert request.instructions == "Be brief."
    assert [t.name for t in request.tools] == ["echo"]
    assert request.tools[0].parameters["properties"]["value"]["type"] == "string"


async def test_running_out_of_script_is_a_clear_failure() -> None:
    model = ScriptedModel([tool_call("echo", value="x")])
    result = await Agent(model, tools=[echo]).run("go")
    assert result.status == "failed" and result.reason == "model_error"
    assert isinstance(result.error, ScriptExhausted)
    assert "ran out of script" in str(result.error)


def test_run_sync() -> None:
    result = Agent(ScriptedModel([text("sync")])).run_sync("hi")
    assert result.output == "sync"


async def test_the_stream_is_closed_once_run_finished_is_delivered() -> None:
    stream = Agent(ScriptedModel([text("hi")])).stream("hello")
    async for event in stream:
        if event.type == "run_finished":
            break  # a consumer that stops at the last event leaves nothing suspended
    assert stream.result.status == "completed"
    assert getattr(stream._events, "ag_frame", "missing") is None  # the generator has ended
    assert [e async for e in stream] == []
