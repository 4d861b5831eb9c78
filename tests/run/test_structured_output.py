"""Structured output: the output tool, validation attempts, reminders and reflection mode."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pydantic
import pytest
from typing_extensions import TypedDict

from agentloop import Agent, ConfigError, FunctionCallOutput, Limits, OutputRejected, tool
from agentloop.models.strict_schema import strict_schema
from agentloop.run.output import build_output_spec
from agentloop.testing import ScriptedModel, text, tool_call

pytestmark = pytest.mark.anyio


class Invoice(pydantic.BaseModel):
    customer: str
    total: float
    lines: list[str]
    note: str | None = None


def no_negative(inv: Invoice) -> Invoice:
    if inv.total < 0:
        raise OutputRejected("total must not be negative")
    return inv


@tool(read_only=True)
def lookup(customer: str) -> str:
    return f"{customer}: 3 lines"


def _out(**kw: Any) -> Any:
    return tool_call("final_output", **kw)


GOOD = {"customer": "ACME", "total": 12.5, "lines": ["a", "b"]}


async def test_output_tool_ends_the_run_with_a_typed_value() -> None:
    model = ScriptedModel([[tool_call("lookup", customer="ACME"), _out(**GOOD)]])
    agent = Agent(model, tools=[lookup], output_type=Invoice, output_validators=[no_negative])
    result = await agent.run("bill ACME")
    assert result.status == "completed" and result.reason == "final_answer"
    assert result.output == Invoice(**GOOD)
    assert isinstance(result.output, Invoice)
    assert result.attempts == 1
    outs = {o.call_id: o for o in result.items if isinstance(o, FunctionCallOutput)}
    # the other call of the same response ran first and got its output
    assert any(o.output == "ACME: 3 lines" for o in outs.values())
    assert [t.name for t in model.requests[0].tools] == ["lookup", "final_output"]


async def test_a_rejection_starts_a_new_attempt_with_the_errors_fed_back() -> None:
    bad = {**GOOD, "total": -1}
    model = ScriptedModel([_out(**bad), _out(customer="ACME", lines=[]), _out(**GOOD)])
    agent = Agent(model, output_type=Invoice, output_validators=[no_negative])
    result = await agent.run("bill")
    assert result.status == "completed" and result.attempts == 3
    feedback = [o.output for o in result.items if isinstance(o, FunctionCallOutput)]
    assert "total must not be negative" in feedback[0]
    assert "total: Field required" in feedback[1]  # field path named
    assert feedback[2] == "Output accepted."
    assert result.turns == 3 and result.usage.total_tokens == 45


async def test_attempts_exhausted_is_incomplete_with_the_last_errors() -> None:
    bad = {**GOOD, "total": -1}
    model = ScriptedModel([_out(**bad)] * 3)
    agent = Agent(model, output_type=Invoice, output_validators=[no_negative],
                  limits=Limits(max_attempts=2))  # fmt: skip
    result = await agent.run("bill")
    assert result.status == "incomplete" and result.reason == "output_validation"
    assert result.output is None
    assert result.output_errors == ["- rejected: total must not be negative"]
    assert result.attempts == 2 and result.turns == 2
    assert result.usage.total_tokens == 30


async def test_async_validators_run_in_order_and_may_replace_the_value() -> None:
    order: list[str] = []

    async def first(inv: Invoice) -> Invoice:
        order.append("first")
        return inv.model_copy(update={"note": "checked"})

    def second(inv: Invoice) -> None:
        order.append(f"second:{inv.note}")

    model = ScriptedModel([_out(**GOOD)])
    result = await Agent(model, output_type=Invoice, output_validators=[first, second]).run("x")
    assert order == ["first", "second:checked"]
    assert result.output.note == "checked"


async def test_turns_per_attempt() -> None:
    model = ScriptedModel([tool_call("lookup", customer="x")] * 5)
    agent = Agent(model, tools=[lookup], output_type=Invoice,
                  limits=Limits(max_turns_per_attempt=2))  # fmt: skip
    result = await agent.run("bill")
    assert result.status == "incomplete" and result.reason == "max_turns"
    assert result.turns == 2


async def test_text_answer_gets_one_reminder_then_output_tool_not_used() -> None:
    model = ScriptedModel([text("here it is"), text("really")])
    result = await Agent(model, output_type=Invoice).run("bill")
    assert result.status == "incomplete" and result.reason == "output_tool_not_used"
    reminder = model.requests[1].items[-1]
    assert "final_output" in reminder.text  # type: ignore[union-attr]


async def test_text_then_output_after_the_reminder_completes() -> None:
    model = ScriptedModel([text("here it is"), _out(**GOOD)])
    result = await Agent(model, output_type=Invoice).run("bill")
    assert result.status == "completed" and result.output.customer == "ACME"


async def test_only_the_first_output_call_counts() -> None:
    model = ScriptedModel([[_out(**GOOD), _out(**{**GOOD, "customer": "Other"})]])
    result = await Agent(model, output_type=Invoice).run("bill")
    assert result.output.customer == "ACME"
    assert "Ignored" in [o for o in result.items if isinstance(o, FunctionCallOutput)][1].output


# --- reflection mode ---------------------------------------------------------------------


def _reflect(inv: Invoice) -> str:
    return f"{len(inv.lines)} lines; double-check the total"


async def test_reflection_returns_feedback_then_submit_validates_the_last_output() -> None:
    model = ScriptedModel(
        [
            _out(**{**GOOD, "lines": ["a"]}),
            _out(**GOOD),
            tool_call("submit"),
        ]
    )
    agent = Agent(model, output_type=Invoice, reflect=_reflect)
    result = await agent.run("bill")
    assert result.status == "completed" and result.output == Invoice(**GOOD)
    outs = [o.output for o in result.items if isinstance(o, FunctionCallOutput)]
    assert outs == ["1 lines; double-check the total", "2 lines; double-check the total",
                    "Output accepted."]  # fmt: skip
    assert [t.name for t in model.requests[0].tools] == ["final_output", "submit"]
    assert model.requests[0].tools[1].parameters["properties"] == {}


async def test_submit_before_any_output_is_fed_back() -> None:
    model = ScriptedModel([tool_call("submit"), _out(**GOOD), tool_call("submit")])
    result = await Agent(model, output_type=Invoice, reflect=_reflect).run("bill")
    assert result.status == "completed"
    first = next(o for o in result.items if isinstance(o, FunctionCallOutput))
    assert first.is_error and "submit called before any output" in first.output


async def test_turns_running_out_after_an_output_is_max_turns() -> None:
    model = ScriptedModel([_out(**GOOD), _out(**GOOD)])
    agent = Agent(model, output_type=Invoice, reflect=_reflect, limits=Limits(max_turns=2))
    result = await agent.run("bill")
    assert result.status == "incomplete" and result.reason == "max_turns"


async def test_a_rejected_submit_starts_a_new_attempt() -> None:
    model = ScriptedModel(
        [_out(**{**GOOD, "total": -5}), tool_call("submit"), _out(**GOOD), tool_call("submit")]
    )
    agent = Agent(model, output_type=Invoice, reflect=_reflect, output_validators=[no_negative])
    result = await agent.run("bill")
    assert result.status == "completed" and result.attempts == 2


# --- output types and schemas ---------------------------------------------------------------


@dataclass
class Point:
    x: int
    y: int = 0


class Movie(TypedDict):
    title: str
    year: int


async def test_dataclass_typeddict_json_schema_and_scalar_types() -> None:
    cases: list[tuple[Any, dict[str, Any], Any]] = [
        (Point, {"x": 1, "y": None}, Point(x=1, y=0)),  # strict null for an optional → default
        (Movie, {"title": "Heat", "year": 1995}, {"title": "Heat", "year": 1995}),
        (list[int], {"result": [1, 2]}, [1, 2]),
        (
            {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
            {"a": 3},
            {"a": 3},
        ),
    ]
    for output_type, args, expected in cases:
        model = ScriptedModel([tool_call("final_output", args)])
        result = await Agent(model, output_type=output_type).run("x")
        assert result.status == "completed", (output_type, result.output_errors)
        assert result.output == expected


async def test_json_schema_errors_name_the_field() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    model = ScriptedModel([tool_call("final_output", a="x"), tool_call("final_output", a=1)])
    result = await Agent(model, output_type=schema).run("x")
    first = next(o for o in result.items if isinstance(o, FunctionCallOutput))
    assert "- a: 'x' is not of type 'integer'" in first.output


@pytest.mark.parametrize("output_type", [Invoice, Point, Movie, list[int]])
def test_output_tool_schema_is_strict_compatible(output_type: Any) -> None:
    spec = build_output_spec(output_type)
    params = spec.tool.parameters
    assert spec.tool.strict
    assert params["type"] == "object" and params["additionalProperties"] is False
    assert set(params["required"]) == set(params["properties"])
    assert strict_schema(params) == params  # already strict: unchanged
    assert "'title': '" not in str(params)  # pydantic's generated titles are stripped


def test_bad_configuration() -> None:
    with pytest.raises(ConfigError, match="JSON Schema"):
        Agent(ScriptedModel([]), output_type={"type": 12})
    with pytest.raises(ConfigError, match="need an output_type"):
        Agent(ScriptedModel([]), reflect=_reflect)

    @tool
    def final_output(x: int) -> int:
        return x

    with pytest.raises(ConfigError, match="final_output"):
        Agent(ScriptedModel([]), tools=[final_output], output_type=Invoice)


async def test_cancellation_during_an_attempt_reports_attempt_and_turn() -> None:
    started = asyncio.Event()

    @tool(read_only=True)
    async def block() -> str:
        started.set()
        await asyncio.sleep(60)
        return "never"

    model = ScriptedModel([_out(customer="A", total=-1, lines=[]), tool_call("block")])
    agent = Agent(model, tools=[block], output_type=Invoice, output_validators=[no_negative])
    stream = agent.stream("bill")

    async def cancel() -> None:
        await started.wait()
        stream.cancel()

    task = asyncio.create_task(cancel())
    result = await stream.drain()
    await task
    assert result.status == "cancelled"
    assert result.attempts == 2 and result.turns == 2


async def test_usage_adds_up_over_attempts_with_ordinary_tools() -> None:
    model = ScriptedModel(
        [tool_call("lookup", customer="a"), _out(customer="a", total=-1, lines=[]),
         tool_call("lookup", customer="a"), _out(**GOOD)]
    )  # fmt: skip
    agent = Agent(model, tools=[lookup], output_type=Invoice, output_validators=[no_negative])
    result = await agent.run("x")
    assert result.status == "completed" and result.turns == 4 and result.attempts == 2
    assert result.usage.input_tokens == 40 and result.usage.output_tokens == 20
    assert result.tool_calls == 2
