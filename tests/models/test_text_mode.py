"""Text-mode (ReAct) tool calling: the protocol shown to the model, the history rendered with
json.dumps, replies parsed into calls, unparseable actions fed back with the expected format,
streaming, and the automatic fallback when a provider rejects tools."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentloop import Agent, FunctionCall, FunctionCallOutput, Limits, Message, Reasoning, tool
from agentloop.errors import ConfigError, ToolsNotSupported
from agentloop.items import Item, assistant, user
from agentloop.models.base import (
    Model,
    ModelRequest,
    ModelResponse,
    ReasoningDelta,
    ResponseDone,
    StreamPart,
    StreamWarning,
    TextDelta,
    ToolCallDelta,
)
from agentloop.models.resolve import PROVIDERS, resolve
from agentloop.models.text_mode import TextModeFallback, TextToolMode
from agentloop.models.text_protocol import PARSE_ERROR_TOOL, render_history
from agentloop.testing import FunctionModel

TOOL_CALLING = "ToolsNotSupported: registry.ollama.ai/library/gemma:2b does not support tools"


@tool(read_only=True)
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


@tool(read_only=True)
def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


def _texts(items: Sequence[Item]) -> list[str]:
    return [i.text for i in items if isinstance(i, Message)]


def scripted(*replies: str) -> FunctionModel:
    """An inner model without tools that answers with the given texts, in order."""
    it = iter(replies)

    def reply(request: ModelRequest) -> str:
        assert not request.tools, "text mode must not send native tools"
        return next(it)

    return FunctionModel(reply, name="tiny")


class Chunked(Model):
    """An inner model that streams its reply a few characters at a time."""

    def __init__(self, reply: str, size: int = 3) -> None:
        self.reply, self.size, self.name = reply, size, "chunked"

    async def request(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse(items=(assistant(self.reply),))

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamPart]:
        for i in range(0, len(self.reply), self.size):
            yield TextDelta(delta=self.reply[i : i + self.size])
        yield ResponseDone(response=await self.request(request))


# --- the protocol and the history ------------------------------------------------------------


@pytest.mark.anyio
async def test_tools_are_described_in_the_instructions_and_not_sent_natively() -> None:
    inner = scripted("Final Answer: hi")
    agent = Agent(TextToolMode(inner), instructions="Be brief.", tools=[add, read_file])
    await agent.run("hello")
    request = inner.requests[0]
    assert request.tools == () and request.output_schema is None
    instructions = request.instructions or ""
    assert instructions.startswith("Be brief.\n\n")
    assert "### add\nAdd two numbers." in instructions
    assert json.dumps(dict(add.schema.parameters), ensure_ascii=False) in instructions
    for expected in (
        "Thought:",
        "Action: <the tool name, exactly one of: add, read_file>",
        "Action Input:",
        "Final Answer:",
        '```json\n{"tool": "add", "arguments": ',
    ):
        assert expected in instructions  # fmt: skip
    assert "'" not in instructions  # the model never sees single quotes from us


@pytest.mark.anyio
async def test_tool_choice_and_parallel_setting_are_spelled_out() -> None:
    inner = scripted('Action: add\nAction Input: {"a": 1, "b": 2}', "Final Answer: 3")
    agent = Agent(TextToolMode(inner), tools=[add], tool_choice="add", parallel_tool_calls=False)
    await agent.run("sum")
    instructions = inner.requests[0].instructions or ""
    assert "You must use the tool add in your next reply." in instructions
    assert "Use at most one tool per reply." in instructions


def test_history_is_rendered_with_json_dumps_only() -> None:
    items: list[Item] = [
        user("read two files"),
        Reasoning(content=("I need both files.",)),
        FunctionCall(call_id="c1", name="read_file", arguments="{'path': 'a.txt'}"),
        FunctionCall(call_id="c2", name="add", arguments="{'a': 1, 'b': 2,}"),
        FunctionCallOutput(call_id="c1", output="alpha"),
        FunctionCallOutput(call_id="c2", output="3"),
        assistant("Both done."),
    ]
    rendered = render_history(items, (add.schema, read_file.schema))
    assert [m.role for m in rendered if isinstance(m, Message)] == [
        "user", "assistant", "user", "assistant"]  # fmt: skip
    texts = _texts(rendered)
    assert texts[1] == (
        "Thought: I need both files.\n"
        'Action: read_file\nAction Input: {"path": "a.txt"}\n'
        'Action: add\nAction Input: {"a": 1, "b": 2}'
    )
    assert texts[2] == "Observation 1 (read_file): alpha\n\nObservation 2 (add): 3"
    assert texts[3] == "Final Answer: Both done."
    assert not any("'" in t for t in texts[1:])


def test_error_observations_are_marked() -> None:
    items: list[Item] = [
        FunctionCall(call_id="c1", name="read_file", arguments='{"path": "nope"}'),
        FunctionCallOutput(call_id="c1", output="no such file", is_error=True),
    ]
    assert _texts(render_history(items, (read_file.schema,)))[-1] == (
        "Observation: Error: no such file"
    )


# --- replies into items, through the real loop ---------------------------------------------


@pytest.mark.anyio
async def test_react_run_end_to_end() -> None:
    inner = scripted(
        "Thought: I should add.\nAction: add\nAction Input: {'a': 2, 'b': 3,}",
        "Thought: I have it.\nFinal Answer: 5",
    )
    result = await Agent(TextToolMode(inner), tools=[add]).run("what is 2+3?")
    assert result.status == "completed" and result.output == "5"
    kinds = [type(i).__name__ for i in result.new_items]
    assert kinds == ["Reasoning", "FunctionCall", "FunctionCallOutput", "Reasoning", "Message"]
    call = result.new_items[1]
    assert isinstance(call, FunctionCall) and call.arguments == '{"a": 2, "b": 3}'
    assert call.call_id.startswith("call_")
    second = _texts(inner.requests[1].items)
    assert second[-2] == ('Thought: I should add.\nAction: add\nAction Input: {"a": 2, "b": 3}')
    assert second[-1] == "Observation: 5"


@pytest.mark.anyio
async def test_fenced_block_and_several_actions_are_several_calls() -> None:
    inner = scripted(
        'Two at once.\n```json\n{"tool": "add", "arguments": {"a": 1, "b": 1}}\n```\n'
        'Action: read_file\nAction Input: {{"path": "x.txt"}}',
        "Final Answer: done",
    )
    result = await Agent(TextToolMode(inner), tools=[add, read_file]).run("go")
    outputs = [i.output for i in result.new_items if isinstance(i, FunctionCallOutput)]
    assert outputs == ["2", "contents of x.txt"]
    calls = [i for i in result.new_items if isinstance(i, FunctionCall)]
    assert len({c.call_id for c in calls}) == 2
    assert _texts(inner.requests[1].items)[-1] == (
        "Observation 1 (add): 2\n\nObservation 2 (read_file): contents of x.txt"
    )


@pytest.mark.anyio
async def test_plain_text_reply_is_the_final_answer() -> None:
    result = await Agent(TextToolMode(scripted("Hi! How can I help?")), tools=[add]).run("hi")
    assert result.output == "Hi! How can I help?"
    assert [type(i).__name__ for i in result.new_items] == ["Message"]


@pytest.mark.anyio
async def test_unparseable_arguments_become_an_observation_with_the_format() -> None:
    inner = scripted(
        "Action: add\nAction Input: {a: 1, b: 2",
        'Action: add\nAction Input: {"a": 1, "b": 2}',
        "Final Answer: 3",
    )
    result = await Agent(TextToolMode(inner), tools=[add]).run("sum")
    assert result.status == "completed" and result.output == "3"
    first = next(i for i in result.new_items if isinstance(i, FunctionCallOutput))
    assert first.is_error and "Invalid arguments for tool 'add'" in first.output
    observation = _texts(inner.requests[1].items)[-1]
    assert observation.startswith("Observation: Error: Invalid arguments for tool 'add'")
    assert "Reply in exactly this format:" in observation
    assert 'Action Input: <the arguments as one JSON object with double quotes, e.g. {"a": 1, ' in (
        observation
    )


@pytest.mark.anyio
async def test_action_without_a_tool_name_becomes_an_observation_with_the_format() -> None:
    inner = scripted('Action Input: {"a": 1, "b": 2}', "Final Answer: fine")
    result = await Agent(TextToolMode(inner), tools=[add]).run("sum")
    assert result.status == "completed" and result.output == "fine"
    call = next(i for i in result.new_items if isinstance(i, FunctionCall))
    assert call.name == PARSE_ERROR_TOOL
    assistant_turn, observation = _texts(inner.requests[1].items)[-2:]
    assert assistant_turn == 'Action Input: {"a": 1, "b": 2}'  # what the model wrote
    assert observation.startswith(
        "Observation: Error: your reply could not be parsed: an Action Input came without an "
        "Action line naming the tool."
    )
    assert "Action: <one tool name: add>" in observation


@pytest.mark.anyio
async def test_a_model_that_never_learns_the_format_is_stopped_by_the_error_limit() -> None:
    inner = FunctionModel(lambda request: "Action:\nAction Input: ???")
    limits = Limits(max_consecutive_errors=2)
    result = await Agent(TextToolMode(inner), tools=[add], limits=limits).run("sum")
    assert result.status == "incomplete" and result.reason == "tool_errors"


def test_reserved_tool_name_is_refused() -> None:
    @tool(name=PARSE_ERROR_TOOL)
    def clash() -> str:
        return ""

    mode = TextToolMode(scripted())
    with pytest.raises(ConfigError, match="reserved"):
        mode.inner_request(ModelRequest(items=(), tools=(clash.schema,)))


@pytest.mark.anyio
async def test_without_tools_the_inner_model_is_used_as_it_is() -> None:
    inner = scripted("Action: nothing to see")
    result = await Agent(TextToolMode(inner)).run("hi")
    assert result.output == "Action: nothing to see"
    assert inner.requests[0].instructions is None


@pytest.mark.anyio
async def test_usage_and_model_pass_through() -> None:
    inner = scripted("Final Answer: ok")
    mode = TextToolMode(inner)
    response = await mode.request(ModelRequest(items=(user("x"),), tools=(add.schema,)))
    assert response.usage.total_tokens == 15 and response.model == "tiny"
    assert mode.name == "tiny" and response.text == "ok"


# --- streaming -------------------------------------------------------------------------------


async def _parts(model: Model, request: ModelRequest) -> list[StreamPart]:
    return [part async for part in model.stream(request)]


@pytest.mark.anyio
async def test_final_answer_streams_live_without_labels() -> None:
    reply = "Thought: simple.\n**Final Answer:** The sum\nis 3.  \n"
    agent = Agent(TextToolMode(Chunked(reply, size=2)), tools=[add])
    stream = agent.stream("sum")
    events = [e async for e in stream]
    deltas = [e.delta for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 3 and "".join(deltas) == "The sum\nis 3."
    assert stream.result.output == "The sum\nis 3."
    reasoning = [e.delta for e in events if isinstance(e, ReasoningDelta)]
    assert reasoning == ["simple."]
    first_text = next(i for i, e in enumerate(events) if isinstance(e, TextDelta))
    assert any(isinstance(e, ReasoningDelta) for e in events[:first_text])


@pytest.mark.anyio
async def test_calls_stream_as_tool_call_deltas_and_no_text() -> None:
    mode = TextToolMode(Chunked('Thought: t\nAction: add\nAction Input: {"a": 1, "b": 2}'))
    parts = await _parts(mode, ModelRequest(items=(user("x"),), tools=(add.schema,)))
    assert not any(isinstance(p, TextDelta) for p in parts)
    assert [type(p).__name__ for p in parts] == ["ReasoningDelta", "ToolCallDelta", "ResponseDone"]
    delta, done = parts[1], parts[2]
    assert isinstance(delta, ToolCallDelta) and isinstance(done, ResponseDone)
    assert delta.call_id == done.response.tool_calls[0].call_id
    assert done.response.finish_reason == "tool_calls"


reply_pieces = st.lists(
    st.sampled_from(["Thought: ", "Final Answer:", "**Final Answer:**", " ", "\n", "**", "x",
                     "Action: add", "Action Input: {\"a\": 1, \"b\": 2}", "Observation: 9",
                     "ok.", "```json\n", "```", '{"tool": "add", "arguments": {}}']),
    max_size=12,
).map("".join)  # fmt: skip


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reply_pieces, st.integers(min_value=1, max_value=7))
def test_fuzz_streamed_text_always_equals_the_final_answer(reply: str, size: int) -> None:
    mode = TextToolMode(Chunked(reply, size=size))
    request = ModelRequest(items=(user("x"),), tools=(add.schema,))
    parts = asyncio.run(_parts(mode, request))
    done = parts[-1]
    assert isinstance(done, ResponseDone)
    streamed = "".join(p.delta for p in parts if isinstance(p, TextDelta))
    assert streamed == done.response.text
    assert (not done.response.tool_calls) or not streamed


# --- automatic fallback ----------------------------------------------------------------------


def rejecting(reply: Callable[[ModelRequest], str]) -> FunctionModel:
    """A provider model that rejects native tools, like Ollama's "does not support tools"."""

    def fn(request: ModelRequest) -> str:
        if request.tools:
            raise ToolsNotSupported(TOOL_CALLING, status_code=400)
        return reply(request)

    return FunctionModel(fn, name="gemma:2b")


def _react(request: ModelRequest) -> str:
    last = _texts(request.items)[-1]
    if last.startswith("Observation:"):
        return f"Final Answer: {last.removeprefix('Observation: ')}"
    return 'Thought: add\nAction: add\nAction Input: {"a": 20, "b": 22}'


@pytest.mark.anyio
async def test_rejected_tools_fall_back_to_text_mode_once_with_a_warning() -> None:
    inner = rejecting(_react)
    agent = Agent(TextModeFallback(inner), tools=[add])
    stream = agent.stream("what is 20 + 22?")
    events = [e async for e in stream]
    warnings = [e for e in events if e.type == "warning"]
    assert len(warnings) == 1 and isinstance(warnings[0], StreamWarning)
    assert "does not support native tool calling" in warnings[0].message
    assert "text-mode" in warnings[0].message
    assert stream.result.status == "completed" and stream.result.output == "42"
    native_attempts = sum(1 for r in inner.requests if r.tools)
    assert native_attempts == 1

    again = agent.stream("and again?")
    later = [e async for e in again]
    assert not any(e.type == "warning" for e in later)
    assert again.result.output == "42"
    assert sum(1 for r in inner.requests if r.tools) == 1  # straight to text mode now


@pytest.mark.anyio
async def test_fallback_also_works_without_streaming() -> None:
    model = TextModeFallback(rejecting(_react))
    request = ModelRequest(items=(user("sum"),), tools=(add.schema,))
    response = await model.request(request)
    assert [c.name for c in response.tool_calls] == ["add"]
    assert model.text_mode is not None


@pytest.mark.anyio
async def test_models_with_tool_calling_are_left_alone() -> None:
    inner = FunctionModel(lambda request: "native answer")
    model = TextModeFallback(inner)
    result = await Agent(model, tools=[add]).run("hi")
    assert result.output == "native answer" and model.text_mode is None
    assert inner.requests[0].tools  # tools were sent natively


@pytest.mark.anyio
async def test_other_errors_are_not_swallowed() -> None:
    def fail(request: ModelRequest) -> str:
        raise ConfigError("boom")

    model = TextModeFallback(FunctionModel(fail))
    with pytest.raises(ConfigError):
        await _parts(model, ModelRequest(items=(user("x"),), tools=(add.schema,)))
    assert model.text_mode is None


def test_resolve_applies_the_fallback_where_a_model_may_lack_tools(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for provider in PROVIDERS:
        monkeypatch.setitem(PROVIDERS, provider, "agentloop.testing:FunctionModel")
    ollama = resolve("ollama:gemma:2b")
    assert isinstance(ollama, TextModeFallback) and ollama.name == "function"
    assert isinstance(ollama.model, FunctionModel) and ollama.fn == "gemma:2b"
    assert not isinstance(resolve("anthropic:claude"), TextModeFallback | TextToolMode)
    assert isinstance(resolve("ollama:gemma:2b", tool_calling="text"), TextToolMode)
