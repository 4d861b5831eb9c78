"""The loop's side of structured output: attempts, reminders, the output and submit calls.

An *attempt* is one validation cycle: it starts at the beginning of the run and again after each
rejected output, and has its own turn budget (``Limits.max_turns_per_attempt``). Attempt
counters live in ``RunState.extra`` so that a paused run resumes mid-attempt.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from agentloop.items import FunctionCall, FunctionCallOutput, new_id, user, with_id
from agentloop.parsing import ArgumentsParseError, parse_arguments
from agentloop.run.active import ActiveRun, RunEnd
from agentloop.run.events import (
    AttemptStarted,
    Event,
    ItemAdded,
    OutputValidationFailed,
    ToolCallFinished,
    ToolCallStarted,
)
from agentloop.run.output import SUBMIT_TOOL_NAME, OutputInvalid, OutputSpec

REMINDER = "Give your final answer by calling the '{name}' tool, not as plain text."
SUBMIT_REMINDER = (
    "Refine the result with '{name}' if needed, then call 'submit' to make it final; "
    "do not answer in plain text."
)
NO_OUTPUT_YET = "submit called before any output: call '{name}' with the result first."
ACCEPTED = "Output accepted."
IGNORED = "Ignored: only the first '{name}' call of a response is used."


def attempt(run: ActiveRun) -> int:
    return int(run.state.extra.get("attempt", 0))


def start_attempt(run: ActiveRun, number: int) -> AttemptStarted:
    run.state.extra.update(attempt=number, attempt_turns=0, reminded=False)
    return AttemptStarted(attempt=number)


def begin_turn(run: ActiveRun) -> None:
    """Count a turn against the attempt's budget, or end the run when it is spent."""
    extra = run.state.extra
    turns = int(extra.get("attempt_turns", 0))
    if turns >= run.limits.max_turns_per_attempt:
        raise RunEnd("incomplete", "max_turns")
    extra["attempt_turns"] = turns + 1


def split_calls(
    spec: OutputSpec, calls: Sequence[FunctionCall]
) -> tuple[list[FunctionCall], list[FunctionCall]]:
    """(ordinary tool calls, output/submit calls)."""
    special = {spec.name, SUBMIT_TOOL_NAME} if spec.reflect is not None else {spec.name}
    ordinary = [c for c in calls if c.name not in special]
    return ordinary, [c for c in calls if c.name in special]


def text_answer(run: ActiveRun, spec: OutputSpec) -> list[Event]:
    """A plain-text answer while an output is required: remind once per attempt, then stop."""
    extra = run.state.extra
    if extra.get("reminded"):
        raise RunEnd("incomplete", "output_tool_not_used")
    extra["reminded"] = True
    template = SUBMIT_REMINDER if spec.reflect and extra.get("last_output") else REMINDER
    reminder = with_id(user(template.format(name=spec.name)))
    run.state.items.append(reminder)
    return [ItemAdded(item=reminder)]


async def _answer(
    run: ActiveRun, spec: OutputSpec, call: FunctionCall, first: bool
) -> tuple[str, bool, list[str]]:
    """(output text, is_error, validation errors that end the attempt)."""
    extra = run.state.extra
    try:
        if spec.reflect is None:
            if not first:
                return IGNORED.format(name=spec.name), True, []
            value = await spec.check(spec.parse(call.arguments))
            run.output_value = value
            return ACCEPTED, False, []
        if call.name == spec.name:
            value = spec.parse(call.arguments)
            extra["last_output"] = call.arguments
            return await spec.reflection(value), False, []
        last = extra.get("last_output")
        if not isinstance(last, str):
            return NO_OUTPUT_YET.format(name=spec.name), True, []
        run.output_value = await spec.check(spec.parse(last))
        return ACCEPTED, False, []
    except OutputInvalid as exc:
        if spec.reflect is not None and call.name == spec.name:
            return _rejection(exc.errors), True, []  # schema errors while refining: no attempt lost
        return _rejection(exc.errors), True, exc.errors
    except Exception as exc:  # a bug in a validator or reflect: the model is told, run goes on
        errors = [f"- {type(exc).__name__}: {exc}"]
        return _rejection(errors), True, errors


def _rejection(errors: list[str]) -> str:
    return "The output was rejected:\n" + "\n".join(errors) + "\nFix these and try again."


async def handle_output_calls(
    run: ActiveRun, spec: OutputSpec, calls: Sequence[FunctionCall]
) -> AsyncIterator[Event]:
    """Answer the output/submit calls of a turn; end the run on acceptance or when attempts
    run out, else start the next attempt."""
    failures: list[str] = []
    first = True
    for call in calls:
        try:
            arguments: dict[str, Any] = parse_arguments(call.arguments)
        except ArgumentsParseError:
            arguments = {}
        yield ToolCallStarted(call_id=call.call_id, name=call.name, arguments=arguments)
        text, is_error, errors = await _answer(run, spec, call, first)
        if call.name == spec.name:
            first = False
        failures.extend(errors)
        output = FunctionCallOutput(
            call_id=call.call_id, output=text, id=new_id("fco"), is_error=is_error
        )
        run.state.items.append(output)
        yield ToolCallFinished(
            call_id=call.call_id, name=call.name, output=text, is_error=is_error,
            cached=False, duration=0.0,
        )  # fmt: skip
        yield ItemAdded(item=output)
    if run.has_output:
        raise RunEnd("completed", "final_answer")
    if failures:
        number = attempt(run)
        run.output_errors = failures
        yield OutputValidationFailed(attempt=number, errors=tuple(failures))
        if number >= run.limits.max_attempts:
            raise RunEnd("incomplete", "output_validation")
        run.state.extra.pop("last_output", None)
        yield start_attempt(run, number + 1)
