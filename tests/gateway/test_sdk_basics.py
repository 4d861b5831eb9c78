"""The official openai SDK as the client: create (plain and streamed), retrieve, delete,
input items, a function-tool round trip with previous_response_id."""

from __future__ import annotations

import json

import openai
import pytest
from tests.gateway.conftest import Gateway

pytestmark = pytest.mark.anyio

WEATHER_TOOL = {
    "type": "function",
    "name": "get_time",
    "description": "The time in a city (client-executed).",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def script(*turns: object) -> str:
    return json.dumps({"script": list(turns)})


async def test_create_plain_text(gw: Gateway) -> None:
    r = await gw.client.responses.create(model="scripted", input="hello gateway")
    assert r.status == "completed"
    assert r.output_text == "echo: hello gateway"
    assert r.usage is not None and r.usage.total_tokens > 0
    assert r.object == "response" and r.id.startswith("resp_")


async def test_create_streamed_events_in_order(gw: Gateway) -> None:
    stream = await gw.client.responses.create(model="scripted", input="stream me", stream=True)
    types = [event.type async for event in stream]
    assert types[:2] == ["response.created", "response.in_progress"]
    assert types[-1] == "response.completed"
    assert types.count("response.output_text.delta") == 3  # "echo: ", "stream ", "me"
    assert "response.content_part.done" in types


async def test_stream_helper_gets_final_response(gw: Gateway) -> None:
    async with gw.client.responses.stream(model="scripted", input="helper") as stream:
        text = "".join([e.delta async for e in stream if e.type == "response.output_text.delta"])
        final = await stream.get_final_response()
    assert text == "echo: helper" == final.output_text


async def test_retrieve_returns_the_stored_response(gw: Gateway) -> None:
    created = await gw.client.responses.create(
        model="scripted", input="keep me", metadata={"topic": "tests"}, instructions="Be brief."
    )
    got = await gw.client.responses.retrieve(created.id)
    assert got.id == created.id and got.status == "completed"
    assert got.output_text == "echo: keep me"
    assert got.metadata == {"topic": "tests"} and got.instructions == "Be brief."
    assert [o.id for o in got.output] == [o.id for o in created.output]


async def test_delete_then_retrieve_is_404(gw: Gateway) -> None:
    created = await gw.client.responses.create(model="scripted", input="short-lived")
    await gw.client.responses.delete(created.id)
    with pytest.raises(openai.NotFoundError):
        await gw.client.responses.retrieve(created.id)
    with pytest.raises(openai.NotFoundError):
        await gw.client.responses.delete(created.id)


async def test_input_items_lists_this_response_inputs(gw: Gateway) -> None:
    created = await gw.client.responses.create(
        model="scripted",
        input=[
            {"role": "user", "content": "first"},
            {"role": "user", "content": [{"type": "input_text", "text": "second"}]},
        ],
    )
    page = await gw.client.responses.input_items.list(created.id, order="asc")
    texts = [item.content[0].text for item in page.data]  # type: ignore[union-attr]
    assert texts == ["first", "second"]
    desc = await gw.client.responses.input_items.list(created.id, limit=1)
    assert desc.data[0].content[0].text == "second"  # type: ignore[union-attr]
    assert desc.has_more is True


async def test_function_tool_round_trip_with_previous_response_id(gw: Gateway) -> None:
    first = await gw.client.responses.create(
        model="scripted",
        input=script({"call": "get_time", "arguments": {"city": "Lima"}}),
        tools=[WEATHER_TOOL],  # type: ignore[list-item]
    )
    assert first.status == "completed"
    calls = [o for o in first.output if o.type == "function_call"]
    assert [c.name for c in calls] == ["get_time"]
    assert json.loads(calls[0].arguments) == {"city": "Lima"}
    second = await gw.client.responses.create(
        model="scripted",
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": calls[0].call_id, "output": "09:30"}],
        tools=[WEATHER_TOOL],  # type: ignore[list-item]
    )
    assert second.status == "completed"
    assert second.previous_response_id == first.id
    assert second.output_text == "Done. get_time -> 09:30"


async def test_images_in_input_are_accepted(gw: Gateway) -> None:
    r = await gw.client.responses.create(
        model="scripted",
        input=[
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "what is this?"},
                    {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
                ],
            }
        ],
    )
    assert r.output_text == "echo: what is this?"
    page = await gw.client.responses.input_items.list(r.id)
    assert page.data[0].content[1].type == "input_image"  # type: ignore[union-attr]


async def test_models_and_health(gw: Gateway) -> None:
    models = await gw.client.models.list()
    assert "scripted" in [m.id for m in models.data]
    health = await gw.http.get("/healthz")
    assert health.status_code == 200 and health.json() == {"status": "ok"}
