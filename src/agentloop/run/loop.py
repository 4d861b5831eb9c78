"""The turn loop: call the model, run the calls it asks for, feed the outputs back, repeat.

:func:`run_events` is an async generator of events ending with ``run_finished``. It never raises
for a model failure, a tool failure, a limit or a cancellation: each of those ends the run with
a status and a reason, keeping every item produced so far.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass

from agentloop.errors import ModelError
from agentloop.items import (
    FunctionCall,
    FunctionCallOutput,
    Message,
    last_assistant_text,
    new_id,
    user,
    with_id,
)
from agentloop.models.base import ModelRequest, ModelResponse, ResponseDone
from agentloop.run import attempts
from agentloop.run.active import ActiveRun, RunEnd
from agentloop.run.batch import Batch
from agentloop.run.events import (
    Event,
    ItemAdded,
    ModelResponded,
    RunFinished,
    RunStarted,
    TurnCompleted,
    TurnStarted,
)
from agentloop.run.execute import CallPlan, plan_call
from agentloop.run.hooks import Hooks, dispatch
from agentloop.run.result import RunResult, RunStatus

CONFIRM_COMPLETION_PROMPT = (
    "Before you finish: has every part of the task been done and checked? "
    "If anything is left or unverified, continue with the tools. "
    "Otherwise reply with your final answer."
)
CANCELLED_OUTPUT = "Tool call was cancelled before it finished."


@dataclass(frozen=True, kw_only=True, slots=True)
class Resume:
    """What the client supplies to continue a paused run."""

    tool_outputs: Mapping[str, str]
    approvals: Mapping[str, bool]


class _ModelFailed(Exception):
    def __init__(self, error: BaseException) -> None:
        self.error = error


def _check_budgets(run: ActiveRun) -> None:
    """Raise :class:`RunEnd` when a budget says no further turn may start."""
    state, limits = run.state, run.limits
    if run.budget:
        raise RunEnd("incomplete", "budget_exceeded")
    if state.turns >= limits.max_turns:
        raise RunEnd("incomplete", "max_turns")
    if limits.max_total_tokens is not None and state.usage.total_tokens >= limits.max_total_tokens:
        run.budget = "max_total_tokens"
        raise RunEnd("incomplete", "budget_exceeded")
    remaining = run.remaining()
    if remaining is not None and remaining <= 0:
        run.budget = "max_duration_s"
        raise RunEnd("incomplete", "budget_exceeded")


def build_request(run: ActiveRun) -> ModelRequest:
    agent = run.agent
    return ModelRequest(
        items=run.state.items,
        instructions=agent.instructions,
        tools=agent.tool_schemas,
        tool_choice=agent.tool_choice,
        parallel_tool_calls=agent.parallel_tool_calls,
        settings=agent.settings,
    )


async def _model_turn(run: ActiveRun, response_box: list[ModelResponse]) -> AsyncIterator[Event]:
    """Stream one model call; the assembled response lands in ``response_box``."""
    stream = run.agent.model.stream(build_request(run))
    try:
        while True:
            run.busy = True
            try:
                part = await anext(stream)
            except StopAsyncIteration:
                break
            except (asyncio.CancelledError, GeneratorExit):
                raise
            except Exception as exc:
                raise _ModelFailed(exc) from exc
            finally:
                run.busy = False
            if isinstance(part, ResponseDone):
                response_box.append(part.response)
            else:
                yield part
    finally:
        close = getattr(stream, "aclose", None)
        if close is not None:
            await close()
    if not response_box:
        raise _ModelFailed(ModelError("the model's stream ended without a response"))


def _tool_calls_left(run: ActiveRun) -> int | None:
    limit = run.limits.max_tool_calls
    return None if limit is None else limit - run.state.tool_calls


async def _plan(run: ActiveRun, calls: list[FunctionCall]) -> list[CallPlan]:
    left = _tool_calls_left(run)
    plans = []
    for call in calls:
        run.busy = True
        try:
            plan = await plan_call(run, call, executable_budget=left)
        finally:
            run.busy = False
        if (
            left is not None
            and plan.output is None
            and (plan.pending is None or plan.pending.kind == "client")
        ):
            left -= 1
        plans.append(plan)
    return plans


def _count_error_turn(run: ActiveRun, batch: Batch) -> None:
    """After a batch has run: count a turn in which every call failed, reset on any success.

    (A plain function called after ``batch.events()`` rather than an async generator wrapping
    it: one generator layer less for every event of every turn.)"""
    state = run.state
    if batch.all_failed:
        state.consecutive_error_turns += 1
    elif batch.results or batch.extra_outputs:
        state.consecutive_error_turns = 0


def _end_after_calls(run: ActiveRun) -> None:
    """After a turn's calls: pause, or stop on a budget or repeated failures."""
    state = run.state
    if state.pending:
        kinds = {p.kind for p in state.pending}
        raise RunEnd("requires_action", "approval_required" if "approval" in kinds
                   else "client_tool_call")  # fmt: skip
    if run.budget:
        raise RunEnd("incomplete", "budget_exceeded")
    limit = run.limits.max_consecutive_errors
    if limit is not None and state.consecutive_error_turns >= limit:
        raise RunEnd("incomplete", "tool_errors")


def _find_call(run: ActiveRun, call_id: str) -> FunctionCall:
    for item in reversed(run.state.items):
        if isinstance(item, FunctionCall) and item.call_id == call_id:
            return item
    raise AssertionError(f"pending call {call_id} is not in the conversation")


async def _resume_events(run: ActiveRun, resume: Resume) -> AsyncIterator[Event]:
    """Apply client outputs and approvals to the pending calls, running the approved ones."""
    state = run.state
    pending, state.pending = state.pending, []
    plans: list[CallPlan] = []
    batch_outputs: dict[int, FunctionCallOutput] = {}
    for index, p in enumerate(pending):
        call = _find_call(run, p.call_id)
        if p.kind == "client":
            plans.append(CallPlan(call=call, decision="pending", pending=p))
            text = resume.tool_outputs[p.call_id]
            batch_outputs[index] = FunctionCallOutput(
                call_id=p.call_id, output=text, id=new_id("fco")
            )
        elif resume.approvals[p.call_id]:
            plan = await plan_call(run, call, executable_budget=None, approved=True)
            plans.append(plan)
        else:
            plan = CallPlan(call=call, arguments=p.arguments, decision="denied")
            plan.output = FunctionCallOutput(
                call_id=p.call_id,
                output=f"The call to '{p.name}' was denied by the user.",
                id=new_id("fco"),
                is_error=True,
            )
            plans.append(plan)
    batch = Batch(run, plans)
    for index, output in batch_outputs.items():
        batch.add_output(index, output)
    async for event in batch.events():
        yield event
    _count_error_turn(run, batch)
    for index in sorted(batch_outputs):
        yield ItemAdded(item=batch_outputs[index])


def _fill_cancelled_outputs(run: ActiveRun) -> None:
    """Give every call of the last turn that has no output a 'cancelled' error output."""
    items = run.state.items
    answered = set()
    calls: list[FunctionCall] = []
    for item in reversed(items[run.new_from :]):
        if isinstance(item, FunctionCallOutput):
            answered.add(item.call_id)
        elif isinstance(item, FunctionCall):
            calls.append(item)
        elif isinstance(item, Message) and item.role == "user":
            break
    for call in reversed(calls):
        if call.call_id not in answered:
            items.append(
                FunctionCallOutput(
                    call_id=call.call_id, output=CANCELLED_OUTPUT, id=new_id("fco"), is_error=True
                )
            )


def make_result(run: ActiveRun, status: RunStatus, reason: str) -> RunResult:
    state = run.state
    state.status, state.reason = status, reason
    state.elapsed_s = run.elapsed()
    if run.agent.output is not None:
        output = run.output_value if run.has_output else None
    else:
        output = last_assistant_text(state.items[run.new_from :])
    return RunResult(
        status=status,
        reason=reason,
        output=output,
        items=list(state.items),
        new_items=state.items[run.new_from :],
        usage=state.usage,
        turns=state.turns,
        tool_calls=state.tool_calls,
        state=state,
        pending=list(state.pending),
        error=run.error,
        audit=list(state.audit),
        budget=run.budget if reason == "budget_exceeded" else None,
        run_id=state.run_id,
        hook_errors=run.hook_errors,
        attempts=attempts.attempt(run),
        output_errors=list(run.output_errors),
    )


async def _turn(run: ActiveRun) -> AsyncIterator[Event]:
    """One turn: the model call, then the calls it asked for. Raises RunEnd to stop."""
    state, agent, spec = run.state, run.agent, run.agent.output
    _check_budgets(run)
    if spec is not None:
        attempts.begin_turn(run)
    state.turns += 1
    yield TurnStarted(turn=state.turns)
    box: list[ModelResponse] = []
    async for part in _model_turn(run, box):
        yield part
    response = box[0]
    state.usage = state.usage + response.usage
    calls: list[FunctionCall] = []
    for raw in response.items:
        item = with_id(raw)
        state.items.append(item)
        if isinstance(item, FunctionCall):
            calls.append(item)
        yield ItemAdded(item=item)
    yield ModelResponded(response=response)
    done = TurnCompleted(turn=state.turns, usage=response.usage)
    if not calls:
        if spec is not None:
            for event in attempts.text_answer(run, spec):
                yield event
        elif agent.confirm_completion and not state.confirmation_asked:
            state.confirmation_asked = True
            prompt = with_id(user(CONFIRM_COMPLETION_PROMPT))
            state.items.append(prompt)
            yield ItemAdded(item=prompt)
        else:
            yield done
            raise RunEnd("completed", "final_answer")
        yield done
        return
    if agent.tool_choice == "none":
        yield done
        raise RunEnd("completed", "tool_choice_none")
    state.confirmation_asked = False
    ordinary, special = attempts.split_calls(spec, calls) if spec is not None else (calls, [])
    if ordinary:
        plans = await _plan(run, ordinary)
        state.pending = [p.pending for p in plans if p.pending is not None]
        state.tool_calls += sum(1 for p in state.pending if p.kind == "client")
        batch = Batch(run, plans)
        async for event in batch.events():
            yield event
        _count_error_turn(run, batch)
    if special and spec is not None:
        try:
            async for event in attempts.handle_output_calls(run, spec, special):
                yield event
        except RunEnd:
            yield done
            raise
    yield done
    _end_after_calls(run)


async def _events(run: ActiveRun, resume: Resume | None) -> AsyncIterator[Event]:
    """The loop. Yields events; the last one is ``RunFinished`` with the result."""
    state = run.state
    run.task = asyncio.current_task()
    yield RunStarted(run_id=state.run_id, resumed=resume is not None)
    status: RunStatus = "completed"
    reason = "final_answer"
    try:
        if resume is not None:
            async for event in _resume_events(run, resume):
                yield event
            _end_after_calls(run)
        elif run.agent.output is not None:
            yield attempts.start_attempt(run, 1)
        while True:
            if run.cancel_requested:
                raise asyncio.CancelledError
            async for event in _turn(run):
                yield event
    except RunEnd as end:
        status, reason = end.status, end.reason
    except _ModelFailed as failure:
        status, reason = "failed", "model_error"
        run.error = failure.error
    except asyncio.CancelledError:
        if run.cancel_requested and run.task is not None:
            run.task.uncancel()
        status, reason = "cancelled", "cancelled"
        state.pending = []
        _fill_cancelled_outputs(run)
    yield RunFinished(result=make_result(run, status, reason))


async def _with_hooks(run: ActiveRun, hooks: Hooks, resume: Resume | None) -> AsyncIterator[Event]:
    async for event in _events(run, resume):
        await dispatch(hooks, run.state, event, run.hook_errors)
        yield event


def run_events(run: ActiveRun, resume: Resume | None = None) -> AsyncIterator[Event]:
    """The event stream of a run (with the agent's hooks, if any, called on each event)."""
    hooks = run.agent.hooks
    if hooks is None:
        return _events(run, resume)
    return _with_hooks(run, hooks, resume)
