"""Behaviour 4: every kind of call failure is fed back to the model and the loop goes on."""

from __future__ import annotations

import asyncio

import pytest

from agentloop import Agent, FunctionCallOutput, Limits, Policy, ToolError, tool
from agentloop.testing import ScriptedModel, text, tool_call

pytestmark = pytest.mark.anyio
AUTO = Policy(auto_approve="high")


@tool
def write(path: str, content: str, overwrite: bool = False) -> str:
    """Write a file (fake)."""
    return f"wrote {len(content)} to {path} overwrite={overwrite}"


async def _one_call(
    call: object, *tools: object, limits: Limits | None = None
) -> FunctionCallOutput:
    model = ScriptedModel([call, text("recovered")])  # type: ignore[list-item]
    agent = Agent(model, tools=tools or [write], limits=limits, policy=AUTO)  # type: ignore[arg-type]
    result = await agent.run("go")
    assert result.status == "completed" and result.output == "recovered"
    outputs = [i for i in result.items if isinstance(i, FunctionCallOutput)]
    assert len(outputs) == 1
    # the model saw the error on its next turn
    assert outputs[0] in model.requests[1].items
    return outputs[0]


async def test_unknown_tool() -> None:
    out = await _one_call(tool_call("delete_everything"))
    assert out.is_error
    assert "Unknown tool 'delete_everything'" in out.output and "write" in out.output


async def test_arguments_that_are_not_json() -> None:
    out = await _one_call(tool_call("write", arguments='{"path": "a.txt", "content": '))
    assert out.is_error and "not valid JSON" in out.output


async def test_single_quoted_python_dict_is_repaired_safely() -> None:
    raw = "{'path': 'a.txt', 'content': 'hi', 'overwrite': True}"
    out = await _one_call(tool_call("write", arguments=raw))
    assert not out.is_error
    assert out.output == "wrote 2 to a.txt overwrite=True"


async def test_python_code_in_arguments_is_never_evaluated() -> None:
    raw = "{'path': __import__('os').getcwd(), 'content': 'x'}"
    out = await _one_call(tool_call("write", arguments=raw))
    assert out.is_error and "not valid JSON" in out.output


async def test_schema_failure_names_the_field() -> None:
    out = await _one_call(tool_call("write", path="a.txt"))
    assert out.is_error
    assert "content" in out.output and "Field required" in out.output
    out = await _one_call(tool_call("write", path="a.txt", content="x", overwrite="maybe"))
    assert out.is_error and "overwrite" in out.output
    out = await _one_call(tool_call("write", path="a", content="x", colour="red"))
    assert out.is_error and "colour" in out.output


async def test_a_tool_that_raises() -> None:
    @tool
    def boom() -> str:
        raise RuntimeError("disk on fire")

    out = await _one_call(tool_call("boom"), boom)
    assert out.is_error and "RuntimeError: disk on fire" in out.output
    assert "Traceback" not in out.output


async def test_tool_error_message_is_sent_as_is() -> None:
    @tool
    async def picky() -> str:
        raise ToolError("Use an absolute path.")

    out = await _one_call(tool_call("picky"), picky)
    assert out.is_error and out.output == "Use an absolute path."


async def test_a_tool_past_its_timeout() -> None:
    @tool(timeout=0.05)
    async def slow() -> str:
        await asyncio.sleep(30)
        return "never"

    out = await _one_call(tool_call("slow"), slow)
    assert out.is_error and "timed out after 0.05 seconds" in out.output


async def test_default_tool_timeout_from_limits() -> None:
    @tool
    async def slow() -> str:
        await asyncio.sleep(30)
        return "never"

    out = await _one_call(tool_call("slow"), slow, limits=Limits(tool_timeout=0.05))
    assert out.is_error and "timed out" in out.output


async def test_an_output_over_the_size_cap_is_truncated_with_a_marker() -> None:
    @tool
    def big() -> str:
        return "x" * 1000

    out = await _one_call(tool_call("big"), big, limits=Limits(max_output_chars=100))
    assert out.is_error
    assert out.output.startswith("x" * 100)
    assert "[output truncated: 900 of 1000 characters removed]" in out.output


async def test_non_string_results_are_sent_as_json() -> None:
    @tool
    def info() -> dict[str, object]:
        return {"n": 1, "ok": True, "tags": ("a",)}

    out = await _one_call(tool_call("info"), info)
    assert out.output == '{"n": 1, "ok": true, "tags": ["a"]}'


async def test_errors_are_recorded_in_the_audit() -> None:
    model = ScriptedModel(
        [[tool_call("nope"), tool_call("write", path="a", content="b")], text("k")]
    )
    result = await Agent(model, tools=[write], policy=AUTO).run("go")
    assert [(a.tool, a.decision, a.outcome) for a in result.audit] == [
        ("nope", "invalid", "not_run"),
        ("write", "allowed", "success"),
    ]
    assert result.tool_calls == 1
