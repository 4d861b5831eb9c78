"""Behaviours 7, 12 and 13: completion confirmation, tool_choice, and ToolContext."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentloop import Agent, ConfigError, FunctionCall, Message, Policy, ToolContext, tool
from agentloop.run.loop import CONFIRM_COMPLETION_PROMPT
from agentloop.testing import ScriptedModel, text, tool_call

pytestmark = pytest.mark.anyio


@tool(read_only=True)
def look(q: str) -> str:
    return f"saw {q}"


async def test_confirm_completion_asks_once_then_accepts_a_second_text_answer() -> None:
    model = ScriptedModel([text("done?"), text("yes, done")])
    result = await Agent(model, confirm_completion=True).run("task")
    assert result.status == "completed" and result.output == "yes, done"
    assert result.turns == 2
    prompt = model.requests[1].items[-1]
    assert isinstance(prompt, Message) and prompt.role == "user"
    assert prompt.text == CONFIRM_COMPLETION_PROMPT
    assert "every part of the task" in prompt.text


async def test_confirm_completion_continues_when_the_model_calls_tools() -> None:
    model = ScriptedModel(
        [text("done?"), tool_call("look", q="tests"), text("now done"), text("confirmed")]
    )
    result = await Agent(model, tools=[look], confirm_completion=True).run("task")
    assert result.status == "completed" and result.output == "confirmed"
    # asked again after new tool work
    prompts = [
        i for i in result.items if isinstance(i, Message) and i.text == CONFIRM_COMPLETION_PROMPT
    ]
    assert len(prompts) == 2


@pytest.mark.parametrize("choice", ["auto", "required", "none", "look"])
async def test_tool_choice_is_passed_to_the_model(choice: str) -> None:
    model = ScriptedModel([text("ok")])
    await Agent(model, tools=[look], tool_choice=choice).run("go")
    assert model.requests[0].tool_choice == choice


async def test_tool_choice_none_returns_calls_unexecuted() -> None:
    calls = []

    @tool(read_only=True)
    def spy(q: str) -> str:
        calls.append(q)
        return q

    model = ScriptedModel([tool_call("spy", q="x")])
    result = await Agent(model, tools=[spy], tool_choice="none").run("go")
    assert result.status == "completed" and result.reason == "tool_choice_none"
    assert calls == []
    assert isinstance(result.items[-1], FunctionCall)


def test_unknown_tool_choice_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="tool_choice"):
        Agent(ScriptedModel([]), tools=[look], tool_choice="missing")


async def test_tool_context_gives_workspace_ids_policy_and_deps(tmp_path: Path) -> None:
    seen: dict[str, object] = {}

    @tool(read_only=True)
    def probe(ctx: ToolContext, note: str) -> str:
        seen.update(
            workspace=ctx.workspace,
            run_id=ctx.run_id,
            call_id=ctx.call_id,
            tool=ctx.tool_name,
            allowed=ctx.policy.allowed_paths,
            deps=ctx.deps,
            resolved=ctx.resolve("a/b.txt"),
        )
        return note

    policy = Policy(allowed_paths=["src/"])
    model = ScriptedModel([tool_call("probe", note="n", call_id="k1"), text("ok")])
    agent = Agent(model, tools=[probe], workspace=tmp_path, policy=policy)
    result = await agent.run("go", deps={"db": "conn"})
    assert seen["workspace"] == tmp_path.resolve()
    assert seen["run_id"] == result.run_id and str(seen["run_id"]).startswith("run_")
    assert seen["call_id"] == "k1" and seen["tool"] == "probe"
    assert seen["allowed"] == ["src/"]
    assert seen["deps"] == {"db": "conn"}
    assert seen["resolved"] == tmp_path.resolve() / "a/b.txt"
