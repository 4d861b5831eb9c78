"""OpenAIResponsesModel against a respx-faked Responses API (the real SDK parses everything)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import respx
from tests.models.openai_fakes import RESPONSES_URL, api_error, http_client, sent, sse

from agentloop import Agent, FunctionCall, FunctionCallOutput, Message, tool
from agentloop.errors import ContextWindowExceeded, ProviderUnavailable, RateLimited
from agentloop.items import (
    InputImage,
    InputText,
    OutputText,
    Reasoning,
    Usage,
    assistant,
    user,
)
from agentloop.models.base import (
    ModelRequest,
    ModelSettings,
    ReasoningDelta,
    ResponseDone,
    StreamPart,
    TextDelta,
    ToolCallDelta,
    ToolSchema,
)
from agentloop.models.openai_responses import OpenAIResponsesModel
from agentloop.models.retry import NO_RETRIES, RetryPolicy

pytestmark = pytest.mark.anyio

WEATHER = ToolSchema(
    name="get_weather",
    description="Weather for a city.",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"],
    },
)


# --- payloads shaped like the real API's ------------------------------------------------------


def usage(inp: int = 36, out: int = 87, *, cached: int = 0, reasoning: int = 0) -> dict[str, Any]:
    return {
        "input_tokens": inp,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": out,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": inp + out,
    }


def message_item(text: str, item_id: str = "msg_67ccd3acc8d48190a77525dc6de64b4104becb25c") -> Any:
    return {
        "type": "message",
        "id": item_id,
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
    }


def call_item(call_id: str, name: str, arguments: str, item_id: str) -> Any:
    return {
        "type": "function_call",
        "id": item_id,
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }


def reasoning_item(summary: str, item_id: str = "rs_6820f383d7c08191846711c5df8233bc") -> Any:
    return {
        "type": "reasoning",
        "id": item_id,
        "summary": [{"type": "summary_text", "text": summary}],
        "encrypted_content": "gAAAAABoIPOG-encrypted",
    }


def response(
    output: list[Any],
    *,
    status: str = "completed",
    incomplete: str | None = None,
    error: dict[str, Any] | None = None,
    usage_: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "id": "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
        "object": "response",
        "created_at": 1741476542,
        "status": status,
        "error": error,
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "instructions": None,
        "max_output_tokens": None,
        "model": "gpt-4.1-2025-04-14",
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": True,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage_ if usage_ is not None else usage(),
        "user": None,
        "metadata": {},
    }


class Events:
    """Builds a named SSE stream with increasing sequence numbers."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def add(self, type: str, **fields: Any) -> Events:
        self.events.append({"type": type, "sequence_number": len(self.events), **fields})
        return self

    def start(self) -> Events:
        shell = response([], status="in_progress", usage_={})
        shell["usage"] = None
        return self.add("response.created", response=shell).add(
            "response.in_progress", response=shell
        )

    def text(self, index: int, item_id: str, *deltas: str) -> Events:
        item = {"type": "message", "id": item_id, "status": "in_progress", "role": "assistant",
                "content": []}  # fmt: skip
        self.add("response.output_item.added", output_index=index, item=item)
        part = {"type": "output_text", "text": "", "annotations": []}
        self.add("response.content_part.added", item_id=item_id, output_index=index,
                 content_index=0, part=part)  # fmt: skip
        for delta in deltas:
            self.add("response.output_text.delta", item_id=item_id, output_index=index,
                     content_index=0, delta=delta, logprobs=[])  # fmt: skip
        self.add("response.output_text.done", item_id=item_id, output_index=index,
                 content_index=0, text="".join(deltas), logprobs=[])  # fmt: skip
        return self.add("response.output_item.done", output_index=index,
                        item=message_item("".join(deltas), item_id))  # fmt: skip

    def call(self, index: int, item_id: str, call_id: str, name: str, *deltas: str) -> Events:
        head = call_item(call_id, name, "", item_id) | {"status": "in_progress"}
        self.add("response.output_item.added", output_index=index, item=head)
        for delta in deltas:
            self.add("response.function_call_arguments.delta", item_id=item_id,
                     output_index=index, delta=delta)  # fmt: skip
        self.add("response.function_call_arguments.done", item_id=item_id, output_index=index,
                 name=name, arguments="".join(deltas))  # fmt: skip
        return self.add("response.output_item.done", output_index=index,
                        item=call_item(call_id, name, "".join(deltas), item_id))  # fmt: skip

    def reasoning(self, index: int, item_id: str, *deltas: str) -> Events:
        head = {"type": "reasoning", "id": item_id, "summary": []}
        self.add("response.output_item.added", output_index=index, item=head)
        for delta in deltas:
            self.add("response.reasoning_summary_text.delta", item_id=item_id,
                     output_index=index, summary_index=0, delta=delta)  # fmt: skip
        return self.add("response.output_item.done", output_index=index,
                        item=reasoning_item("".join(deltas), item_id))  # fmt: skip

    def done(self, body: dict[str, Any], type: str = "response.completed") -> httpx.Response:
        self.add(type, response=body)
        return self.http()

    def http(self) -> httpx.Response:
        return sse(self.events, named=True, done=False)


@pytest.fixture
def router() -> respx.Router:
    return respx.Router(assert_all_called=False)


@pytest.fixture
def model(router: respx.Router) -> OpenAIResponsesModel:
    return OpenAIResponsesModel("gpt-4.1", api_key="sk-test", http_client=http_client(router))


def answer(router: respx.Router, *replies: httpx.Response) -> respx.Route:
    return router.post(RESPONSES_URL).mock(side_effect=list(replies))


def ok(output: list[Any], **kwargs: Any) -> httpx.Response:
    return httpx.Response(200, json=response(output, **kwargs))


async def collect(model: OpenAIResponsesModel, request: ModelRequest) -> list[StreamPart]:
    return [part async for part in model.stream(request)]


# --- request translation -------------------------------------------------------------------


async def test_the_conversation_is_sent_as_items_without_our_ids(
    router: respx.Router, model: OpenAIResponsesModel
) -> None:
    route = answer(router, ok([message_item("done")]))
    items = [
        Message(role="developer", content=(InputText(text="Be brief."),), id="msg_ours_1"),
        Message(
            role="user",
            content=(
                InputText(text="What is this?"),
                InputImage(file_id="file-abc123", detail="low"),
                InputImage(image_url="https://example.com/cat.jpg"),
            ),
            id="msg_ours_2",
        ),
        Reasoning(id="rs_abc", summary=("Look first.",), encrypted_content="gAAAA-blob"),
        Reasoning(id="rs_foreign", content=("from another provider",)),
        assistant("Checking.", id="msg_ours_3"),
        FunctionCall(call_id="call_1", name="get_weather", arguments='{"city":"Oslo"}', id="fc_1"),
        FunctionCallOutput(call_id="call_1", output="Error: down", is_error=True, id="fco_1"),
    ]
    await model.request(ModelRequest(items=items, instructions="You are helpful."))
    body = sent(route)
    assert body == {
        "model": "gpt-4.1",
        "instructions": "You are helpful.",
        "input": [
            {
                "type": "message",
                "role": "developer",
                "content": [{"type": "input_text", "text": "Be brief."}],
            },
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "What is this?"},
                    {"type": "input_image", "file_id": "file-abc123", "detail": "low"},
                    {
                        "type": "input_image",
                        "image_url": "https://example.com/cat.jpg",
                        "detail": "auto",
                    },
                ],
            },
            {
                "type": "reasoning",
                "id": "rs_abc",
                "summary": [{"type": "summary_text", "text": "Look first."}],
                "encrypted_content": "gAAAA-blob",
            },
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Checking.", "annotations": []}],
            },
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": "get_weather",
                "arguments": '{"city":"Oslo"}',
            },
            {"type": "function_call_output", "call_id": "call_1", "output": "Error: down"},
        ],
    }


async def test_tools_always_say_whether_they_are_strict(
    router: respx.Router, model: OpenAIResponsesModel
) -> None:
    route = answer(router, ok([message_item("ok")]))
    await model.request(ModelRequest(items=[user("hi")], tools=[WEATHER]))
    body = sent(route)
    assert body["tools"] == [
        {
            "type": "function",
            "name": "get_weather",
            "description": "Weather for a city.",
            "parameters": dict(WEATHER.parameters),
            "strict": False,
        }
    ]
    assert body["tool_choice"] == "auto"
    assert body["parallel_tool_calls"] is True


async def test_strict_tools_get_strict_schemas(router: respx.Router) -> None:
    route = answer(router, ok([message_item("ok")]))
    model = OpenAIResponsesModel(
        "gpt-4.1", api_key="sk-test", strict_tools=True, http_client=http_client(router)
    )
    await model.request(ModelRequest(items=[user("hi")], tools=[WEATHER]))
    (tool_body,) = sent(route)["tools"]
    assert tool_body["strict"] is True
    assert tool_body["parameters"] == {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": ["integer", "null"]}},
        "required": ["city", "days"],
        "additionalProperties": False,
    }


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", "auto"),
        ("required", "required"),
        ("none", "none"),
        ("get_weather", {"type": "function", "name": "get_weather"}),
    ],
)
async def test_tool_choice_forms(
    router: respx.Router, model: OpenAIResponsesModel, choice: str, wire: Any
) -> None:
    route = answer(router, ok([message_item("ok")]))
    await model.request(
        ModelRequest(
            items=[user("hi")], tools=[WEATHER], tool_choice=choice, parallel_tool_calls=False
        )
    )
    assert sent(route)["tool_choice"] == wire
    assert sent(route)["parallel_tool_calls"] is False


async def test_settings_reasoning_and_output_schema_are_sent(
    router: respx.Router, model: OpenAIResponsesModel
) -> None:
    route = answer(router, ok([message_item('{"n": 1}')]))
    settings = ModelSettings(
        temperature=0.1,
        top_p=0.5,
        max_output_tokens=500,
        reasoning={"effort": "medium", "summary": "auto"},
        extra={"store": False, "service_tier": "flex"},
    )
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    await model.request(ModelRequest(items=[user("n?")], settings=settings, output_schema=schema))
    assert sent(route) == {
        "model": "gpt-4.1",
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "n?"}]}
        ],
        "temperature": 0.1,
        "top_p": 0.5,
        "max_output_tokens": 500,
        "reasoning": {"effort": "medium", "summary": "auto"},
        "include": ["reasoning.encrypted_content"],
        "text": {
            "format": {
                "type": "json_schema",
                "name": "output",
                "schema": {
                    "type": "object",
                    "properties": {"n": {"type": "integer"}},
                    "required": ["n"],
                    "additionalProperties": False,
                },
                "strict": True,
            }
        },
        "store": False,
        "service_tier": "flex",
    }


# --- response translation ------------------------------------------------------------------


async def test_output_items_come_back_with_usage_details(
    router: respx.Router, model: OpenAIResponsesModel
) -> None:
    output = [
        reasoning_item("Need the weather."),
        message_item("Let me look."),
        call_item("call_x", "get_weather", '{"city":"Paris"}', "fc_67ca09c6bedc8190"),
    ]
    answer(router, ok(output, usage_=usage(2000, 150, cached=1920, reasoning=64)))
    result = await model.request(ModelRequest(items=[user("weather?")], tools=[WEATHER]))
    assert result.items == (
        Reasoning(
            id="rs_6820f383d7c08191846711c5df8233bc",
            summary=("Need the weather.",),
            encrypted_content="gAAAAABoIPOG-encrypted",
        ),
        Message(
            role="assistant",
            content=(OutputText(text="Let me look."),),
            id="msg_67ccd3acc8d48190a77525dc6de64b4104becb25c",
        ),
        FunctionCall(
            call_id="call_x",
            name="get_weather",
            arguments='{"city":"Paris"}',
            id="fc_67ca09c6bedc8190",
        ),
    )
    assert result.usage == Usage(
        input_tokens=2000,
        output_tokens=150,
        total_tokens=2150,
        cached_input_tokens=1920,
        reasoning_tokens=64,
    )
    assert result.finish_reason == "tool_calls"
    assert result.model == "gpt-4.1-2025-04-14"


@pytest.mark.parametrize(
    ("reason", "finish"), [("max_output_tokens", "length"), ("content_filter", "content_filter")]
)
async def test_an_incomplete_response_maps_its_reason(
    router: respx.Router, model: OpenAIResponsesModel, reason: str, finish: str
) -> None:
    answer(router, ok([message_item("Once upon")], status="incomplete", incomplete=reason))
    result = await model.request(ModelRequest(items=[user("story")]))
    assert result.finish_reason == finish
    assert result.text == "Once upon"


async def test_a_failed_response_is_a_typed_error(
    router: respx.Router, model: OpenAIResponsesModel
) -> None:
    model.retry = NO_RETRIES
    error = {"code": "server_error", "message": "The model failed to generate a response."}
    answer(router, ok([], status="failed", error=error))
    with pytest.raises(ProviderUnavailable, match="failed to generate"):
        await model.request(ModelRequest(items=[user("hi")]))


async def test_hosted_tool_items_are_skipped(
    router: respx.Router, model: OpenAIResponsesModel
) -> None:
    search = {"type": "web_search_call", "id": "ws_1", "status": "completed",
              "action": {"type": "search", "query": "x"}}  # fmt: skip
    answer(router, ok([search, message_item("Found it.")]))
    result = await model.request(ModelRequest(items=[user("search")]))
    assert [type(i).__name__ for i in result.items] == ["Message"]


# --- streaming -----------------------------------------------------------------------------


async def test_streamed_text_reasoning_and_calls(
    router: respx.Router, model: OpenAIResponsesModel
) -> None:
    final = response(
        [
            reasoning_item("Two cities.", "rs_1"),
            message_item("Checking both.", "msg_1"),
            call_item("call_a", "get_weather", '{"city":"Paris"}', "fc_a"),
            call_item("call_b", "get_weather", '{"city":"Oslo"}', "fc_b"),
        ],
        usage_=usage(100, 40, reasoning=12),
    )
    stream = (
        Events()
        .start()
        .reasoning(0, "rs_1", "Two ", "cities.")
        .text(1, "msg_1", "Checking ", "both.")
        .call(2, "fc_a", "call_a", "get_weather", '{"city":', '"Paris"}')
        .call(3, "fc_b", "call_b", "get_weather", '{"city":"Oslo"}')
        .done(final)
    )
    route = answer(router, stream)
    parts = await collect(model, ModelRequest(items=[user("weather?")], tools=[WEATHER]))
    assert parts[:-1] == [
        ReasoningDelta(delta="Two "),
        ReasoningDelta(delta="cities."),
        TextDelta(delta="Checking "),
        TextDelta(delta="both."),
        ToolCallDelta(index=0, call_id="call_a", name="get_weather", arguments_delta=""),
        ToolCallDelta(index=0, call_id="call_a", name="get_weather", arguments_delta='{"city":'),
        ToolCallDelta(index=0, call_id="call_a", name="get_weather", arguments_delta='"Paris"}'),
        ToolCallDelta(index=1, call_id="call_b", name="get_weather", arguments_delta=""),
        ToolCallDelta(
            index=1, call_id="call_b", name="get_weather", arguments_delta='{"city":"Oslo"}'
        ),
    ]
    done = parts[-1]
    assert isinstance(done, ResponseDone)
    assert [c.arguments for c in done.response.tool_calls] == [
        '{"city":"Paris"}',
        '{"city":"Oslo"}',
    ]
    assert done.response.usage.reasoning_tokens == 12
    assert done.response.finish_reason == "tool_calls"
    assert sent(route)["stream"] is True


async def test_a_streamed_incomplete_response_ends_with_length(
    router: respx.Router, model: OpenAIResponsesModel
) -> None:
    final = response([message_item("Once")], status="incomplete", incomplete="max_output_tokens")
    answer(router, Events().start().text(0, "msg_1", "Once").done(final, "response.incomplete"))
    parts = await collect(model, ModelRequest(items=[user("story")]))
    assert parts[0] == TextDelta(delta="Once")
    done = parts[-1]
    assert isinstance(done, ResponseDone) and done.response.finish_reason == "length"


async def test_a_stream_that_fails_before_any_output_is_retried(
    router: respx.Router, model: OpenAIResponsesModel
) -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    model.sleep = sleep
    model.retry = RetryPolicy(max_retries=2, jitter=False, initial_delay=0.25)
    failed = response([], status="failed", error={"code": "server_error", "message": "oops"})
    ok_stream = Events().start().text(0, "msg_1", "Hi").done(response([message_item("Hi")]))
    route = answer(router, Events().start().done(failed, "response.failed"), ok_stream)
    parts = await collect(model, ModelRequest(items=[user("hi")]))
    done = parts[-1]
    assert isinstance(done, ResponseDone)
    assert done.response.retries == 1 and done.response.text == "Hi"
    assert route.call_count == 2 and waits == [0.25]


async def test_an_error_event_is_a_typed_error(
    router: respx.Router, model: OpenAIResponsesModel
) -> None:
    model.retry = NO_RETRIES
    stream = (
        Events()
        .start()
        .add(
            "error",
            code="context_length_exceeded",
            message="Your input exceeds the context window of this model.",
            param=None,
        )
    )
    answer(router, stream.http())
    with pytest.raises(ContextWindowExceeded):
        await collect(model, ModelRequest(items=[user("hi")]))


async def test_a_stream_cut_before_the_end_is_provider_unavailable(
    router: respx.Router, model: OpenAIResponsesModel
) -> None:
    model.retry = NO_RETRIES
    answer(router, Events().start().text(0, "msg_1", "Hal").http())
    with pytest.raises(ProviderUnavailable, match="ended before"):
        await collect(model, ModelRequest(items=[user("hi")]))


async def test_http_errors_are_mapped_here_too(
    router: respx.Router, model: OpenAIResponsesModel
) -> None:
    model.retry = NO_RETRIES
    answer(
        router, api_error(429, "Slow down", type="rate_limit_error", headers={"retry-after": "3"})
    )
    with pytest.raises(RateLimited) as info:
        await model.request(ModelRequest(items=[user("hi")]))
    assert info.value.retry_after == 3.0 and info.value.status_code == 429


# --- end to end ----------------------------------------------------------------------------


@tool(read_only=True)
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


async def test_an_agent_round_trip_sends_the_call_and_its_output_back(
    router: respx.Router, model: OpenAIResponsesModel
) -> None:
    first = (
        Events()
        .start()
        .reasoning(0, "rs_1", "Use the tool.")
        .call(1, "fc_1", "call_s", "shout", '{"text": "hi"}')
        .done(
            response(
                [
                    reasoning_item("Use the tool.", "rs_1"),
                    call_item("call_s", "shout", '{"text": "hi"}', "fc_1"),
                ]
            )
        )
    )
    second = Events().start().text(0, "msg_2", "HI").done(response([message_item("HI", "msg_2")]))
    route = answer(router, first, second)
    result = await Agent(model, tools=[shout]).run("shout hi")
    assert result.status == "completed", result.error
    assert result.output == "HI"
    follow_up = sent(route, 1)["input"]
    assert follow_up[1:] == [
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Use the tool."}],
            "encrypted_content": "gAAAAABoIPOG-encrypted",
        },
        {
            "type": "function_call",
            "call_id": "call_s",
            "name": "shout",
            "arguments": '{"text": "hi"}',
        },
        {"type": "function_call_output", "call_id": "call_s", "output": "HI"},
    ]
