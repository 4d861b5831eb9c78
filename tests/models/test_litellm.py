"""LiteLLM adapter against a fake ``litellm`` module (litellm itself is an optional extra).

The fake's ``acompletion`` records its keyword arguments and returns pydantic objects shaped
like litellm's ``ModelResponse`` / streaming ``ModelResponseStream`` chunks; its exceptions carry
the names and ``status_code`` / ``message`` / ``response`` attributes of litellm's.
"""

from __future__ import annotations

import sys
from collections import deque
from types import ModuleType
from typing import Any

import httpx
import pytest
from pydantic import BaseModel, ConfigDict
from tests.models.common import FAST, WEATHER

from agentloop import Agent, tool
from agentloop.errors import (
    AuthenticationFailed,
    ConfigError,
    ContextWindowExceeded,
    ModelNotFound,
    ProviderUnavailable,
    RateLimited,
)
from agentloop.items import (
    FunctionCall,
    FunctionCallOutput,
    Message,
    OutputText,
    Reasoning,
    Usage,
    user,
)
from agentloop.models.base import (
    ModelRequest,
    ResponseDone,
    TextDelta,
    ToolCallDelta,
)
from agentloop.models.retry import RetryPolicy

pytestmark = pytest.mark.anyio


class LiteObject(BaseModel):
    """Attribute access plus ``model_dump()``, like litellm's pydantic response types."""

    model_config = ConfigDict(extra="allow")


def lite(value: Any) -> Any:
    if isinstance(value, dict):
        return LiteObject(**{k: lite(v) for k, v in value.items()})
    if isinstance(value, list):
        return [lite(v) for v in value]
    return value


def model_response(message: dict[str, Any], finish: str = "stop", **usage: Any) -> Any:
    return lite({
        "id": "chatcmpl-8f2c", "created": 1735689600, "model": "groq/llama-3.3-70b",
        "object": "chat.completion", "system_fingerprint": None,
        "choices": [{"finish_reason": finish, "index": 0,
                     "message": {"role": "assistant", "content": None, "tool_calls": None,
                                 "function_call": None, **message}}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 8, "total_tokens": 28, **usage},
    })  # fmt: skip


def stream_chunk(delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> Any:
    data: dict[str, Any] = {
        "id": "chatcmpl-8f2c", "created": 1735689600, "model": "groq/llama-3.3-70b",
        "object": "chat.completion.chunk", "system_fingerprint": None,
        "choices": [{"index": 0, "finish_reason": finish, "delta": delta}],
    }  # fmt: skip
    if usage is not None:
        data["usage"] = usage
    return lite(data)


class LiteLLMError(Exception):
    status_code = 500

    def __init__(self, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = f"litellm.{type(self).__name__}: {message}"
        self.llm_provider = "groq"
        self.response = httpx.Response(self.status_code, headers=headers or {})


def _error(name: str, status: int) -> type[LiteLLMError]:
    return type(name, (LiteLLMError,), {"status_code": status})


class StreamWrapper:
    """Like litellm's CustomStreamWrapper: an async iterator of chunks."""

    def __init__(self, chunks: list[Any]) -> None:
        self._chunks = iter(chunks)

    def __aiter__(self) -> StreamWrapper:
        return self

    async def __anext__(self) -> Any:
        item = next(self._chunks, StopAsyncIteration)
        if item is StopAsyncIteration:
            raise StopAsyncIteration
        if isinstance(item, BaseException):
            raise item
        return item


class FakeLiteLLM(ModuleType):
    RateLimitError = _error("RateLimitError", 429)
    AuthenticationError = _error("AuthenticationError", 401)
    NotFoundError = _error("NotFoundError", 404)
    BadRequestError = _error("BadRequestError", 400)
    ContextWindowExceededError = _error("ContextWindowExceededError", 400)
    ServiceUnavailableError = _error("ServiceUnavailableError", 503)
    APIConnectionError = _error("APIConnectionError", 500)
    Timeout = _error("Timeout", 408)

    def __init__(self) -> None:
        super().__init__("litellm")
        self.calls: list[dict[str, Any]] = []
        self.replies: deque[Any] = deque()

    async def acompletion(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        reply = self.replies.popleft()
        if isinstance(reply, BaseException):
            raise reply
        return StreamWrapper(reply) if kwargs.get("stream") else reply


@pytest.fixture
def litellm(monkeypatch: pytest.MonkeyPatch) -> FakeLiteLLM:
    fake = FakeLiteLLM()
    monkeypatch.setitem(sys.modules, "litellm", fake)
    return fake


def make(**kwargs: Any) -> Any:
    from agentloop.models.litellm import LiteLLMModel

    kwargs.setdefault("retry", FAST)
    return LiteLLMModel("groq/llama-3.3-70b", **kwargs)


# --- installation ----------------------------------------------------------------------------


def test_missing_litellm_is_a_config_error_with_the_install_hint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "litellm", None)  # import litellm -> ImportError
    with pytest.raises(ConfigError, match=r"pip install 'agentloop\[litellm\]'"):
        make()


def test_resolve_builds_a_litellm_model(litellm: FakeLiteLLM) -> None:
    from agentloop.models.litellm import LiteLLMModel
    from agentloop.models.resolve import resolve

    model = resolve("litellm:anthropic/claude-sonnet-4-6", api_base="http://proxy:4000")
    inner = getattr(model, "model", None) if not isinstance(model, LiteLLMModel) else model
    assert isinstance(inner, LiteLLMModel)  # possibly inside the text-mode fallback wrapper
    assert inner.model == "anthropic/claude-sonnet-4-6"
    assert inner.kwargs["api_base"] == "http://proxy:4000"
    assert model.name == "litellm:anthropic/claude-sonnet-4-6"


# --- request and response --------------------------------------------------------------------


async def test_request_sends_chat_messages_tools_and_turns_litellm_retries_off(
    litellm: FakeLiteLLM,
) -> None:
    litellm.replies.append(model_response({"content": "ok"}))
    items = [
        user("Weather?"),
        FunctionCall(call_id="call_1", name="get_weather", arguments='{"city": "Paris"}'),
        FunctionCallOutput(call_id="call_1", output="sunny"),
    ]
    request = ModelRequest(items=items, instructions="Be brief.", tools=[WEATHER],
                           tool_choice="required", parallel_tool_calls=False)  # fmt: skip
    await make(api_key="sk-groq").request(request)

    assert litellm.calls == [{
        "model": "groq/llama-3.3-70b",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        ],
        "tools": [{"type": "function", "function": {
            "name": "get_weather", "description": "Weather for a city.",
            "parameters": WEATHER.parameters}}],
        "tool_choice": "required",
        "parallel_tool_calls": False,
        "num_retries": 0,
        "max_retries": 0,
        "drop_params": True,
        "api_key": "sk-groq",
    }]  # fmt: skip


async def test_response_maps_text_calls_reasoning_and_usage(litellm: FakeLiteLLM) -> None:
    litellm.replies.append(
        model_response(
            {
                "content": "Checking.",
                "reasoning_content": "Need the weather tool.",
                "tool_calls": [{"id": "call_x", "type": "function", "index": 0,
                                "function": {"name": "get_weather",
                                             "arguments": '{"city": "Oslo"}'}}],
            },
            finish="tool_calls",
            prompt_tokens=50, completion_tokens=12, total_tokens=62,
            prompt_tokens_details={"cached_tokens": 32},
        )
    )  # fmt: skip
    response = await make().request(ModelRequest(items=[user("hi")], tools=[WEATHER]))
    assert response.items == (
        Reasoning(content=("Need the weather tool.",)),
        Message(role="assistant", content=(OutputText(text="Checking."),)),
        FunctionCall(call_id="call_x", name="get_weather", arguments='{"city": "Oslo"}'),
    )
    assert response.finish_reason == "tool_calls"
    assert response.usage == Usage.of(50, 12, cached_input_tokens=32)
    assert response.model == "groq/llama-3.3-70b"


@pytest.mark.parametrize(
    ("finish", "expected"), [("stop", "stop"), ("length", "length"),
                             ("content_filter", "content_filter")]
)  # fmt: skip
async def test_finish_reasons_map(litellm: FakeLiteLLM, finish: str, expected: str) -> None:
    litellm.replies.append(model_response({"content": "x"}, finish=finish))
    assert (await make().request(ModelRequest(items=[user("hi")]))).finish_reason == expected


# --- streaming -------------------------------------------------------------------------------


async def test_stream_assembles_text_tool_call_fragments_and_usage(litellm: FakeLiteLLM) -> None:
    litellm.replies.append([
        stream_chunk({"role": "assistant", "content": "Let me "}),
        stream_chunk({"content": "check."}),
        stream_chunk({"tool_calls": [{"index": 0, "id": "call_s", "type": "function",
                                      "function": {"name": "get_weather", "arguments": ""}}]}),
        stream_chunk({"tool_calls": [{"index": 0, "id": None, "type": None,
                                      "function": {"name": None, "arguments": '{"city": '}}]}),
        stream_chunk({"tool_calls": [{"index": 0, "id": None, "type": None,
                                      "function": {"name": None, "arguments": '"Rome"}'}}]}),
        stream_chunk({}, finish="tool_calls"),
        stream_chunk({}, usage={"prompt_tokens": 40, "completion_tokens": 15,
                                "total_tokens": 55}),
    ])  # fmt: skip
    parts = [p async for p in make().stream(ModelRequest(items=[user("hi")], tools=[WEATHER]))]

    call = litellm.calls[0]
    assert call["stream"] is True and call["stream_options"] == {"include_usage": True}
    assert parts[:-1] == [
        TextDelta(delta="Let me "),
        TextDelta(delta="check."),
        ToolCallDelta(index=0, call_id="call_s", name="get_weather", arguments_delta=""),
        # later fragments carry the call's id and name (the shared Chat stream assembly)
        ToolCallDelta(index=0, call_id="call_s", name="get_weather", arguments_delta='{"city": '),
        ToolCallDelta(index=0, call_id="call_s", name="get_weather", arguments_delta='"Rome"}'),
    ]
    done = parts[-1]
    assert isinstance(done, ResponseDone)
    assert done.response.items == (
        Message(role="assistant", content=(OutputText(text="Let me check."),)),
        FunctionCall(call_id="call_s", name="get_weather", arguments='{"city": "Rome"}'),
    )
    assert done.response.finish_reason == "tool_calls"
    assert done.response.usage == Usage.of(40, 15)


async def test_error_mid_stream_is_mapped_and_final(litellm: FakeLiteLLM) -> None:
    litellm.replies.append(
        [stream_chunk({"content": "par"}), FakeLiteLLM.ServiceUnavailableError("overloaded")]
    )
    seen: list[Any] = []
    with pytest.raises(ProviderUnavailable, match="overloaded"):
        async for part in make().stream(ModelRequest(items=[user("hi")])):
            seen.append(part)
    assert seen == [TextDelta(delta="par")]
    assert len(litellm.calls) == 1


async def test_stream_error_before_output_is_retried(litellm: FakeLiteLLM) -> None:
    litellm.replies.append(FakeLiteLLM.RateLimitError("slow down", {"retry-after": "9"}))
    litellm.replies.append([stream_chunk({"content": "ok"}, finish="stop")])
    parts = [p async for p in make().stream(ModelRequest(items=[user("hi")]))]
    done = parts[-1]
    assert isinstance(done, ResponseDone)
    assert done.response.text == "ok" and done.response.retries == 1


# --- errors and retries ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (FakeLiteLLM.AuthenticationError("invalid api key"), AuthenticationFailed),
        (FakeLiteLLM.NotFoundError("model not found"), ModelNotFound),
        (FakeLiteLLM.ContextWindowExceededError("too long"), ContextWindowExceeded),
        (FakeLiteLLM.APIConnectionError("connection refused"), ProviderUnavailable),
        (FakeLiteLLM.Timeout("timed out"), ProviderUnavailable),
    ],
)
async def test_litellm_exceptions_map_to_typed_errors(
    litellm: FakeLiteLLM, error: Exception, expected: type[Exception]
) -> None:
    litellm.replies.append(error)
    with pytest.raises(expected):
        await make(retry=RetryPolicy(max_retries=0)).request(ModelRequest(items=[user("hi")]))


async def test_rate_limit_keeps_retry_after_and_is_retried(litellm: FakeLiteLLM) -> None:
    for _ in range(3):
        litellm.replies.append(FakeLiteLLM.RateLimitError("slow down", {"retry-after": "12"}))
    with pytest.raises(RateLimited) as info:
        await make().request(ModelRequest(items=[user("hi")]))
    assert info.value.retry_after == 12.0
    assert info.value.retries == 2 and len(litellm.calls) == 3


async def test_bad_request_is_not_retried(litellm: FakeLiteLLM) -> None:
    from agentloop.errors import BadRequest

    litellm.replies.append(FakeLiteLLM.BadRequestError("invalid tool schema"))
    with pytest.raises(BadRequest):
        await make().request(ModelRequest(items=[user("hi")]))
    assert len(litellm.calls) == 1


async def test_unrelated_exceptions_are_not_disguised(litellm: FakeLiteLLM) -> None:
    litellm.replies.append(TypeError("a bug"))
    with pytest.raises(TypeError, match="a bug"):
        await make().request(ModelRequest(items=[user("hi")]))


# --- end to end ------------------------------------------------------------------------------


@tool(read_only=True)
def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"{city}: 21C and sunny"


async def test_agent_tool_round_trip(litellm: FakeLiteLLM) -> None:
    litellm.replies.append([
        stream_chunk({"role": "assistant", "tool_calls": [
            {"index": 0, "id": "call_9", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Lyon"}'}}]}),
        stream_chunk({}, finish="tool_calls",
                     usage={"prompt_tokens": 30, "completion_tokens": 5, "total_tokens": 35}),
    ])  # fmt: skip
    litellm.replies.append([
        stream_chunk({"content": "Sunny in Lyon."}, finish="stop",
                     usage={"prompt_tokens": 50, "completion_tokens": 4, "total_tokens": 54}),
    ])  # fmt: skip
    agent = Agent(make(), instructions="Use tools.", tools=[get_weather])
    result = await agent.run("Weather in Lyon?")

    assert result.status == "completed", result.error
    assert result.output == "Sunny in Lyon."
    assert litellm.calls[1]["messages"][2:] == [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_9", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Lyon"}'}}]},
        {"role": "tool", "tool_call_id": "call_9", "content": "Lyon: 21C and sunny"},
    ]  # fmt: skip
    assert result.usage.total_tokens == 89
