"""Anthropic adapter against a local fake of the Messages API (the real SDK parses everything)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from tests.models.common import FAST, WEATHER
from tests.models.wire_server import FakeServer, refused_url, serve

from agentloop import Agent, tool
from agentloop.errors import (
    AuthenticationFailed,
    BadRequest,
    ConfigError,
    ContextWindowExceeded,
    ModelNotFound,
    ProviderUnavailable,
    RateLimited,
)
from agentloop.items import (
    FunctionCall,
    FunctionCallOutput,
    InputImage,
    InputText,
    Message,
    OutputText,
    Reasoning,
    Usage,
    system,
    user,
)
from agentloop.models.anthropic import AnthropicModel
from agentloop.models.base import (
    ModelRequest,
    ModelSettings,
    ReasoningDelta,
    ResponseDone,
    TextDelta,
    ToolCallDelta,
    ToolSchema,
)
from agentloop.models.retry import RetryPolicy

pytestmark = pytest.mark.anyio

Maker = Callable[..., AnthropicModel]
PNG = "iVBORw0KGgo="


@pytest.fixture
def server() -> Iterator[FakeServer]:
    yield from serve()


@pytest.fixture
async def make(server: FakeServer) -> AsyncIterator[Callable[..., AnthropicModel]]:
    """Builds models pointed at the fake server and closes them after the test."""
    made: list[AnthropicModel] = []

    def build(**kwargs: Any) -> AnthropicModel:
        kwargs.setdefault("retry", FAST)
        kwargs.setdefault("base_url", server.url)
        made.append(AnthropicModel("claude-sonnet-4-6", api_key="test-key", **kwargs))
        return made[-1]

    yield build
    for model in made:
        await model.aclose()


def message(content: list[dict[str, Any]], stop_reason: str = "end_turn", **usage: int) -> Any:
    return {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 6, **usage},
    }


def text_stream(*chunks: str, stop_reason: str = "end_turn") -> list[tuple[str, Any]]:
    events: list[tuple[str, Any]] = [
        ("message_start", {"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "content": [],
            "model": "claude-sonnet-4-6", "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 25, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0, "output_tokens": 1}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
    ]  # fmt: skip
    for chunk in chunks:
        delta = {"type": "text_delta", "text": chunk}
        events.append(
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
        )
    events += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta",
                           "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                           "usage": {"output_tokens": 15}}),
        ("message_stop", {"type": "message_stop"}),
    ]  # fmt: skip
    return events


def error_body(kind: str, text: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": text}}


# --- request translation ---------------------------------------------------------------------


async def test_request_body_carries_system_images_calls_results_and_tool_choice(
    make: Maker,
    server: FakeServer,
) -> None:
    server.json(message([{"type": "text", "text": "ok"}]))
    items = [
        system("Be brief."),
        Message(
            role="user",
            content=(
                InputText(text="What is here?"),
                InputImage(image_url=f"data:image/png;base64,{PNG}"),
                InputImage(image_url="https://example.com/cat.jpg"),
            ),
        ),
        Message(role="assistant", content=(OutputText(text="Let me look."),)),
        Reasoning(summary=("thinking...",), encrypted_content="anthropic.thinking:sig-1"),
        FunctionCall(call_id="toolu_1", name="get_weather", arguments='{"city": "Paris"}'),
        FunctionCall(call_id="toolu_2", name="get_weather", arguments="{not json"),
        FunctionCallOutput(call_id="toolu_1", output="sunny"),
        FunctionCallOutput(call_id="toolu_2", output="bad arguments", is_error=True),
        Message(role="developer", content=(InputText(text="Answer in French."),)),
        user("Thanks"),
    ]
    request = ModelRequest(
        items=items,
        instructions="You are a helper.",
        tools=[WEATHER],
        tool_choice="required",
        parallel_tool_calls=False,
    )
    await make().request(request)

    assert server.last.path == "/v1/messages"
    headers = server.last.headers
    assert "test-key" in (headers.get("x-api-key") or headers.get("authorization") or "")
    assert server.last.json() == {
        "model": "claude-sonnet-4-6",
        "max_tokens": 4096,
        "system": "You are a helper.\n\nBe brief.\n\nAnswer in French.",
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "What is here?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                             "data": PNG}},
                {"type": "image", "source": {"type": "url",
                                             "url": "https://example.com/cat.jpg"}},
            ]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "thinking", "thinking": "thinking...", "signature": "sig-1"},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                 "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "toolu_2", "name": "get_weather",
                 "input": {"INVALID_JSON": "{not json"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "bad arguments",
                 "is_error": True},
                {"type": "text", "text": "Thanks"},
            ]},
        ],
        "tools": [{"name": "get_weather", "description": "Weather for a city.",
                   "input_schema": WEATHER.parameters}],
        "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
    }  # fmt: skip


@pytest.mark.parametrize(
    ("choice", "parallel", "expected"),
    [
        ("auto", True, {"type": "auto"}),
        ("auto", False, {"type": "auto", "disable_parallel_tool_use": True}),
        ("required", True, {"type": "any"}),
        ("none", False, {"type": "none"}),
        ("get_weather", True, {"type": "tool", "name": "get_weather"}),
    ],
)
async def test_tool_choice_forms(
    make: Maker, server: FakeServer, choice: str, parallel: bool, expected: dict[str, Any]
) -> None:
    server.json(message([{"type": "text", "text": "ok"}]))
    request = ModelRequest(
        items=[user("hi")], tools=[WEATHER], tool_choice=choice, parallel_tool_calls=parallel
    )
    await make().request(request)
    assert server.last.json()["tool_choice"] == expected


async def test_no_tools_sends_neither_tools_nor_tool_choice(
    make: Maker, server: FakeServer
) -> None:
    server.json(message([{"type": "text", "text": "ok"}]))
    await make().request(ModelRequest(items=[user("hi")]))
    body = server.last.json()
    assert "tools" not in body and "tool_choice" not in body and "system" not in body


async def test_settings_reasoning_strict_tools_and_output_schema_reach_the_body(
    make: Maker,
    server: FakeServer,
) -> None:
    server.json(message([{"type": "text", "text": "{}"}]))
    strict = ToolSchema(name="t", description="d", parameters={"type": "object"}, strict=True)
    settings = ModelSettings(
        temperature=0.2,
        max_output_tokens=900,
        reasoning={"budget_tokens": 2048},
        extra={"metadata": {"user_id": "u1"}},
    )
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    request = ModelRequest(items=[user("hi")], tools=[strict], settings=settings,
                           output_schema=schema)  # fmt: skip
    await make(max_tokens=50).request(request)
    body = server.last.json()
    assert body["max_tokens"] == 900
    assert body["temperature"] == 0.2
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["metadata"] == {"user_id": "u1"}
    assert body["tools"][0]["strict"] is True
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": schema}}


async def test_reasoning_from_other_providers_is_not_sent_as_thinking(
    make: Maker, server: FakeServer
) -> None:
    server.json(message([{"type": "text", "text": "ok"}]))
    items = [
        user("hi"),
        Reasoning(summary=("openai thoughts",), encrypted_content="gAAAA-opaque"),
        Reasoning(encrypted_content="anthropic.redacted:EmwKAhgB"),
        Message(role="assistant", content=(OutputText(text="hello"),)),
        user("again"),
    ]
    await make().request(ModelRequest(items=items))
    assert server.last.json()["messages"][1] == {
        "role": "assistant",
        "content": [
            {"type": "redacted_thinking", "data": "EmwKAhgB"},
            {"type": "text", "text": "hello"},
        ],
    }


# --- response translation --------------------------------------------------------------------


async def test_response_maps_thinking_text_tool_calls_and_usage(
    make: Maker, server: FakeServer
) -> None:
    server.json(
        message(
            [
                {
                    "type": "thinking",
                    "thinking": "User wants weather.",
                    "signature": "EqQBCgIYAhIM",
                },
                {"type": "text", "text": "Checking."},
                {
                    "type": "tool_use",
                    "id": "toolu_01A",
                    "name": "get_weather",
                    "input": {"city": "Paris"},
                },
            ],
            stop_reason="tool_use",
            input_tokens=100,
            output_tokens=50,
            cache_creation_input_tokens=10,
            cache_read_input_tokens=20,
        )
    )
    response = await make().request(ModelRequest(items=[user("weather?")], tools=[WEATHER]))
    thinking = Reasoning(
        summary=("User wants weather.",), encrypted_content="anthropic.thinking:EqQBCgIYAhIM"
    )
    assert response.items == (
        thinking,
        Message(role="assistant", content=(OutputText(text="Checking."),)),
        FunctionCall(call_id="toolu_01A", name="get_weather", arguments='{"city": "Paris"}'),
    )
    assert response.finish_reason == "tool_calls"
    assert response.usage == Usage.of(130, 50, cached_input_tokens=20)
    assert response.model == "claude-sonnet-4-6"
    assert response.retries == 0


@pytest.mark.parametrize(
    ("stop_reason", "finish"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("model_context_window_exceeded", "length"),
        ("refusal", "content_filter"),
    ],
)
async def test_stop_reasons_map_to_finish_reasons(
    make: Maker, server: FakeServer, stop_reason: str, finish: str
) -> None:
    server.json(message([{"type": "text", "text": "x"}], stop_reason=stop_reason))
    response = await make().request(ModelRequest(items=[user("hi")]))
    assert response.finish_reason == finish


# --- streaming -------------------------------------------------------------------------------


async def test_stream_yields_deltas_and_assembles_thinking_text_and_calls(
    make: Maker,
    server: FakeServer,
) -> None:
    server.sse([
        ("message_start", {"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "content": [],
            "model": "claude-sonnet-4-6", "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 40, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 8, "output_tokens": 1}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "thinking", "thinking": "",
                                                   "signature": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "thinking_delta", "thinking": "Need data."}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "signature_delta", "signature": "EqQB"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("ping", {"type": "ping"}),
        ("content_block_start", {"type": "content_block_start", "index": 1,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 1,
                                 "delta": {"type": "text_delta", "text": "Let me "}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 1,
                                 "delta": {"type": "text_delta", "text": "check."}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        ("content_block_start", {"type": "content_block_start", "index": 2,
                                 "content_block": {"type": "tool_use", "id": "toolu_9",
                                                   "name": "get_weather", "input": {}}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 2,
                                 "delta": {"type": "input_json_delta", "partial_json": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 2,
                                 "delta": {"type": "input_json_delta",
                                           "partial_json": "{\"city\": \"Par"}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 2,
                                 "delta": {"type": "input_json_delta", "partial_json": "is\"}"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 2}),
        ("message_delta", {"type": "message_delta",
                           "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                           "usage": {"output_tokens": 89}}),
        ("message_stop", {"type": "message_stop"}),
    ])  # fmt: skip
    model = make()
    parts = [p async for p in model.stream(ModelRequest(items=[user("hi")], tools=[WEATHER]))]

    assert server.last.json()["stream"] is True
    assert parts[:-1] == [
        ReasoningDelta(delta="Need data."),
        TextDelta(delta="Let me "),
        TextDelta(delta="check."),
        ToolCallDelta(index=0, call_id="toolu_9", name="get_weather", arguments_delta=""),
        ToolCallDelta(index=0, call_id=None, name=None, arguments_delta='{"city": "Par'),
        ToolCallDelta(index=0, call_id=None, name=None, arguments_delta='is"}'),
    ]
    done = parts[-1]
    assert isinstance(done, ResponseDone)
    assert done.response.items == (
        Reasoning(summary=("Need data.",), encrypted_content="anthropic.thinking:EqQB"),
        Message(role="assistant", content=(OutputText(text="Let me check."),)),
        FunctionCall(call_id="toolu_9", name="get_weather", arguments='{"city": "Paris"}'),
    )
    assert done.response.finish_reason == "tool_calls"
    assert done.response.usage == Usage.of(48, 89, cached_input_tokens=8)


async def test_stream_that_ends_early_is_an_error(make: Maker, server: FakeServer) -> None:
    server.sse(text_stream("partial")[:3])
    model = make(retry=RetryPolicy(max_retries=0))
    with pytest.raises(ProviderUnavailable, match="message_stop"):
        _ = [p async for p in model.stream(ModelRequest(items=[user("hi")]))]


async def test_overloaded_error_event_before_output_is_retried(
    make: Maker, server: FakeServer
) -> None:
    server.sse(
        [
            text_stream()[0],
            ("error", error_body("overloaded_error", "Overloaded")),
        ]
    )
    server.sse(text_stream("fine"))
    parts = [p async for p in make().stream(ModelRequest(items=[user("hi")]))]
    done = parts[-1]
    assert isinstance(done, ResponseDone)
    assert done.response.text == "fine"
    assert done.response.retries == 1
    assert len(server.requests) == 2


async def test_error_event_after_output_is_final(make: Maker, server: FakeServer) -> None:
    events = text_stream("part one")[:3]
    server.sse([*events, ("error", error_body("overloaded_error", "Overloaded"))])
    parts: list[Any] = []
    with pytest.raises(ProviderUnavailable, match="Overloaded") as info:
        async for part in make().stream(ModelRequest(items=[user("hi")])):
            parts.append(part)
    assert parts == [TextDelta(delta="part one")]
    assert info.value.retries == 0
    assert len(server.requests) == 1


# --- errors and retries ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "kind", "text", "error"),
    [
        (400, "invalid_request_error", "messages: field required", BadRequest),
        (400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum",
         ContextWindowExceeded),
        (401, "authentication_error", "invalid x-api-key", AuthenticationFailed),
        (403, "permission_error", "no access", AuthenticationFailed),
        (404, "not_found_error", "model: claude-nope", ModelNotFound),
        (500, "api_error", "Internal server error", ProviderUnavailable),
        (529, "overloaded_error", "Overloaded", ProviderUnavailable),
    ],
)  # fmt: skip
async def test_http_errors_map_to_typed_errors(
    make: Maker, server: FakeServer, status: int, kind: str, text: str, error: type[Exception]
) -> None:
    server.json(error_body(kind, text), status=status)
    model = make(retry=RetryPolicy(max_retries=0))
    with pytest.raises(error, match=text.split(":")[0]) as info:
        await model.request(ModelRequest(items=[user("hi")]))
    assert getattr(info.value, "status_code", None) == status


async def test_rate_limit_carries_retry_after(make: Maker, server: FakeServer) -> None:
    server.json(
        error_body("rate_limit_error", "Number of requests has exceeded your rate limit"),
        status=429,
        headers={"retry-after": "7"},
    )
    model = make(retry=RetryPolicy(max_retries=0))
    with pytest.raises(RateLimited) as info:
        await model.request(ModelRequest(items=[user("hi")]))
    assert info.value.retry_after == 7.0


async def test_transient_errors_are_retried_and_counted(make: Maker, server: FakeServer) -> None:
    server.json(error_body("overloaded_error", "Overloaded"), status=529)
    server.json(error_body("rate_limit_error", "slow down"), status=429,
                headers={"retry-after": "30"})  # fmt: skip
    server.json(message([{"type": "text", "text": "finally"}]))
    response = await make().request(ModelRequest(items=[user("hi")]))
    assert response.text == "finally"
    assert response.retries == 2
    assert len(server.requests) == 3


async def test_retries_give_up_with_the_count_on_the_error(make: Maker, server: FakeServer) -> None:
    for _ in range(3):
        server.json(error_body("api_error", "boom"), status=500)
    with pytest.raises(ProviderUnavailable) as info:
        await make().request(ModelRequest(items=[user("hi")]))
    assert info.value.retries == 2
    assert len(server.requests) == 3


async def test_other_client_errors_are_not_retried(make: Maker, server: FakeServer) -> None:
    server.json(error_body("invalid_request_error", "bad"), status=400)
    with pytest.raises(BadRequest):
        await make().request(ModelRequest(items=[user("hi")]))
    assert len(server.requests) == 1


async def test_dropped_connection_is_retried(make: Maker, server: FakeServer) -> None:
    server.drop()
    server.json(message([{"type": "text", "text": "back"}]))
    response = await make().request(ModelRequest(items=[user("hi")]))
    assert response.text == "back" and response.retries == 1


async def test_unreachable_server_is_provider_unavailable(make: Maker) -> None:
    model = make(base_url=refused_url(), retry=RetryPolicy(max_retries=0))
    with pytest.raises(ProviderUnavailable, match="could not be reached"):
        await model.request(ModelRequest(items=[user("hi")]))


def test_missing_key_names_the_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        AnthropicModel("claude-sonnet-4-6")


def test_key_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "env-key")
    assert AnthropicModel("claude-sonnet-4-6").client.api_key == "env-key"


# --- end to end ------------------------------------------------------------------------------


@tool(read_only=True)
def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"{city}: 21C and sunny"


async def test_agent_tool_round_trip(make: Maker, server: FakeServer) -> None:
    start, *_ = text_stream()
    server.sse([
        start,
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "tool_use", "id": "toolu_7",
                                                   "name": "get_weather", "input": {}}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "input_json_delta",
                                           "partial_json": "{\"city\": \"Lyon\"}"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta",
                           "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                           "usage": {"output_tokens": 20}}),
        ("message_stop", {"type": "message_stop"}),
    ])  # fmt: skip
    server.sse(text_stream("It is ", "sunny in Lyon."))
    agent = Agent(make(), instructions="Use tools.", tools=[get_weather])
    result = await agent.run("Weather in Lyon?")

    assert result.status == "completed", result.error
    assert result.output == "It is sunny in Lyon."
    second = server.requests[1].json()
    assert second["system"] == "Use tools."
    assert second["messages"][1:] == [
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_7", "name": "get_weather",
             "input": {"city": "Lyon"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_7", "content": "Lyon: 21C and sunny"}]},
    ]  # fmt: skip
    assert result.usage.input_tokens == 50 and result.usage.output_tokens == 35
    assert json.loads(server.requests[0].body)["tools"][0]["name"] == "get_weather"


async def test_a_given_client_is_used_with_sdk_retries_off_and_left_open(
    server: FakeServer,
) -> None:
    import anthropic

    client = anthropic.AsyncAnthropic(api_key="own-key", base_url=server.url, max_retries=5)
    model = AnthropicModel("claude-sonnet-4-6", client=client, retry=RetryPolicy(max_retries=0))
    assert model.client.max_retries == 0
    server.json(error_body("api_error", "boom"), status=500)
    with pytest.raises(ProviderUnavailable):
        await model.request(ModelRequest(items=[user("hi")]))
    assert len(server.requests) == 1  # the SDK did not retry behind our back
    await model.aclose()
    assert not client.is_closed()
    await client.close()
