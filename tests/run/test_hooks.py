"""Run hooks fire at the right moments and never break the run."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

from agentloop import Agent, Hooks, OutputRejected, RunResult, RunState, tool
from agentloop.models.base import ModelResponse
from agentloop.testing import ScriptedModel, text, tool_call

pytestmark = pytest.mark.anyio


class Recorder(Hooks):
    def __init__(self) -> None:
        self.log: list[tuple[Any, ...]] = []

    async def on_run_start(self, state: RunState) -> None:
        self.log.append(("run_start", len(state.items)))

    async def on_turn_start(self, state: RunState, turn: int) -> None:
        self.log.append(("turn_start", turn))

    async def on_model_response(self, state: RunState, response: ModelResponse) -> None:
        self.log.append(("model_response", len(response.tool_calls)))

    async def on_tool_call(
        self, state: RunState, tool_name: str, arguments: dict[str, Any]
    ) -> None:
        self.log.append(("tool_call", tool_name, arguments))

    async def on_tool_result(
        self, state: RunState, tool_name: str, result: str, error: str | None
    ) -> None:
        self.log.append(("tool_result", tool_name, result, error))

    async def on_attempt_start(self, state: RunState, attempt: int) -> None:
        self.log.append(("attempt_start", attempt))

    async def on_validation_failure(self, state: RunState, errors: list[str]) -> None:
        self.log.append(("validation_failure", errors))

    async def on_run_end(self, state: RunState, result: RunResult) -> None:
        self.log.append(("run_end", result.status))


@tool(read_only=True)
def ok(x: int) -> int:
    return x * 2


@tool(read_only=True)
def bad() -> str:
    raise ValueError("broken")


async def test_hooks_fire_in_order_with_state_names_and_results() -> None:
    hooks = Recorder()
    model = ScriptedModel([[tool_call("ok", x=2), tool_call("bad")], text("done")])
    await Agent(model, tools=[ok, bad], hooks=hooks).run("go")
    assert hooks.log == [
        ("run_start", 1),
        ("turn_start", 1),
        ("model_response", 2),
        ("tool_call", "ok", {"x": 2}),
        ("tool_call", "bad", {}),
        ("tool_result", "ok", "4", None),
        ("tool_result", "bad", "Tool 'bad' failed: ValueError: broken",
         "Tool 'bad' failed: ValueError: broken"),
        ("turn_start", 2),
        ("model_response", 0),
        ("run_end", "completed"),
    ]  # fmt: skip


class Answer(pydantic.BaseModel):
    value: int


def positive(a: Answer) -> Answer:
    if a.value <= 0:
        raise OutputRejected("value must be positive")
    return a


async def test_attempt_and_validation_hooks() -> None:
    hooks = Recorder()
    model = ScriptedModel([tool_call("final_output", value=0), tool_call("final_output", value=3)])
    agent = Agent(model, output_type=Answer, output_validators=[positive], hooks=hooks)
    result = await agent.run("x")
    assert result.output == Answer(value=3)
    events = [e for e in hooks.log if e[0] in ("attempt_start", "validation_failure")]
    assert events == [
        ("attempt_start", 1),
        ("validation_failure", ["- rejected: value must be positive"]),
        ("attempt_start", 2),
    ]


async def test_a_hook_that_raises_never_breaks_the_run() -> None:
    class Broken(Hooks):
        async def on_turn_start(self, state: RunState, turn: int) -> None:
            raise RuntimeError(f"hook bug {turn}")

        async def on_run_end(self, state: RunState, result: RunResult) -> None:
            raise KeyError("end")

    model = ScriptedModel([tool_call("ok", x=1), text("done")])
    result = await Agent(model, tools=[ok], hooks=Broken()).run("go")
    assert result.status == "completed" and result.output == "done"
    assert [str(e) for e in result.hook_errors] == ["hook bug 1", "hook bug 2", "'end'"]
