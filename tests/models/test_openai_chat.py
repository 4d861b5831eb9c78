"""OpenAIChatModel against a respx-faked Chat Completions API: configuration, request and
response translation (the real SDK encodes and parses everything)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import respx
from tests.models.openai_fakes import (
    CHAT_URL,
    chat_tool_call,
    chat_usage,
    completion,
    http_client,
    sent,
)

from agentloop import FunctionCall, FunctionCallOutput, Message
from agentloop.errors import BadRequest, ConfigError
from agentloop.items import (
    InputImage,
    InputText,
    OutputText,
    Reasoning,
    Refusal,
    Usage,
    assistant,
    system,
    user,
)
from agentloop.models.base import ModelRequest, ModelSettings, ToolSchema
from agentloop.models.openai_chat import OpenAIChatModel
from agentloop.models.strict_schema import StrictSchemaError

pytestmark = pytest.mark.anyio

WEATHER = ToolSchema(
    name="get_weather",
    description="Weather for a city.",
    parameters={
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "unit": {"type": "string", "enum": ["c", "f"], "default": "c"},
        },
        "required": ["city"],
        "additionalProperties": False,
    },
)


@pytest.fixture
def router() -> respx.Router:
    return respx.Router(assert_all_called=False)


@pytest.fixture
def model(router: respx.Router) -> OpenAIChatModel:
    return OpenAIChatModel("gpt-4.1-mini", api_key="sk-test", http_client=http_client(router))


def answer(router: respx.Router, *responses: httpx.Response) -> respx.Route:
    return router.post(CHAT_URL).mock(side_effect=list(responses))


# --- configuration -------------------------------------------------------------------------


def test_missing_api_key_is_a_config_error_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        OpenAIChatModel("gpt-4.1-mini")


def test_key_and_base_url_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    monkeypatch.setenv("OPENAI_BASE_URL", "https://api.groq.com/openai/v1")
    model = OpenAIChatModel("llama-3.3-70b-versatile")
    assert model.client.api_key == "sk-from-env"
    assert str(model.client.base_url) == "https://api.groq.com/openai/v1/"
    assert model.provider == "OpenAI-compatible server api.groq.com"


def test_the_sdks_own_retries_are_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert OpenAIChatModel("gpt-4.1-mini").client.max_retries == 0
    import openai

    given = openai.AsyncOpenAI(api_key="sk-test", max_retries=5)
    assert OpenAIChatModel("gpt-4.1-mini", client=given).client.max_retries == 0


async def test_a_local_server_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    router = respx.Router()
    route = router.post("http://localhost:11434/v1/chat/completions").mock(
        return_value=httpx.Response(200, json=completion("hi", model="qwen3"))
    )
    model = OpenAIChatModel(
        "qwen3", base_url="http://localhost:11434/v1", http_client=http_client(router)
    )
    response = await model.request(ModelRequest(items=[user("hello")]))
    assert response.text == "hi"
    assert route.calls.last.request.headers["authorization"] == "Bearer not-needed"


async def test_default_headers_and_organization_are_sent(router: respx.Router) -> None:
    route = answer(router, httpx.Response(200, json=completion("ok")))
    model = OpenAIChatModel(
        "gpt-4.1-mini",
        api_key="sk-test",
        organization="org-123",
        default_headers={"HTTP-Referer": "https://example.com"},
        http_client=http_client(router),
    )
    await model.request(ModelRequest(items=[user("hi")]))
    headers = route.calls.last.request.headers
    assert headers["openai-organization"] == "org-123"
    assert headers["http-referer"] == "https://example.com"


async def test_aclose_leaves_a_callers_http_client_open(router: respx.Router) -> None:
    given = http_client(router)
    model = OpenAIChatModel("gpt-4.1-mini", api_key="sk-test", http_client=given)
    await model.aclose()
    assert not given.is_closed
    owned = OpenAIChatModel("gpt-4.1-mini", api_key="sk-test")
    await owned.aclose()
    assert owned.client.is_closed()


# --- request translation -------------------------------------------------------------------


async def test_a_whole_conversation_is_translated_to_chat_messages(
    router: respx.Router, model: OpenAIChatModel
) -> None:
    route = answer(router, httpx.Response(200, json=completion("done")))
    items = [
        system("Use metric units."),
        Message(role="developer", content=(InputText(text="Be brief."),)),
        Message(
            role="user",
            content=(
                InputText(text="What is in this picture, and the weather?"),
                InputImage(image_url="data:image/png;base64,iVBORw0KGgo=", detail="high"),
                InputImage(image_url="https://example.com/cat.jpg"),
            ),
        ),
        Reasoning(summary=("thinking about it",), encrypted_content="gAAAA"),
        assistant("Let me check."),
        FunctionCall(call_id="call_1", name="get_weather", arguments='{"city":"Paris"}'),
        FunctionCall(call_id="call_2", name="get_weather", arguments='{"city":"Oslo"}'),
        FunctionCallOutput(call_id="call_1", output="18C"),
        FunctionCallOutput(call_id="call_2", output="Error: service down", is_error=True),
        FunctionCall(call_id="call_3", name="get_weather", arguments='{"city":"Rome"}'),
        FunctionCallOutput(call_id="call_3", output="25C"),
        Message(role="assistant", content=(Refusal(refusal="I can't identify people."),)),
    ]
    await model.request(
        ModelRequest(items=items, instructions="You are a helpful assistant.", tools=[WEATHER])
    )
    body = sent(route)
    assert body["messages"] == [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "system", "content": "Use metric units."},
        {"role": "system", "content": "Be brief."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in this picture, and the weather?"},
                {
                    "type": "image_url",
                    "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "high"},
                },
                {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}},
            ],
        },
        {
            "role": "assistant",
            "content": "Let me check.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
        {"role": "tool", "tool_call_id": "call_2", "content": "Error: service down"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_3",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Rome"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_3", "content": "25C"},
        {"role": "assistant", "content": None, "refusal": "I can't identify people."},
    ]


async def test_tools_are_sent_as_functions_with_choice_and_parallel_flag(
    router: respx.Router, model: OpenAIChatModel
) -> None:
    route = answer(router, httpx.Response(200, json=completion("ok")))
    await model.request(
        ModelRequest(items=[user("hi")], tools=[WEATHER], parallel_tool_calls=False)
    )
    assert sent(route) == {
        "model": "gpt-4.1-mini",
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Weather for a city.",
                    "parameters": dict(WEATHER.parameters),
                },
            }
        ],
        "tool_choice": "auto",
        "parallel_tool_calls": False,
    }


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", "auto"),
        ("required", "required"),
        ("none", "none"),
        ("get_weather", {"type": "function", "function": {"name": "get_weather"}}),
    ],
)
async def test_tool_choice_forms(
    router: respx.Router, model: OpenAIChatModel, choice: str, wire: Any
) -> None:
    route = answer(router, httpx.Response(200, json=completion("ok")))
    await model.request(ModelRequest(items=[user("hi")], tools=[WEATHER], tool_choice=choice))
    assert sent(route)["tool_choice"] == wire


async def test_without_tools_no_tool_fields_are_sent(
    router: respx.Router, model: OpenAIChatModel
) -> None:
    route = answer(router, httpx.Response(200, json=completion("ok")))
    await model.request(ModelRequest(items=[user("hi")], tool_choice="required"))
    assert sent(route) == {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "hi"}]}


async def test_strict_tools_send_strict_compatible_schemas(router: respx.Router) -> None:
    route = answer(router, httpx.Response(200, json=completion("ok")))
    model = OpenAIChatModel(
        "gpt-4.1-mini", api_key="sk-test", strict_tools=True, http_client=http_client(router)
    )
    free_form = ToolSchema(
        name="set_labels",
        description="",
        parameters={
            "type": "object",
            "properties": {"labels": {"type": "object", "additionalProperties": True}},
            "required": ["labels"],
        },
    )
    await model.request(ModelRequest(items=[user("hi")], tools=[WEATHER, free_form]))
    weather, labels = sent(route)["tools"]
    assert weather["function"]["strict"] is True
    assert weather["function"]["parameters"] == {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "unit": {"anyOf": [{"type": "string", "enum": ["c", "f"]}, {"type": "null"}]},
        },
        "required": ["city", "unit"],
        "additionalProperties": False,
    }
    # a free-form map cannot be strict: that tool goes without strict, unchanged
    assert "strict" not in labels["function"]
    assert labels["function"]["parameters"] == dict(free_form.parameters)


async def test_a_tool_that_demands_strict_with_an_impossible_schema_is_an_error(
    model: OpenAIChatModel,
) -> None:
    bad = ToolSchema(
        name="t",
        description="",
        parameters={"type": "object", "additionalProperties": {"type": "string"}},
        strict=True,
    )
    with pytest.raises(StrictSchemaError, match="'t'"):
        await model.request(ModelRequest(items=[user("hi")], tools=[bad]))


async def test_strict_nulls_for_left_out_optional_arguments_are_removed(
    router: respx.Router,
) -> None:
    call = chat_tool_call("call_9", "get_weather", '{"city": "Paris", "unit": null}')
    answer(
        router,
        httpx.Response(200, json=completion(tool_calls=[call], finish_reason="tool_calls")),
    )
    model = OpenAIChatModel(
        "gpt-4.1-mini", api_key="sk-test", strict_tools=True, http_client=http_client(router)
    )
    response = await model.request(ModelRequest(items=[user("hi")], tools=[WEATHER]))
    assert json.loads(response.tool_calls[0].arguments) == {"city": "Paris"}


async def test_settings_and_extra_are_sent(router: respx.Router, model: OpenAIChatModel) -> None:
    route = answer(router, httpx.Response(200, json=completion("ok")))
    settings = ModelSettings(
        temperature=0.2,
        top_p=0.9,
        max_output_tokens=256,
        reasoning={"effort": "low"},
        extra={"seed": 7, "top_k": 20},
    )
    await model.request(ModelRequest(items=[user("hi")], settings=settings))
    assert sent(route) == {
        "model": "gpt-4.1-mini",
        "messages": [{"role": "user", "content": "hi"}],
        "temperature": 0.2,
        "top_p": 0.9,
        "max_completion_tokens": 256,
        "reasoning_effort": "low",
        "seed": 7,
        "top_k": 20,
    }


async def test_output_schema_becomes_a_strict_json_schema_response_format(
    router: respx.Router, model: OpenAIChatModel
) -> None:
    route = answer(router, httpx.Response(200, json=completion('{"answer": 4, "note": null}')))
    schema = {
        "title": "Result",
        "type": "object",
        "properties": {"answer": {"type": "integer"}, "note": {"type": "string"}},
        "required": ["answer"],
    }
    response = await model.request(ModelRequest(items=[user("2+2?")], output_schema=schema))
    assert sent(route)["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "Result",
            "strict": True,
            "schema": {
                "title": "Result",
                "type": "object",
                "properties": {
                    "answer": {"type": "integer"},
                    "note": {"type": ["string", "null"]},
                },
                "required": ["answer", "note"],
                "additionalProperties": False,
            },
        },
    }
    # the null strict mode forced for the left-out optional field is gone again
    assert json.loads(response.text) == {"answer": 4}


async def test_an_image_given_only_by_file_id_is_rejected(model: OpenAIChatModel) -> None:
    message = Message(role="user", content=(InputImage(file_id="file-abc"),))
    with pytest.raises(BadRequest, match="file_id"):
        await model.request(ModelRequest(items=[message]))


# --- response translation ------------------------------------------------------------------


async def test_a_text_answer_with_usage_details(
    router: respx.Router, model: OpenAIChatModel
) -> None:
    usage = chat_usage(1200, 300, cached=1024, reasoning=256)
    answer(router, httpx.Response(200, json=completion("Paris.", usage=usage)))
    response = await model.request(ModelRequest(items=[user("Capital of France?")]))
    assert response.items == (Message(role="assistant", content=(OutputText(text="Paris."),)),)
    assert response.usage == Usage(
        input_tokens=1200,
        output_tokens=300,
        total_tokens=1500,
        cached_input_tokens=1024,
        reasoning_tokens=256,
    )
    assert response.finish_reason == "stop"
    assert response.model == "gpt-4.1-mini-2025-04-14"
    assert response.retries == 0


async def test_tool_calls_come_back_as_function_call_items(
    router: respx.Router, model: OpenAIChatModel
) -> None:
    calls = [
        chat_tool_call("call_a", "get_weather", '{"city":"Paris"}'),
        chat_tool_call("call_b", "get_weather", '{"city":"Oslo"}'),
    ]
    answer(
        router,
        httpx.Response(
            200, json=completion("Checking.", tool_calls=calls, finish_reason="tool_calls")
        ),
    )
    response = await model.request(ModelRequest(items=[user("weather?")], tools=[WEATHER]))
    assert response.items == (
        Message(role="assistant", content=(OutputText(text="Checking."),)),
        FunctionCall(call_id="call_a", name="get_weather", arguments='{"city":"Paris"}'),
        FunctionCall(call_id="call_b", name="get_weather", arguments='{"city":"Oslo"}'),
    )
    assert response.finish_reason == "tool_calls"


@pytest.mark.parametrize(
    ("wire", "ours", "with_calls"),
    [
        ("stop", "stop", False),
        ("length", "length", False),
        ("content_filter", "content_filter", False),
        ("tool_calls", "tool_calls", True),
        ("stop", "tool_calls", True),  # some compatible servers say "stop" after tool calls
    ],
)
async def test_finish_reasons_map_to_one_vocabulary(
    router: respx.Router, model: OpenAIChatModel, wire: str, ours: str, with_calls: bool
) -> None:
    calls = [chat_tool_call("call_a", "get_weather", "{}")] if with_calls else []
    answer(
        router,
        httpx.Response(200, json=completion("x", tool_calls=calls, finish_reason=wire)),
    )
    response = await model.request(ModelRequest(items=[user("hi")]))
    assert response.finish_reason == ours


async def test_a_refusal_becomes_a_refusal_part(
    router: respx.Router, model: OpenAIChatModel
) -> None:
    answer(router, httpx.Response(200, json=completion(None, refusal="I can't help with that.")))
    response = await model.request(ModelRequest(items=[user("hi")]))
    assert response.items == (
        Message(role="assistant", content=(Refusal(refusal="I can't help with that."),)),
    )


async def test_reasoning_content_from_compatible_servers_becomes_a_reasoning_item(
    router: respx.Router, model: OpenAIChatModel
) -> None:
    body = completion("42", reasoning_content="6 times 7.")
    answer(router, httpx.Response(200, json=body))
    response = await model.request(ModelRequest(items=[user("hi")]))
    assert response.items[0] == Reasoning(content=("6 times 7.",))
    assert response.text == "42"


async def test_a_server_without_usage_reports_zero_usage(
    router: respx.Router, model: OpenAIChatModel
) -> None:
    body = completion("hi")
    del body["usage"]
    answer(router, httpx.Response(200, json=body))
    response = await model.request(ModelRequest(items=[user("hi")]))
    assert response.usage == Usage()
