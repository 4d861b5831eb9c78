"""Ollama adapter against a local fake of Ollama's /api/chat (JSON and NDJSON streaming)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from tests.models.common import FAST, WEATHER
from tests.models.wire_server import FakeServer, refused_url, serve

from agentloop import Agent, tool
from agentloop.errors import (
    BadRequest,
    ContextWindowExceeded,
    ModelNotFound,
    ProviderUnavailable,
    ToolsNotSupported,
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
from agentloop.models.ollama import OllamaModel, host_url
from agentloop.models.retry import RetryPolicy

pytestmark = pytest.mark.anyio

Maker = Callable[..., OllamaModel]
CLOCK = ToolSchema(name="clock", description="Time.", parameters={"type": "object"})
PNG = "iVBORw0KGgo="


@pytest.fixture
def server() -> Iterator[FakeServer]:
    yield from serve()


@pytest.fixture
async def make(server: FakeServer) -> AsyncIterator[Maker]:
    made: list[OllamaModel] = []

    def build(**kwargs: Any) -> OllamaModel:
        kwargs.setdefault("retry", FAST)
        kwargs.setdefault("base_url", server.url)
        made.append(OllamaModel("llama3.2", **kwargs))
        return made[-1]

    yield build
    for model in made:
        await model.aclose()


def chat(message: dict[str, Any], done_reason: str = "stop", **counts: int) -> dict[str, Any]:
    return {
        "model": "llama3.2",
        "created_at": "2025-07-22T20:33:28.123648Z",
        "message": {"role": "assistant", **message},
        "done_reason": done_reason,
        "done": True,
        "total_duration": 885095291,
        "load_duration": 3753500,
        "prompt_eval_count": counts.get("prompt", 26),
        "prompt_eval_duration": 328493000,
        "eval_count": counts.get("eval", 12),
        "eval_duration": 552222000,
    }


def chunk(content: str = "", **message: Any) -> dict[str, Any]:
    return {
        "model": "llama3.2",
        "created_at": "2025-07-22T20:33:28.1Z",
        "message": {"role": "assistant", "content": content, **message},
        "done": False,
    }


def final_chunk(done_reason: str = "stop", prompt: int = 30, eval: int = 9) -> dict[str, Any]:
    return {**chat({"content": ""}, done_reason, prompt=prompt, eval=eval)}


# --- request translation ---------------------------------------------------------------------


async def test_request_body_carries_system_images_calls_results_and_options(
    make: Maker, server: FakeServer
) -> None:
    server.json(chat({"content": "ok"}))
    items = [
        system("Be brief."),
        Message(
            role="user",
            content=(
                InputText(text="What is this?"),
                InputImage(image_url=f"data:image/png;base64,{PNG}"),
                InputImage(image_url="https://example.com/cat.jpg"),
            ),
        ),
        Message(role="assistant", content=(OutputText(text="Checking."),)),
        FunctionCall(call_id="call_1", name="get_weather", arguments='{"city": "Paris"}'),
        FunctionCall(call_id="call_2", name="get_weather", arguments="[1]"),
        FunctionCallOutput(call_id="call_1", output="sunny"),
        FunctionCallOutput(call_id="call_2", output="arguments must be an object", is_error=True),
        user("Thanks"),
    ]
    settings = ModelSettings(temperature=0.1, max_output_tokens=300, extra={"seed": 3})
    schema = {"type": "object", "properties": {"x": {"type": "string"}}}
    request = ModelRequest(items=items, instructions="You help.", tools=[WEATHER],
                           settings=settings, output_schema=schema)  # fmt: skip
    await make(options={"num_ctx": 8192}).request(request)

    assert server.last.method == "POST" and server.last.path == "/api/chat"
    assert server.last.json() == {
        "model": "llama3.2",
        "stream": False,
        "messages": [
            {"role": "system", "content": "You help.\n\nBe brief."},
            {"role": "user", "content": "What is this?\n(image: https://example.com/cat.jpg)",
             "images": [PNG]},
            {"role": "assistant", "content": "Checking.", "tool_calls": [
                {"id": "call_1", "function": {"name": "get_weather",
                                              "arguments": {"city": "Paris"}}},
                {"id": "call_2", "function": {"name": "get_weather",
                                              "arguments": {"INVALID_JSON": "[1]"}}},
            ]},
            {"role": "tool", "content": "sunny", "tool_name": "get_weather",
             "tool_call_id": "call_1"},
            {"role": "tool", "content": "Error: arguments must be an object",
             "tool_name": "get_weather", "tool_call_id": "call_2"},
            {"role": "user", "content": "Thanks"},
        ],
        "tools": [{"type": "function", "function": {
            "name": "get_weather", "description": "Weather for a city.",
            "parameters": WEATHER.parameters}}],
        "options": {"num_ctx": 8192, "temperature": 0.1, "num_predict": 300, "seed": 3},
        "format": schema,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("choice", "names"),
    [("auto", ["get_weather", "clock"]), ("required", ["get_weather", "clock"]),
     ("clock", ["clock"]), ("none", None)],
)  # fmt: skip
async def test_tool_choice_selects_the_tools_sent(
    make: Maker, server: FakeServer, choice: str, names: list[str] | None
) -> None:
    server.json(chat({"content": "ok"}))
    request = ModelRequest(items=[user("hi")], tools=[WEATHER, CLOCK], tool_choice=choice)
    await make().request(request)
    tools = server.last.json().get("tools")
    assert (None if tools is None else [t["function"]["name"] for t in tools]) == names


async def test_reasoning_turns_thinking_on(make: Maker, server: FakeServer) -> None:
    server.json(chat({"content": "ok"}))
    server.json(chat({"content": "ok"}))
    model = make()
    await model.request(ModelRequest(items=[user("hi")], settings=ModelSettings(reasoning={})))
    assert "think" not in server.last.json()
    settings = ModelSettings(reasoning={"effort": "high"})
    await model.request(ModelRequest(items=[user("hi")], settings=settings))
    assert server.last.json()["think"] == "high"


async def test_request_fields_in_extra_stay_top_level(make: Maker, server: FakeServer) -> None:
    server.json(chat({"content": "ok"}))
    settings = ModelSettings(extra={"keep_alive": "10m", "num_ctx": 4096})
    await make().request(ModelRequest(items=[user("hi")], settings=settings))
    body = server.last.json()
    assert body["keep_alive"] == "10m"
    assert body["options"] == {"num_ctx": 4096}


# --- response translation --------------------------------------------------------------------


async def test_response_maps_thinking_text_tool_calls_and_usage(
    make: Maker, server: FakeServer
) -> None:
    server.json(
        chat(
            {
                "content": "Let me check.",
                "thinking": "User wants weather.",
                "tool_calls": [
                    {"function": {"index": 0, "name": "get_weather",
                                  "arguments": {"city": "Paris"}}},
                    {"id": "call_abc", "function": {"index": 1, "name": "get_weather",
                                                    "arguments": {"city": "Rome"}}},
                ],
            },
            prompt=122,
            eval=33,
        )
    )  # fmt: skip
    response = await make().request(ModelRequest(items=[user("weather?")], tools=[WEATHER]))
    generated = response.tool_calls[0].call_id
    assert generated.startswith("call_")
    assert response.items == (
        Reasoning(content=("User wants weather.",)),
        Message(role="assistant", content=(OutputText(text="Let me check."),)),
        FunctionCall(call_id=generated, name="get_weather", arguments='{"city": "Paris"}'),
        FunctionCall(call_id="call_abc", name="get_weather", arguments='{"city": "Rome"}'),
    )
    assert response.finish_reason == "tool_calls"
    assert response.usage == Usage.of(122, 33)
    assert response.model == "llama3.2"


@pytest.mark.parametrize(("done_reason", "finish"), [("stop", "stop"), ("length", "length")])
async def test_done_reasons_map(
    make: Maker, server: FakeServer, done_reason: str, finish: str
) -> None:
    server.json(chat({"content": "x"}, done_reason))
    response = await make().request(ModelRequest(items=[user("hi")]))
    assert response.finish_reason == finish


# --- streaming -------------------------------------------------------------------------------


async def test_stream_yields_deltas_and_assembles_the_response(
    make: Maker, server: FakeServer
) -> None:
    server.ndjson([
        chunk(thinking="Hmm."),
        chunk("It is "),
        chunk("sunny."),
        chunk(tool_calls=[{"function": {"index": 0, "name": "get_weather",
                                        "arguments": {"city": "Nice"}}}]),
        final_chunk(prompt=40, eval=17),
    ])  # fmt: skip
    parts = [p async for p in make().stream(ModelRequest(items=[user("hi")], tools=[WEATHER]))]

    assert server.last.json()["stream"] is True
    done = parts[-1]
    assert isinstance(done, ResponseDone)
    call_id = done.response.tool_calls[0].call_id
    assert parts[:-1] == [
        ReasoningDelta(delta="Hmm."),
        TextDelta(delta="It is "),
        TextDelta(delta="sunny."),
        ToolCallDelta(index=0, call_id=call_id, name="get_weather",
                      arguments_delta='{"city": "Nice"}'),
    ]  # fmt: skip
    assert done.response.items == (
        Reasoning(content=("Hmm.",)),
        Message(role="assistant", content=(OutputText(text="It is sunny."),)),
        FunctionCall(call_id=call_id, name="get_weather", arguments='{"city": "Nice"}'),
    )
    assert done.response.finish_reason == "tool_calls"
    assert done.response.usage == Usage.of(40, 17)


async def test_stream_without_a_final_message_is_an_error(make: Maker, server: FakeServer) -> None:
    server.ndjson([chunk("partial")])
    with pytest.raises(ProviderUnavailable, match="final message"):
        _ = [p async for p in make(retry=RetryPolicy(max_retries=0)).stream(
            ModelRequest(items=[user("hi")]))]  # fmt: skip


async def test_error_line_mid_stream_is_final(make: Maker, server: FakeServer) -> None:
    server.ndjson([chunk("par"), {"error": "an error was encountered while running the model"}])
    seen: list[Any] = []
    with pytest.raises(ProviderUnavailable, match="running the model"):
        async for part in make().stream(ModelRequest(items=[user("hi")])):
            seen.append(part)
    assert seen == [TextDelta(delta="par")]
    assert len(server.requests) == 1


async def test_stream_failure_before_output_is_retried(make: Maker, server: FakeServer) -> None:
    server.json({"error": "server busy"}, status=503)
    server.ndjson([chunk("ok"), final_chunk()])
    parts = [p async for p in make().stream(ModelRequest(items=[user("hi")]))]
    done = parts[-1]
    assert isinstance(done, ResponseDone)
    assert done.response.text == "ok" and done.response.retries == 1


# --- errors and retries ----------------------------------------------------------------------


async def test_model_without_tool_support_raises_tools_not_supported(
    make: Maker, server: FakeServer
) -> None:
    server.json({"error": "registry.ollama.ai/library/gemma:2b does not support tools"},
                status=400)  # fmt: skip
    with pytest.raises(ToolsNotSupported, match="does not support tools") as info:
        async for _ in make().stream(ModelRequest(items=[user("hi")], tools=[WEATHER])):
            pass
    assert info.value.status_code == 400
    assert len(server.requests) == 1


async def test_unknown_model_is_model_not_found_with_a_pull_hint(
    make: Maker, server: FakeServer
) -> None:
    server.json({"error": 'model "llama3.2" not found, try pulling it first'}, status=404)
    with pytest.raises(ModelNotFound, match=r"ollama pull llama3\.2"):
        await make().request(ModelRequest(items=[user("hi")]))


@pytest.mark.parametrize(
    ("status", "message", "error"),
    [
        (400, "invalid options", BadRequest),
        (400, "input length exceeds the context length", ContextWindowExceeded),
        (500, "llama runner process has terminated", ProviderUnavailable),
    ],
)
async def test_http_errors_map_to_typed_errors(
    make: Maker, server: FakeServer, status: int, message: str, error: type[Exception]
) -> None:
    server.json({"error": message}, status=status)
    with pytest.raises(error, match=message):
        await make(retry=RetryPolicy(max_retries=0)).request(ModelRequest(items=[user("hi")]))


async def test_server_errors_and_dropped_connections_are_retried(
    make: Maker, server: FakeServer
) -> None:
    server.json({"error": "busy"}, status=503)
    server.drop()
    server.json(chat({"content": "fine"}))
    response = await make().request(ModelRequest(items=[user("hi")]))
    assert response.text == "fine" and response.retries == 2
    assert len(server.requests) == 3


async def test_unreachable_ollama_says_where_it_was_expected(make: Maker) -> None:
    url = refused_url()
    model = make(base_url=url, retry=RetryPolicy(max_retries=1, initial_delay=0, max_delay=0))
    with pytest.raises(ProviderUnavailable, match=re.escape(f"not reachable at {url}")) as info:
        await model.request(ModelRequest(items=[user("hi")]))
    assert info.value.retries == 1


# --- configuration ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "url"),
    [
        (None, "http://localhost:11434"),
        ("gpu-box", "http://gpu-box:11434"),
        ("0.0.0.0:9000", "http://127.0.0.1:9000"),
        ("https://ollama.example.com/", "https://ollama.example.com:11434"),
        ("http://10.0.0.5:8080", "http://10.0.0.5:8080"),
    ],
)
def test_host_comes_from_ollama_host(
    monkeypatch: pytest.MonkeyPatch, value: str | None, url: str
) -> None:
    if value is None:
        monkeypatch.delenv("OLLAMA_HOST", raising=False)
    else:
        monkeypatch.setenv("OLLAMA_HOST", value)
    assert host_url(None) == url


def test_explicit_base_url_wins_over_ollama_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "elsewhere")
    assert host_url("http://127.0.0.1:1234") == "http://127.0.0.1:1234"


# --- end to end ------------------------------------------------------------------------------


@tool(read_only=True)
def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"{city}: 21C and sunny"


async def test_agent_tool_round_trip(make: Maker, server: FakeServer) -> None:
    server.ndjson([
        chunk(tool_calls=[{"function": {"index": 0, "name": "get_weather",
                                        "arguments": {"city": "Lyon"}}}]),
        final_chunk(),
    ])  # fmt: skip
    server.ndjson([chunk("It is sunny "), chunk("in Lyon."), final_chunk()])
    agent = Agent(make(), instructions="Use tools.", tools=[get_weather])
    result = await agent.run("Weather in Lyon?")

    assert result.status == "completed", result.error
    assert result.output == "It is sunny in Lyon."
    call = next(i for i in result.items if isinstance(i, FunctionCall))
    assert server.requests[1].json()["messages"] == [
        {"role": "system", "content": "Use tools."},
        {"role": "user", "content": "Weather in Lyon?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": call.call_id, "function": {"name": "get_weather",
                                              "arguments": {"city": "Lyon"}}}]},
        {"role": "tool", "content": "Lyon: 21C and sunny", "tool_name": "get_weather",
         "tool_call_id": call.call_id},
    ]  # fmt: skip
    assert result.usage.input_tokens == 60


async def test_model_without_tools_falls_back_to_text_mode_through_resolve(
    server: FakeServer,
) -> None:
    from agentloop.models.resolve import resolve

    server.json({"error": "registry.ollama.ai/library/gemma:2b does not support tools"},
                status=400)  # fmt: skip
    server.ndjson([
        chunk('Thought: I need the weather.\nAction: get_weather\nAction Input: {"city": "Lyon"}'),
        final_chunk(),
    ])  # fmt: skip
    server.ndjson([chunk("Final Answer: Sunny in Lyon."), final_chunk()])
    model = resolve("ollama:gemma:2b", base_url=server.url, retry=FAST)
    try:
        stream = Agent(model, tools=[get_weather]).stream("Weather in Lyon?")
        kinds = [event.type async for event in stream]
        result = await stream.drain()
    finally:
        await model.aclose()

    assert result.status == "completed", result.error
    assert result.output == "Sunny in Lyon."
    assert "warning" in kinds
    first, second, third = server.bodies()
    assert first["model"] == "gemma:2b" and "tools" in first
    assert "tools" not in second and "tools" not in third
    assert "get_weather" in second["messages"][0]["content"]
