"""Behaviour 5: turn, error, call, token, duration and change budgets."""

from __future__ import annotations

import asyncio

import pytest

from agentloop import Agent, ConfigError, FunctionCallOutput, Limits, Policy, ToolContext, tool
from agentloop.testing import ScriptedModel, text, tool_call

pytestmark = pytest.mark.anyio
AUTO = Policy(auto_approve="high")


@tool(read_only=True, cacheable=False)
async def ping() -> str:
    """Ping."""
    return "pong"


@tool
def fail() -> str:
    raise RuntimeError("nope")


async def test_past_max_turns_is_incomplete_with_all_items_kept() -> None:
    model = ScriptedModel([tool_call("ping")] * 5)
    result = await Agent(model, tools=[ping], limits=Limits(max_turns=3)).run("go")
    assert result.status == "incomplete" and result.reason == "max_turns"
    assert result.turns == 3 and len(model.requests) == 3
    assert len(result.items) == 1 + 3 * 2


async def test_a_final_answer_on_the_last_allowed_turn_completes() -> None:
    model = ScriptedModel([tool_call("ping"), text("done")])
    result = await Agent(model, tools=[ping], limits=Limits(max_turns=2)).run("go")
    assert result.status == "completed"


async def test_consecutive_failing_turns_end_with_tool_errors() -> None:
    model = ScriptedModel([tool_call("fail")] * 10)
    limits = Limits(max_consecutive_errors=3)
    result = await Agent(model, tools=[fail], limits=limits, policy=AUTO).run("go")
    assert result.status == "incomplete" and result.reason == "tool_errors"
    assert result.turns == 3


async def test_a_successful_call_resets_the_error_count() -> None:
    script = [tool_call("fail"), tool_call("fail"), [tool_call("fail"), tool_call("ping")]]
    script += [tool_call("fail"), tool_call("fail"), text("done")]
    model = ScriptedModel(script)
    result = await Agent(
        model, tools=[fail, ping], limits=Limits(max_consecutive_errors=3), policy=AUTO
    ).run("go")
    assert result.status == "completed"


async def test_max_tool_calls_refuses_the_extra_calls_and_stops() -> None:
    model = ScriptedModel([[tool_call("ping"), tool_call("ping")], [tool_call("ping")] * 2])
    result = await Agent(model, tools=[ping], limits=Limits(max_tool_calls=3)).run("go")
    assert result.status == "incomplete" and result.reason == "budget_exceeded"
    assert result.budget == "max_tool_calls"
    assert result.tool_calls == 3
    outputs = [i for i in result.items if isinstance(i, FunctionCallOutput)]
    assert len(outputs) == 4  # every call has an output: the history stays valid
    assert outputs[-1].is_error and "max_tool_calls" in outputs[-1].output


async def test_max_total_tokens() -> None:
    model = ScriptedModel([tool_call("ping")] * 5)
    result = await Agent(model, tools=[ping], limits=Limits(max_total_tokens=30)).run("go")
    assert result.status == "incomplete" and result.reason == "budget_exceeded"
    assert result.budget == "max_total_tokens"
    assert result.usage.total_tokens == 30 and result.turns == 2


async def test_max_duration_stops_a_slow_tool_and_the_run() -> None:
    @tool
    async def slow() -> str:
        await asyncio.sleep(30)
        return "never"

    model = ScriptedModel([tool_call("slow"), text("unreachable")])
    result = await Agent(model, tools=[slow], limits=Limits(max_duration_s=0.1), policy=AUTO).run(
        "go"
    )
    assert result.status == "incomplete" and result.reason == "budget_exceeded"
    assert result.budget == "max_duration_s"
    out = next(i for i in result.items if isinstance(i, FunctionCallOutput))
    assert out.is_error and "max_duration_s" in out.output


@tool(paths=("path",))
def edit(ctx: ToolContext, path: str, lines: int = 1) -> str:
    """Edit a file (fake): reports what it changed."""
    ctx.record_change(path, lines)
    return f"edited {path}"


async def test_max_files_modified_refuses_a_call_before_it_runs() -> None:
    model = ScriptedModel(
        [
            tool_call("edit", path="a.py"),
            tool_call("edit", path="./a.py"),  # same file again: allowed
            tool_call("edit", path="b.py"),  # a second file: refused
            text("unreachable"),
        ]
    )
    agent = Agent(
        model, tools=[edit], limits=Limits(max_files_modified=1), workspace="/tmp/ws", policy=AUTO
    )
    result = await agent.run("go")
    assert result.status == "incomplete" and result.budget == "max_files_modified"
    outs = [i for i in result.items if isinstance(i, FunctionCallOutput)]
    assert [o.is_error for o in outs] == [False, False, True]
    assert "max_files_modified" in outs[-1].output
    assert result.state.files_modified == {"/tmp/ws/a.py"}
    assert result.audit[-1].decision == "refused" and result.audit[-1].outcome == "not_run"


async def test_max_lines_changed() -> None:
    model = ScriptedModel(
        [tool_call("edit", path="a.py", lines=8), tool_call("edit", path="a.py", lines=1)]
    )
    result = await Agent(model, tools=[edit], limits=Limits(max_lines_changed=5), policy=AUTO).run(
        "go"
    )
    assert result.budget == "max_lines_changed"
    assert result.state.lines_changed == 8


def test_limits_reject_nonsense() -> None:
    with pytest.raises(ConfigError, match="max_turns"):
        Limits(max_turns=0)
    with pytest.raises(ConfigError, match="max_duration_s"):
        Limits(max_duration_s=-1)
