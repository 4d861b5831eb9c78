"""Behaviour 11: client tools and approvals pause the run; resume continues it, even in
another process after a JSON round trip."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from agentloop import (
    Agent,
    FunctionCall,
    FunctionCallOutput,
    Policy,
    RunState,
    StateError,
    Tool,
    tool,
)
from agentloop.testing import ScriptedModel, text, tool_call

pytestmark = pytest.mark.anyio

weather = Tool.external(
    "get_weather",
    "Weather for a city, looked up by the client.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


@tool(read_only=True)
def look(q: str) -> str:
    return f"saw {q}"


@tool(risk="high")
def deploy(env: str) -> str:
    return f"deployed {env}"


def _script() -> list[object]:
    return [
        [
            tool_call("look", q="a", call_id="c1"),
            tool_call("get_weather", city="Oslo", call_id="c2"),
            tool_call("deploy", env="prod", call_id="c3"),
        ],
        text("all done"),
    ]


async def test_client_tool_and_approval_pause_after_the_other_calls_ran() -> None:
    model = ScriptedModel(_script())  # type: ignore[arg-type]
    agent = Agent(model, tools=[look, weather, deploy])
    result = await agent.run("go")
    assert result.status == "requires_action" and result.reason == "approval_required"
    assert [(p.call_id, p.name, p.kind) for p in result.pending] == [
        ("c2", "get_weather", "client"),
        ("c3", "deploy", "approval"),
    ]
    assert result.pending[0].arguments == {"city": "Oslo"}
    outs = [i for i in result.items if isinstance(i, FunctionCallOutput)]
    assert [o.call_id for o in outs] == ["c1"]  # the server call ran before pausing

    resumed = await agent.resume(result.state, tool_outputs={"c2": "sunny"}, approvals={"c3": True})
    assert resumed.status == "completed" and resumed.output == "all done"
    outs = [i for i in resumed.items if isinstance(i, FunctionCallOutput)]
    assert {o.call_id: o.output for o in outs} == {
        "c1": "saw a",
        "c2": "sunny",
        "c3": "deployed prod",
    }
    assert resumed.turns == 2 and resumed.usage.total_tokens == 30
    assert [a.decision for a in resumed.audit] == ["allowed", "approved"]
    # the model saw every output before its second turn
    assert sum(isinstance(i, FunctionCallOutput) for i in model.requests[1].items) == 3


async def test_client_only_pause_reason() -> None:
    agent = Agent(ScriptedModel([tool_call("get_weather", city="Rome")]), tools=[weather])
    result = await agent.run("go")
    assert result.status == "requires_action" and result.reason == "client_tool_call"


async def test_a_refused_approval_is_fed_back_as_an_error() -> None:
    model = ScriptedModel([tool_call("deploy", env="prod", call_id="d1"), text("ok, not deployed")])
    agent = Agent(model, tools=[deploy])
    paused = await agent.run("go")
    result = await agent.resume(paused.state, approvals={"d1": False})
    out = next(i for i in result.items if isinstance(i, FunctionCallOutput))
    assert out.is_error and "denied by the user" in out.output
    assert result.output == "ok, not deployed"


async def test_resume_checks_what_it_is_given() -> None:
    agent = Agent(ScriptedModel(_script()), tools=[look, weather, deploy])  # type: ignore[arg-type]
    paused = await agent.run("go")
    with pytest.raises(StateError, match="missing tool_outputs for c2"):
        await agent.resume(paused.state, approvals={"c3": True})
    with pytest.raises(StateError, match="not awaiting approval"):
        await agent.resume(
            paused.state, tool_outputs={"c2": "x"}, approvals={"c3": True, "zz": True}
        )
    done = await Agent(ScriptedModel([text("hi")])).run("x")
    with pytest.raises(StateError, match="nothing to resume"):
        await agent.resume(done.state)


def test_state_json_round_trip_and_bad_input() -> None:
    state = RunState(run_id="run_1", items=[])
    assert RunState.from_json(state.to_json()).to_dict() == state.to_dict()
    with pytest.raises(StateError, match="not valid JSON"):
        RunState.from_json("{nope")
    with pytest.raises(StateError, match="version"):
        RunState.from_json(json.dumps({"version": 99}))
    with pytest.raises(StateError, match="invalid"):
        RunState.from_json(json.dumps({"version": 1, "run_id": "r", "items": [{"type": "?"}]}))


_CHILD = textwrap.dedent(
    """
    import asyncio, json, sys
    from agentloop import Agent, RunState, Tool, tool
    from agentloop.testing import ScriptedModel, text

    weather = Tool.external("get_weather", "Weather.", {"type": "object", "properties": {}})

    @tool(read_only=True)
    def look(q: str) -> str:
        return f"saw {q}"

    @tool(risk="high")
    def deploy(env: str) -> str:
        return f"deployed {env}"

    state = RunState.from_json(sys.stdin.read())
    agent = Agent(ScriptedModel([text("all done")]), tools=[look, weather, deploy])
    result = asyncio.run(agent.resume(state, tool_outputs={"c2": "sunny"}, approvals={"c3": True}))
    print(json.dumps({"status": result.status, "output": result.output,
                      "state": result.state.to_dict()}))
    """
)


async def test_resume_in_a_new_process_matches_an_uninterrupted_run() -> None:
    agent = Agent(ScriptedModel(_script()), tools=[look, weather, deploy])  # type: ignore[arg-type]
    paused = await agent.run("go")
    child = subprocess.run(
        [sys.executable, "-c", _CHILD],
        input=paused.state.to_json(),
        capture_output=True,
        text=True,
        check=True,
    )
    remote = json.loads(child.stdout)

    async def approve(call: object) -> bool:
        return True

    # the uninterrupted equivalent: approvals answered inline, only the client call pauses
    outputs = {"c2": "sunny"}

    local_agent = Agent(
        ScriptedModel(_script()),  # type: ignore[arg-type]
        tools=[look, weather, deploy],
        policy=Policy(approver=approve),
    )
    first = await local_agent.run("go")
    assert first.status == "requires_action"  # only the client call is pending now
    local = await local_agent.resume(first.state, tool_outputs=outputs)

    assert remote["status"] == local.status == "completed"
    assert remote["output"] == local.output == "all done"
    remote_items = remote["state"]["items"]

    def shape(items: list[dict[str, object]]) -> list[tuple[object, ...]]:
        return sorted(
            (i["type"], i.get("call_id"), i.get("output")) for i in items if "call_id" in i
        )

    local_items = local.state.to_dict()["items"]
    assert shape(remote_items) == shape(local_items)
    assert remote["state"]["turns"] == local.turns == 2
    assert remote["state"]["tool_calls"] == local.tool_calls == 3
    assert isinstance(local.items[1], FunctionCall)
