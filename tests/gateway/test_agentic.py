"""The loop runs server-side: multi-turn streams with parallel server tools, client tools,
tool choice, limits and failures, each ending with the right status."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.gateway.conftest import Gateway, GatewayFactory
from tests.gateway.wirecheck import parse_sse

pytestmark = pytest.mark.anyio

DEMO = {"type": "agentloop:toolset", "name": "demo"}
CLIENT_TOOL = {
    "type": "function",
    "name": "ask_user",
    "description": "Ask the user a question (client-executed).",
    "parameters": {"type": "object", "properties": {"question": {"type": "string"}}},
}


def script(*turns: Any) -> str:
    return json.dumps({"script": list(turns)})


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"call": name, "arguments": arguments}


async def stream_events(gw: Gateway, **body: Any) -> list[dict[str, Any]]:
    """Create with stream=True through raw HTTP and return the parsed events."""
    response = await gw.http.post(
        "/v1/responses", json={"model": "scripted", "stream": True, **body}
    )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    events, done = parse_sse(response.content)
    assert done
    return events


async def test_multi_turn_loop_with_parallel_server_tools_in_one_stream(gw: Gateway) -> None:
    events = await stream_events(
        gw,
        input=script(
            [
                call("get_weather", city="Paris"),
                call("get_weather", city="Tokyo"),
                call("add", a=2, b=3),
            ],
            [
                {"think": "Now the lookup."},
                {"say": "Checking the table."},
                call("lookup", key="answer"),
            ],
            [call("lookup", key="missing")],
        ),
        tools=[DEMO],
    )
    types = [e["type"] for e in events]
    assert types.count("response.created") == 1 and types.count("response.in_progress") == 1
    assert types[-1] == "response.completed"
    final = events[-1]["response"]
    kinds = [(o["type"], o.get("name")) for o in final["output"]]
    assert kinds == [
        ("function_call", "get_weather"),
        ("function_call", "get_weather"),
        ("function_call", "add"),
        ("function_call_output", None),
        ("function_call_output", None),
        ("function_call_output", None),
        ("reasoning", None),
        ("message", None),
        ("function_call", "lookup"),
        ("function_call_output", None),
        ("function_call", "lookup"),
        ("function_call_output", None),
        ("message", None),
    ]
    outputs = [o["output"] for o in final["output"] if o["type"] == "function_call_output"]
    assert outputs[:4] == ["Paris: 18°C, light rain", "Tokyo: 24°C, clear", "5.0", "42"]
    assert outputs[4].startswith("No entry for 'missing'")  # a tool error goes back to the model
    assert final["output"][-1]["content"][0]["text"].startswith("Done. lookup -> No entry")
    # usage is summed over the four model turns (the scripted backend bills 10 per item)
    assert final["usage"]["input_tokens"] == 10 * (1 + 7 + 11 + 13)
    assert "response.reasoning_summary_text.delta" in types


async def test_tool_audit_records_are_stored(gw: Gateway) -> None:
    r = await gw.client.responses.create(
        model="scripted",
        input=script([call("add", a=1, b=1), call("lookup", key="nope")]),
        tools=[DEMO],  # type: ignore[list-item]
    )
    local = gw.app.state.auth.local.tenant_id
    records = await gw.store.audit_records(local, r.id)
    assert [(a["tool"], a["decision"], a["outcome"]) for a in records] == [
        ("add", "allowed", "success"),
        ("lookup", "allowed", "error"),
    ]
    assert records[0]["arguments"] == {"a": 1, "b": 1}


async def test_client_tool_ends_completed_after_server_calls_of_the_turn(gw: Gateway) -> None:
    r = await gw.client.responses.create(
        model="scripted",
        input=script([call("add", a=1, b=2), call("ask_user", question="Which city?")]),
        tools=[DEMO, CLIENT_TOOL],  # type: ignore[list-item]
    )
    assert r.status == "completed"
    assert [(o.type, getattr(o, "name", None)) for o in r.output] == [
        ("function_call", "add"),
        ("function_call", "ask_user"),
        ("function_call_output", None),
    ]


async def test_requires_action_extension(make_gateway: GatewayFactory) -> None:
    async with make_gateway(client_tools_status="requires_action") as gw:
        events = await stream_events(
            gw, input=script([call("ask_user", question="Which city?")]), tools=[CLIENT_TOOL]
        )
        final = events[-1]
        assert final["type"] == "response.completed"
        assert final["response"]["status"] == "requires_action"
        call_item = final["response"]["output"][0]
        stored = await gw.client.responses.retrieve(final["response"]["id"])
        assert stored.status == "requires_action"
        done = await gw.client.responses.create(
            model="scripted",
            previous_response_id=stored.id,
            input=[
                {"type": "function_call_output", "call_id": call_item["call_id"], "output": "Lima"}
            ],
            tools=[CLIENT_TOOL],  # type: ignore[list-item]
        )
        assert done.status == "completed" and done.output_text == "Done. ask_user -> Lima"


async def test_allowed_tools_refuses_other_tools(gw: Gateway) -> None:
    r = await gw.client.responses.create(
        model="scripted",
        input=script([call("get_weather", city="Paris"), call("add", a=1, b=1)]),
        tools=[DEMO],  # type: ignore[list-item]
        tool_choice={
            "type": "allowed_tools",
            "mode": "auto",
            "tools": [{"type": "function", "name": "add"}],
        },
    )
    assert r.status == "completed"
    outputs = {o.call_id: o.output for o in r.output if o.type == "function_call_output"}
    calls = {o.name: o.call_id for o in r.output if o.type == "function_call"}
    assert "not in the allowed tools" in str(outputs[calls["get_weather"]])
    assert outputs[calls["add"]] == "2.0"
    assert r.tool_choice.type == "allowed_tools"  # type: ignore[union-attr]


async def test_tool_choice_none_runs_no_tools(gw: Gateway) -> None:
    r = await gw.client.responses.create(
        model="scripted",
        input=script([call("add", a=1, b=1)]),
        tools=[DEMO],  # type: ignore[list-item]
        tool_choice="none",
    )
    assert r.status == "completed"
    assert [o.type for o in r.output] == ["message"]
    assert r.output_text == "(tools are disabled)"
    assert r.tool_choice == "none"


async def test_forced_tool_choice_is_echoed(gw: Gateway) -> None:
    r = await gw.client.responses.create(
        model="scripted",
        input=script([call("add", a=2, b=2)]),
        tools=[DEMO],  # type: ignore[list-item]
        tool_choice={"type": "function", "name": "add"},
    )
    assert r.status == "completed" and r.output_text == "Done. add -> 4.0"
    assert r.tool_choice.name == "add"  # type: ignore[union-attr]


async def test_max_tool_calls_ends_incomplete(gw: Gateway) -> None:
    events = await stream_events(
        gw,
        input=script([call("add", a=1, b=1), call("add", a=2, b=2)], [call("add", a=3, b=3)]),
        tools=[DEMO],
        max_tool_calls=2,
    )
    final = events[-1]
    assert final["type"] == "response.incomplete"
    assert final["response"]["status"] == "incomplete"
    assert final["response"]["incomplete_details"] == {"reason": "max_tool_calls"}
    assert final["response"]["max_tool_calls"] == 2
    last_output = final["response"]["output"][-1]
    assert last_output["type"] == "function_call_output"
    assert "max_tool_calls" in last_output["output"]


async def test_turn_limit_ends_incomplete(make_gateway: GatewayFactory) -> None:
    async with make_gateway(max_turns=2) as gw:
        r = await gw.client.responses.create(
            model="scripted",
            input=script([call("add", a=1, b=1)], [call("add", a=2, b=2)], [call("add", a=3, b=3)]),
            tools=[DEMO],  # type: ignore[list-item]
        )
        assert r.status == "incomplete"
        assert r.incomplete_details is not None and r.incomplete_details.reason == "max_turns"


async def test_provider_failure_ends_failed_keeping_earlier_turns(gw: Gateway) -> None:
    events = await stream_events(
        gw, input=script([call("add", a=1, b=2)], {"fail": "upstream exploded"}), tools=[DEMO]
    )
    final = events[-1]
    assert final["type"] == "response.failed"
    response = final["response"]
    assert response["status"] == "failed"
    assert response["error"] == {"code": "provider_unavailable", "message": "upstream exploded"}
    assert [o["type"] for o in response["output"]] == ["function_call", "function_call_output"]
    stored = await gw.client.responses.retrieve(response["id"])
    assert stored.status == "failed" and stored.error is not None


async def test_sampling_options_are_echoed(gw: Gateway) -> None:
    r = await gw.client.responses.create(
        model="scripted",
        input="hi",
        temperature=0.2,
        top_p=0.9,
        max_output_tokens=64,
        parallel_tool_calls=False,
        reasoning={"effort": "low", "summary": "auto"},
        truncation="auto",
        store=True,
    )
    assert (r.temperature, r.top_p, r.max_output_tokens) == (0.2, 0.9, 64)
    assert r.parallel_tool_calls is False and r.truncation == "auto"
    assert r.reasoning is not None and r.reasoning.effort == "low"


async def test_json_schema_output_through_the_output_machinery(gw: Gateway) -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "temp": {"type": "number"}},
        "required": ["city", "temp"],
        "additionalProperties": False,
    }
    r = await gw.client.responses.create(
        model="scripted",
        input=script([call("final_output", city="Paris", temp=18)]),
        text={
            "format": {"type": "json_schema", "name": "weather", "schema": schema, "strict": True}
        },
    )
    assert r.status == "completed"
    assert json.loads(r.output_text) == {"city": "Paris", "temp": 18}
    assert [o.type for o in r.output] == ["message"]
    assert r.text.format.type == "json_schema"  # type: ignore[union-attr]
