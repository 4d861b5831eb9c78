"""Gemini adapter against a local fake of the Gemini API (the real google-genai SDK parses it)."""

from __future__ import annotations

import base64
import re
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from tests.models.common import FAST
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
from agentloop.models.base import (
    ModelRequest,
    ModelSettings,
    ReasoningDelta,
    ResponseDone,
    TextDelta,
    ToolCallDelta,
    ToolSchema,
)
from agentloop.models.gemini import GeminiModel, make_client
from agentloop.models.retry import RetryPolicy

pytestmark = pytest.mark.anyio

Maker = Callable[..., GeminiModel]
MODEL = "gemini-2.5-flash"
GENERATE = re.compile(rf"^/v1(beta)?/models/{MODEL}:generateContent$")
STREAM = re.compile(rf"^/v1(beta)?/models/{MODEL}:streamGenerateContent\?alt=sse$")
WEATHER = ToolSchema(
    name="get_weather",
    description="Weather for a city.",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string", "description": "City name"}},
        "required": ["city"],
        "additionalProperties": False,
    },
)
PNG = "iVBORw0KGgo="
SIGNATURE = base64.b64encode(b"\x12\x34opaque-signature").decode()


@pytest.fixture
def server() -> Iterator[FakeServer]:
    yield from serve()


@pytest.fixture
async def make(server: FakeServer) -> AsyncIterator[Maker]:
    """Builds models pointed at the fake server and closes them after the test."""
    made: list[GeminiModel] = []

    def build(**kwargs: Any) -> GeminiModel:
        kwargs.setdefault("retry", FAST)
        kwargs.setdefault("base_url", server.url)
        made.append(GeminiModel(MODEL, api_key="test-key", **kwargs))
        return made[-1]

    yield build
    for model in made:
        await model.aclose()


def answer(parts: list[dict[str, Any]], finish: str | None = "STOP", **usage: int) -> Any:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    meta = {"promptTokenCount": 10, "candidatesTokenCount": 5, **usage}
    meta["totalTokenCount"] = sum(meta.values())
    version = "gemini-2.5-flash-001"
    return {"candidates": [candidate], "usageMetadata": meta, "modelVersion": version,
            "responseId": "resp-1"}  # fmt: skip


def api_error(code: int, status: str, message: str, *details: dict[str, Any]) -> Any:
    error: dict[str, Any] = {"code": code, "message": message, "status": status}
    if details:
        error["details"] = list(details)
    return {"error": error}


# --- request translation ---------------------------------------------------------------------


async def test_request_body_carries_system_images_calls_results_and_tool_config(
    make: Maker, server: FakeServer
) -> None:
    server.json(answer([{"text": "ok"}]))
    items = [
        system("Be brief."),
        Message(
            role="user",
            content=(
                InputText(text="What is here?"),
                InputImage(image_url=f"data:image/png;base64,{PNG}"),
                InputImage(image_url="https://example.com/cat.png"),
            ),
        ),
        Message(role="assistant", content=(OutputText(text="Let me check."),)),
        Reasoning(encrypted_content=f"gemini.signature:{SIGNATURE}"),
        FunctionCall(call_id="call_1", name="get_weather", arguments='{"city": "Paris"}'),
        FunctionCall(call_id="call_2", name="get_weather", arguments="{oops"),
        FunctionCallOutput(call_id="call_1", output="sunny"),
        FunctionCallOutput(call_id="call_2", output="bad arguments", is_error=True),
        user("Thanks"),
    ]
    request = ModelRequest(
        items=items, instructions="You help.", tools=[WEATHER], tool_choice="get_weather"
    )
    await make().request(request)

    assert GENERATE.match(server.last.path), server.last.path
    assert server.last.headers["x-goog-api-key"] == "test-key"
    body = server.last.json()
    signature = base64.urlsafe_b64encode(base64.b64decode(SIGNATURE)).decode()
    assert body["contents"] == [
        {"role": "user", "parts": [
            {"text": "What is here?"},
            {"inlineData": {"data": PNG, "mime_type": "image/png"}},
            {"fileData": {"file_uri": "https://example.com/cat.png", "mime_type": "image/png"}},
        ]},
        {"role": "model", "parts": [
            {"text": "Let me check."},
            {"functionCall": {"id": "call_1", "name": "get_weather", "args": {"city": "Paris"}},
             "thoughtSignature": signature},
            {"functionCall": {"id": "call_2", "name": "get_weather",
                              "args": {"INVALID_JSON": "{oops"}}},
        ]},
        {"role": "user", "parts": [
            {"functionResponse": {"id": "call_1", "name": "get_weather",
                                  "response": {"output": "sunny"}}},
            {"functionResponse": {"id": "call_2", "name": "get_weather",
                                  "response": {"error": "bad arguments"}}},
            {"text": "Thanks"},
        ]},
    ]  # fmt: skip
    assert body["systemInstruction"] == {
        "role": "user",
        "parts": [{"text": "You help.\n\nBe brief."}],
    }
    assert body["tools"] == [{"functionDeclarations": [{
        "name": "get_weather", "description": "Weather for a city.",
        "parameters": {"type": "OBJECT", "required": ["city"], "properties": {
            "city": {"type": "STRING", "description": "City name"}}},
    }]}]  # fmt: skip
    assert body["toolConfig"] == {
        "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}
    }


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("auto", {"mode": "AUTO"}),
        ("required", {"mode": "ANY"}),
        ("none", {"mode": "NONE"}),
    ],
)
async def test_tool_choice_modes(
    make: Maker, server: FakeServer, choice: str, expected: dict[str, Any]
) -> None:
    server.json(answer([{"text": "ok"}]))
    await make().request(ModelRequest(items=[user("hi")], tools=[WEATHER], tool_choice=choice))
    assert server.last.json()["toolConfig"] == {"functionCallingConfig": expected}


async def test_tool_without_parameters_has_no_parameters(make: Maker, server: FakeServer) -> None:
    server.json(answer([{"text": "ok"}]))
    now = ToolSchema(name="now", description="Current time.", parameters={"type": "object",
                     "properties": {}, "additionalProperties": False})  # fmt: skip
    await make().request(ModelRequest(items=[user("hi")], tools=[now]))
    declaration = server.last.json()["tools"][0]["functionDeclarations"][0]
    assert declaration == {"name": "now", "description": "Current time."}


async def test_settings_thinking_and_output_schema_reach_generation_config(
    make: Maker, server: FakeServer
) -> None:
    server.json(answer([{"text": "{}"}]))
    settings = ModelSettings(
        temperature=0.3,
        top_p=0.9,
        max_output_tokens=256,
        reasoning={"budget_tokens": 1024},
        extra={"seed": 7},
    )
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    await make().request(ModelRequest(items=[user("hi")], settings=settings, output_schema=schema))
    config = server.last.json()["generationConfig"]
    assert config["temperature"] == 0.3
    assert config["topP"] == 0.9
    assert config["maxOutputTokens"] == 256
    assert config["seed"] == 7
    # the SDK sends nested config objects with snake_case keys (protobuf JSON accepts both)
    assert config["thinkingConfig"] == {"include_thoughts": True, "thinking_budget": 1024}
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"] == schema


def test_unknown_extra_setting_is_a_config_error() -> None:
    from agentloop.models.gemini import generate_config

    with pytest.raises(ConfigError, match="settings"):
        generate_config(ModelRequest(items=[], settings=ModelSettings(extra={"nope": 1})))


# --- response translation --------------------------------------------------------------------


async def test_response_maps_thoughts_text_calls_signatures_and_usage(
    make: Maker, server: FakeServer
) -> None:
    server.json(
        answer(
            [
                {"text": "The user wants weather.", "thought": True},
                {"text": "Checking."},
                {
                    "functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
                    "thoughtSignature": SIGNATURE,
                },
                {"functionCall": {"id": "fc-2", "name": "get_weather", "args": {"city": "Rome"}}},
            ],
            promptTokenCount=100,
            candidatesTokenCount=20,
            thoughtsTokenCount=30,
            cachedContentTokenCount=40,
        )
    )
    response = await make().request(ModelRequest(items=[user("weather?")], tools=[WEATHER]))
    first_call = response.items[3]
    assert isinstance(first_call, FunctionCall) and first_call.call_id.startswith("call_")
    assert response.items == (
        Reasoning(summary=("The user wants weather.",)),
        Message(role="assistant", content=(OutputText(text="Checking."),)),
        Reasoning(encrypted_content=f"gemini.signature:{SIGNATURE}"),
        FunctionCall(call_id=first_call.call_id, name="get_weather", arguments='{"city": "Paris"}'),
        FunctionCall(call_id="fc-2", name="get_weather", arguments='{"city": "Rome"}'),
    )
    assert response.finish_reason == "tool_calls"
    assert response.usage == Usage.of(100, 50, cached_input_tokens=40, reasoning_tokens=30)
    assert response.model == "gemini-2.5-flash-001"


async def test_generated_call_ids_and_signatures_round_trip(
    make: Maker, server: FakeServer
) -> None:
    server.json(answer([{"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}},
                         "thoughtSignature": SIGNATURE}]))  # fmt: skip
    server.json(answer([{"text": "cold"}]))
    model = make()
    first = await model.request(ModelRequest(items=[user("Oslo?")], tools=[WEATHER]))
    call = first.tool_calls[0]
    items = [user("Oslo?"), *first.items, FunctionCallOutput(call_id=call.call_id, output="-3C")]
    await model.request(ModelRequest(items=items, tools=[WEATHER]))
    contents = server.last.json()["contents"]
    assert contents[1]["parts"][0]["functionCall"]["id"] == call.call_id
    assert base64.urlsafe_b64decode(contents[1]["parts"][0]["thoughtSignature"]) == (
        base64.b64decode(SIGNATURE)
    )
    assert contents[2]["parts"][0]["functionResponse"]["id"] == call.call_id


@pytest.mark.parametrize(
    ("reason", "finish"),
    [
        ("STOP", "stop"),
        ("MAX_TOKENS", "length"),
        ("SAFETY", "content_filter"),
        ("RECITATION", "content_filter"),
        ("PROHIBITED_CONTENT", "content_filter"),
        ("OTHER", "stop"),
    ],
)
async def test_finish_reasons_map(
    make: Maker, server: FakeServer, reason: str, finish: str
) -> None:
    server.json(answer([{"text": "x"}], finish=reason))
    response = await make().request(ModelRequest(items=[user("hi")]))
    assert response.finish_reason == finish


async def test_blocked_prompt_is_content_filter(make: Maker, server: FakeServer) -> None:
    server.json({"promptFeedback": {"blockReason": "SAFETY"},
                 "usageMetadata": {"promptTokenCount": 7, "totalTokenCount": 7}})  # fmt: skip
    response = await make().request(ModelRequest(items=[user("hi")]))
    assert response.items == ()
    assert response.finish_reason == "content_filter"
    assert response.usage.input_tokens == 7


# --- streaming -------------------------------------------------------------------------------


async def test_stream_yields_deltas_and_assembles_the_response(
    make: Maker, server: FakeServer
) -> None:
    server.sse([
        (None, answer([{"text": "Thinking about it", "thought": True}], finish=None)),
        (None, answer([{"text": "Let me "}], finish=None)),
        (None, answer([{"text": "check."}], finish=None)),
        (None, answer([{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
                        "thoughtSignature": SIGNATURE}],
                      promptTokenCount=30, candidatesTokenCount=12, thoughtsTokenCount=5)),
    ])  # fmt: skip
    model = make()
    parts = [p async for p in model.stream(ModelRequest(items=[user("hi")], tools=[WEATHER]))]

    assert STREAM.match(server.last.path), server.last.path
    done = parts[-1]
    assert isinstance(done, ResponseDone)
    call = done.response.tool_calls[0]
    assert parts[:-1] == [
        ReasoningDelta(delta="Thinking about it"),
        TextDelta(delta="Let me "),
        TextDelta(delta="check."),
        ToolCallDelta(index=0, call_id=call.call_id, name="get_weather",
                      arguments_delta='{"city": "Paris"}'),
    ]  # fmt: skip
    assert done.response.items == (
        Reasoning(summary=("Thinking about it",)),
        Message(role="assistant", content=(OutputText(text="Let me check."),)),
        Reasoning(encrypted_content=f"gemini.signature:{SIGNATURE}"),
        FunctionCall(call_id=call.call_id, name="get_weather", arguments='{"city": "Paris"}'),
    )
    assert done.response.finish_reason == "tool_calls"
    assert done.response.usage == Usage.of(30, 17, reasoning_tokens=5)


async def test_stream_error_before_output_is_retried(make: Maker, server: FakeServer) -> None:
    server.json(api_error(503, "UNAVAILABLE", "The model is overloaded."), status=503)
    server.sse([(None, answer([{"text": "ok"}]))])
    parts = [p async for p in make().stream(ModelRequest(items=[user("hi")]))]
    done = parts[-1]
    assert isinstance(done, ResponseDone)
    assert done.response.text == "ok" and done.response.retries == 1


async def test_error_chunk_inside_a_stream_is_mapped(make: Maker, server: FakeServer) -> None:
    server.sse([
        (None, answer([{"text": "par"}], finish=None)),
        (None, api_error(500, "INTERNAL", "An internal error has occurred.")),
    ])  # fmt: skip
    seen: list[Any] = []
    with pytest.raises(ProviderUnavailable, match="internal error"):
        async for part in make().stream(ModelRequest(items=[user("hi")])):
            seen.append(part)
    assert seen == [TextDelta(delta="par")]
    assert len(server.requests) == 1


# --- errors and retries ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "status", "message", "error"),
    [
        (400, "INVALID_ARGUMENT", "Invalid JSON payload received.", BadRequest),
        (400, "INVALID_ARGUMENT",
         "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
         ContextWindowExceeded),
        (403, "PERMISSION_DENIED", "Permission denied on resource project x.",
         AuthenticationFailed),
        (404, "NOT_FOUND", "models/gemini-nope is not found for API version v1beta",
         ModelNotFound),
        (500, "INTERNAL", "An internal error has occurred.", ProviderUnavailable),
        (503, "UNAVAILABLE", "The model is overloaded. Please try again later.",
         ProviderUnavailable),
    ],
)  # fmt: skip
async def test_http_errors_map_to_typed_errors(
    make: Maker, server: FakeServer, code: int, status: str, message: str, error: type[Exception]
) -> None:
    server.json(api_error(code, status, message), status=code)
    with pytest.raises(error) as info:
        await make(retry=RetryPolicy(max_retries=0)).request(ModelRequest(items=[user("hi")]))
    assert getattr(info.value, "status_code", None) == code
    assert message.split(" (")[0] in str(info.value)


async def test_invalid_api_key_is_authentication_failed(make: Maker, server: FakeServer) -> None:
    server.json(
        api_error(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.",
                  {"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                   "reason": "API_KEY_INVALID", "domain": "googleapis.com"}),
        status=400,
    )  # fmt: skip
    with pytest.raises(AuthenticationFailed, match="API key not valid"):
        await make(retry=RetryPolicy(max_retries=0)).request(ModelRequest(items=[user("hi")]))


async def test_rate_limit_takes_the_retry_delay_from_retry_info(
    make: Maker, server: FakeServer
) -> None:
    server.json(
        api_error(429, "RESOURCE_EXHAUSTED", "You exceeded your current quota.",
                  {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "39s"}),
        status=429,
    )  # fmt: skip
    with pytest.raises(RateLimited) as info:
        await make(retry=RetryPolicy(max_retries=0)).request(ModelRequest(items=[user("hi")]))
    assert info.value.retry_after == 39.0


async def test_transient_errors_are_retried_and_counted(make: Maker, server: FakeServer) -> None:
    server.json(api_error(429, "RESOURCE_EXHAUSTED", "slow down"), status=429,
                headers={"retry-after": "20"})  # fmt: skip
    server.drop()
    server.json(answer([{"text": "done"}]))
    response = await make().request(ModelRequest(items=[user("hi")]))
    assert response.text == "done" and response.retries == 2
    assert len(server.requests) == 3


async def test_client_errors_are_not_retried_and_retries_give_up(
    make: Maker, server: FakeServer
) -> None:
    server.json(api_error(400, "INVALID_ARGUMENT", "bad"), status=400)
    with pytest.raises(BadRequest):
        await make().request(ModelRequest(items=[user("hi")]))
    assert len(server.requests) == 1
    for _ in range(3):
        server.json(api_error(500, "INTERNAL", "boom"), status=500)
    with pytest.raises(ProviderUnavailable) as info:
        await make().request(ModelRequest(items=[user("hi")]))
    assert info.value.retries == 2 and len(server.requests) == 4


async def test_unreachable_endpoint_is_provider_unavailable(make: Maker) -> None:
    model = make(base_url=refused_url(), retry=RetryPolicy(max_retries=0))
    with pytest.raises(ProviderUnavailable, match="could not be reached"):
        await model.request(ModelRequest(items=[user("hi")]))


# --- configuration ---------------------------------------------------------------------------


def _clear_google_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI",
                 "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)


def test_missing_key_names_the_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    _clear_google_env(monkeypatch)
    with pytest.raises(ConfigError, match="GEMINI_API_KEY"):
        GeminiModel(MODEL)


def test_key_comes_from_gemini_or_google_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    _clear_google_env(monkeypatch)
    monkeypatch.setenv("GOOGLE_API_KEY", "google-key")
    assert make_client()._api_client.api_key == "google-key"
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-key")
    assert make_client()._api_client.api_key == "gemini-key"


def test_vertex_ai_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    _clear_google_env(monkeypatch)
    monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
    with pytest.raises(ConfigError, match="GOOGLE_CLOUD_PROJECT"):
        make_client()
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "my-project")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "europe-west4")
    client = make_client()
    assert client.vertexai
    assert client._api_client.project == "my-project"
    assert client._api_client.location == "europe-west4"


def test_vertex_ai_from_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    _clear_google_env(monkeypatch)
    client = make_client(vertexai=True, project="p", location="us-central1")
    assert client.vertexai and client._api_client.location == "us-central1"


# --- end to end ------------------------------------------------------------------------------


@tool(read_only=True)
def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"{city}: 21C and sunny"


async def test_agent_tool_round_trip(make: Maker, server: FakeServer) -> None:
    server.sse(
        [(None, answer([{"functionCall": {"name": "get_weather", "args": {"city": "Lyon"}}}]))]
    )
    server.sse([(None, answer([{"text": "It is sunny "}], finish=None)),
                (None, answer([{"text": "in Lyon."}]))])  # fmt: skip
    agent = Agent(make(), instructions="Use tools.", tools=[get_weather])
    result = await agent.run("Weather in Lyon?")

    assert result.status == "completed", result.error
    assert result.output == "It is sunny in Lyon."
    call = next(i for i in result.items if isinstance(i, FunctionCall))
    second = server.requests[1].json()
    assert second["systemInstruction"]["parts"] == [{"text": "Use tools."}]
    assert second["contents"][1:] == [
        {"role": "model", "parts": [{"functionCall": {
            "id": call.call_id, "name": "get_weather", "args": {"city": "Lyon"}}}]},
        {"role": "user", "parts": [{"functionResponse": {
            "id": call.call_id, "name": "get_weather",
            "response": {"output": "Lyon: 21C and sunny"}}}]},
    ]  # fmt: skip
    assert result.usage.input_tokens == 20


async def test_a_given_client_is_used_and_left_open(server: FakeServer) -> None:
    from google import genai
    from google.genai import types as gt

    client = genai.Client(api_key="own-key", http_options=gt.HttpOptions(base_url=server.url))
    model = GeminiModel(MODEL, client=client)
    server.json(answer([{"text": "hello"}]))
    response = await model.request(ModelRequest(items=[user("hi")]))
    assert response.text == "hello"
    assert server.last.headers["x-goog-api-key"] == "own-key"
    await model.aclose()
    await client.aio.aclose()
