"""OpenAIChatModel streaming (SSE parsed by the real SDK) and an end-to-end agent round trip."""

from __future__ import annotations

import httpx
import pytest
import respx
from tests.models.common import WEATHER
from tests.models.openai_fakes import (
    CHAT_URL,
    call_fragment,
    chat_stream,
    chat_usage,
    chunk,
    http_client,
    sent,
    sse,
)

from agentloop import Agent, FunctionCall, FunctionCallOutput, Message, tool
from agentloop.errors import ProviderUnavailable
from agentloop.items import OutputText, Reasoning, Usage, user
from agentloop.models.base import (
    ModelRequest,
    ReasoningDelta,
    ResponseDone,
    StreamPart,
    TextDelta,
    ToolCallDelta,
)
from agentloop.models.openai_chat import OpenAIChatModel
from agentloop.models.retry import NO_RETRIES

pytestmark = pytest.mark.anyio


@pytest.fixture
def router() -> respx.Router:
    return respx.Router(assert_all_called=False)


@pytest.fixture
def model(router: respx.Router) -> OpenAIChatModel:
    return OpenAIChatModel("gpt-4.1-mini", api_key="sk-test", http_client=http_client(router))


def answer(router: respx.Router, *responses: httpx.Response) -> respx.Route:
    return router.post(CHAT_URL).mock(side_effect=list(responses))


async def collect(model: OpenAIChatModel, request: ModelRequest) -> list[StreamPart]:
    return [part async for part in model.stream(request)]


# --- streaming -----------------------------------------------------------------------------


async def test_streamed_text_arrives_as_deltas_and_usage_from_the_last_chunk(
    router: respx.Router, model: OpenAIChatModel
) -> None:
    route = answer(router, chat_stream(["Hel", "lo", "!"], usage=chat_usage(9, 3, cached=4)))
    parts = await collect(model, ModelRequest(items=[user("hi")]))
    assert parts[:-1] == [TextDelta(delta="Hel"), TextDelta(delta="lo"), TextDelta(delta="!")]
    done = parts[-1]
    assert isinstance(done, ResponseDone)
    assert done.response.items == (Message(role="assistant", content=(OutputText(text="Hello!"),)),)
    assert done.response.usage == Usage(
        input_tokens=9, output_tokens=3, total_tokens=12, cached_input_tokens=4
    )
    assert done.response.finish_reason == "stop"
    body = sent(route)
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


async def test_parallel_tool_calls_are_assembled_from_interleaved_fragments(
    router: respx.Router, model: OpenAIChatModel
) -> None:
    fragments = [
        call_fragment(0, "", call_id="call_p", name="get_weather"),
        call_fragment(1, "", call_id="call_o", name="get_weather"),
        call_fragment(0, '{"ci'),
        call_fragment(1, '{"city": '),
        call_fragment(0, 'ty": "Par'),
        call_fragment(1, '"Oslo"}'),
        call_fragment(0, 'is"}'),
    ]
    events = [chunk({"role": "assistant", "content": None})]
    events += [chunk({"tool_calls": [f]}) for f in fragments]
    events += [chunk({}, finish_reason="tool_calls"), chunk(usage=chat_usage())]
    answer(router, sse(events))
    parts = await collect(model, ModelRequest(items=[user("weather?")], tools=[WEATHER]))
    deltas = [p for p in parts if isinstance(p, ToolCallDelta)]
    assert [(d.index, d.call_id, d.arguments_delta) for d in deltas] == [
        (0, "call_p", ""),
        (1, "call_o", ""),
        (0, "call_p", '{"ci'),
        (1, "call_o", '{"city": '),
        (0, "call_p", 'ty": "Par'),
        (1, "call_o", '"Oslo"}'),
        (0, "call_p", 'is"}'),
    ]
    assert all(d.name == "get_weather" for d in deltas)
    done = parts[-1]
    assert isinstance(done, ResponseDone)
    assert done.response.items == (
        FunctionCall(call_id="call_p", name="get_weather", arguments='{"city": "Paris"}'),
        FunctionCall(call_id="call_o", name="get_weather", arguments='{"city": "Oslo"}'),
    )
    assert done.response.finish_reason == "tool_calls"


async def test_whole_calls_without_an_index_are_kept_apart(
    router: respx.Router, model: OpenAIChatModel
) -> None:
    # Some compatible servers send each call whole, in one chunk, without an index.
    whole = [
        {"id": "call_1", "type": "function", "function": {"name": "a", "arguments": "{}"}},
        {"id": "call_2", "type": "function", "function": {"name": "b", "arguments": "{}"}},
    ]
    events = [chunk({"role": "assistant", "tool_calls": whole}, finish_reason="stop")]
    answer(router, sse(events))
    parts = await collect(model, ModelRequest(items=[user("go")]))
    done = parts[-1]
    assert isinstance(done, ResponseDone)
    assert [(c.call_id, c.name) for c in done.response.tool_calls] == [
        ("call_1", "a"),
        ("call_2", "b"),
    ]
    assert done.response.finish_reason == "tool_calls"
    assert done.response.usage == Usage()


async def test_streamed_reasoning_content_becomes_reasoning_deltas(
    router: respx.Router, model: OpenAIChatModel
) -> None:
    events = [
        chunk({"role": "assistant", "reasoning_content": "Six "}),
        chunk({"reasoning_content": "sevens."}),
        chunk({"content": "42"}),
        chunk({}, finish_reason="stop"),
    ]
    answer(router, sse(events))
    parts = await collect(model, ModelRequest(items=[user("hi")]))
    assert parts[:3] == [
        ReasoningDelta(delta="Six "),
        ReasoningDelta(delta="sevens."),
        TextDelta(delta="42"),
    ]
    done = parts[-1]
    assert isinstance(done, ResponseDone)
    assert done.response.items[0] == Reasoning(content=("Six sevens.",))


async def test_an_error_chunk_mid_stream_is_a_typed_error_and_not_retried(
    router: respx.Router, model: OpenAIChatModel
) -> None:
    error = {"error": {"message": "The server had an error", "type": "server_error"}}
    route = answer(router, sse([chunk({"content": "Hel"}), error], done=False))
    seen: list[StreamPart] = []
    with pytest.raises(ProviderUnavailable, match="server had an error"):
        async for part in model.stream(ModelRequest(items=[user("hi")])):
            seen.append(part)
    assert seen == [TextDelta(delta="Hel")]
    assert route.call_count == 1


async def test_an_empty_stream_is_provider_unavailable_and_retried(
    router: respx.Router, model: OpenAIChatModel
) -> None:
    async def no_wait(seconds: float) -> None:
        pass

    model.sleep = no_wait
    route = answer(router, sse([]), chat_stream(["ok"]))
    parts = await collect(model, ModelRequest(items=[user("hi")]))
    done = parts[-1]
    assert isinstance(done, ResponseDone) and done.response.retries == 1
    assert route.call_count == 2
    model.retry = NO_RETRIES
    answer(router, sse([]))
    with pytest.raises(ProviderUnavailable, match="before any answer"):
        await collect(model, ModelRequest(items=[user("hi")]))


async def test_a_stream_ends_with_exactly_one_response_done(
    router: respx.Router, model: OpenAIChatModel
) -> None:
    answer(router, chat_stream(["a", "b"]))
    parts = await collect(model, ModelRequest(items=[user("hi")]))
    assert [isinstance(p, ResponseDone) for p in parts] == [False, False, True]


# --- end to end ----------------------------------------------------------------------------


@tool(read_only=True)
def add(a: int, b: int) -> str:
    """Add two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return str(a + b)


async def test_an_agent_does_a_tool_round_trip_over_the_chat_api(router: respx.Router) -> None:
    first = sse(
        [
            chunk({"role": "assistant", "content": None}),
            chunk({"tool_calls": [call_fragment(0, "", call_id="call_add", name="add")]}),
            chunk({"tool_calls": [call_fragment(0, '{"a": 2, ')]}),
            chunk({"tool_calls": [call_fragment(0, '"b": 3}')]}),
            chunk({}, finish_reason="tool_calls"),
            chunk(usage=chat_usage(50, 10)),
        ]
    )
    second = chat_stream(["2 + 3 = ", "5"], usage=chat_usage(70, 6))
    route = answer(router, first, second)
    model = OpenAIChatModel(
        "gpt-4.1-mini", api_key="sk-test", retry=NO_RETRIES, http_client=http_client(router)
    )
    agent = Agent(model, instructions="Use the tools.", tools=[add])
    result = await agent.run("What is 2 + 3?")
    assert result.status == "completed", result.error
    assert result.output == "2 + 3 = 5"
    assert result.turns == 2 and result.tool_calls == 1
    assert result.usage.input_tokens == 120 and result.usage.output_tokens == 16
    outputs = [i for i in result.items if isinstance(i, FunctionCallOutput)]
    assert [(o.call_id, o.output) for o in outputs] == [("call_add", "5")]
    tools = sent(route, 0)["tools"]
    assert tools[0]["function"]["name"] == "add"
    assert tools[0]["function"]["parameters"]["required"] == ["a", "b"]
    assert sent(route, 1)["messages"] == [
        {"role": "system", "content": "Use the tools."},
        {"role": "user", "content": "What is 2 + 3?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_add",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_add", "content": "5"},
    ]
