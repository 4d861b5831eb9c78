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
from agentloop.models.base import ModelResponse, ResponseDone
from agentloop.run import attempts
from agentloop.run.active import ActiveRun, RunEnd
from agentloop.run.batch import Batch, finished, started
from agentloop.run.deadlines import loop_deadlines
from agentloop.run.events import (
    Event,
    ItemAdded,
    ModelResponded,
    RunFinished,
    RunStarted,
    TurnCompleted,
    TurnStarted,
)
from agentloop.run.execute import CallPlan, ask_approver, execute, plan_call
from agentloop.run.hooks import Hooks, dispatch
from agentloop.run.result import PendingCall, RunResult, RunStatus

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


def _start_turn(run: ActiveRun) -> TurnStarted:
    """Count a new turn, or raise :class:`RunEnd` when a budget says none may start."""
    state, limits = run.state, run.limits
    if run.budget:
        raise RunEnd("incomplete", "budget_exceeded")
    if state.turns >= limits.max_turns:
        raise RunEnd("incomplete", "max_turns")
    if limits.max_total_tokens is not None and state.usage.total_tokens >= limits.max_total_tokens:
        run.budget = "max_total_tokens"
        raise RunEnd("incomplete", "budget_exceeded")
    if limits.max_duration_s is not None and run.elapsed() >= limits.max_duration_s:
        run.budget = "max_duration_s"
        raise RunEnd("incomplete", "budget_exceeded")
    if run.agent.output is not None:
        attempts.begin_turn(run)
    state.turns += 1
    return TurnStarted(turn=state.turns)


def _take_response(
    run: ActiveRun, response: ModelResponse
) -> tuple[list[FunctionCall], list[Event]]:
    """Add the model's items (with ids) to the conversation: (the calls it asks for, events)."""
    state = run.state
    state.usage = state.usage + response.usage
    items = state.items
    calls: list[FunctionCall] = []
    events: list[Event] = []
    for raw in response.items:
        item = with_id(raw)
        items.append(item)
        if isinstance(item, FunctionCall):
            calls.append(item)
        events.append(ItemAdded(item=item))
    events.append(ModelResponded(response=response))
    return calls, events


def _answered(run: ActiveRun, done: TurnCompleted) -> tuple[list[Event], RunEnd | None]:
    """After a turn without tool calls: the events to send, and how the run ends (if it does)."""
    state, agent, spec = run.state, run.agent, run.agent.output
    if spec is not None:
        return [*attempts.text_answer(run, spec), done], None
    if agent.confirm_completion and not state.confirmation_asked:
        state.confirmation_asked = True
        prompt = with_id(user(CONFIRM_COMPLETION_PROMPT))
        state.items.append(prompt)
        return [ItemAdded(item=prompt), done], None
    return [done], RunEnd("completed", "final_answer")


async def _plan(run: ActiveRun, calls: list[FunctionCall]) -> list[CallPlan]:
    """Plan the turn's calls (asking the approver where one decides); record the pauses."""
    state = run.state
    limit = run.limits.max_tool_calls
    left = None if limit is None else limit - state.tool_calls
    approver = run.policy.approver
    plans = []
    pending: list[PendingCall] = []
    for call in calls:
        plan = plan_call(run, call, executable_budget=left)
        if plan.pending is not None and plan.pending.kind == "approval" and approver is not None:
            run.busy = True
            try:
                await ask_approver(run, plan)
            finally:
                run.busy = False
        waiting = plan.pending
        if waiting is not None:
            pending.append(waiting)
            if waiting.kind == "client":
                state.tool_calls += 1
        if (
            left is not None
            and plan.output is None
            and (waiting is None or waiting.kind == "client")
        ):
            left -= 1
        plans.append(plan)
    state.pending = pending
    return plans


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


async def _resume_batch(run: ActiveRun, resume: Resume) -> Batch:
    """The pending calls with the client's outputs and approvals applied."""
    state = run.state
    pending, state.pending = state.pending, []
    plans: list[CallPlan] = []
    client_outputs: dict[int, FunctionCallOutput] = {}
    for index, p in enumerate(pending):
        call = _find_call(run, p.call_id)
        if p.kind == "client":
            plans.append(CallPlan(call=call, decision="pending", pending=p))
            text = resume.tool_outputs[p.call_id]
            client_outputs[index] = FunctionCallOutput(
                call_id=p.call_id, output=text, id=new_id("fco")
            )
        elif resume.approvals[p.call_id]:
            plans.append(plan_call(run, call, executable_budget=None, approved=True))
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
    for index, output in client_outputs.items():
        batch.add_output(index, output)
    return batch


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


async def _events(run: ActiveRun, resume: Resume | None) -> AsyncIterator[Event]:
    """The loop. Yields events; the last one is ``RunFinished`` with the result.

    One generator for the whole run, with the turn written out inline rather than delegated to
    nested generators: every event of every turn would otherwise pass through each layer, and
    each layer costs a generator per turn. Only rarer paths (several calls at once, structured
    output calls) go through a generator of their own."""
    state, agent = run.state, run.agent
    spec = agent.output
    run.task = asyncio.current_task()
    run.deadlines = loop_deadlines()
    yield RunStarted(run_id=state.run_id, resumed=resume is not None)
    status: RunStatus = "completed"
    reason = "final_answer"
    try:
        if resume is None and spec is not None:
            yield attempts.start_attempt(run, 1)
        while True:
            batch: Batch | None = None
            special: list[FunctionCall] = []
            done: TurnCompleted | None = None
            if resume is not None:
                batch = await _resume_batch(run, resume)
                resume = None
            else:
                if run.cancel_requested:
                    raise asyncio.CancelledError
                yield _start_turn(run)
                # The model call, its stream passed through as it arrives.
                response: ModelResponse | None = None
                stream = agent.model.stream(run.request)
                ended = False
                try:
                    run.busy = True
                    async for part in stream:
                        run.busy = False
                        if isinstance(part, ResponseDone):
                            response = part.response
                        else:
                            yield part
                        run.busy = True
                    ended = True
                except Exception as exc:
                    raise _ModelFailed(exc) from exc
                finally:
                    run.busy = False
                    if not ended:
                        close = getattr(stream, "aclose", None)
                        if close is not None:
                            await close()
                if response is None:
                    raise _ModelFailed(ModelError("the model's stream ended without a response"))
                calls, events = _take_response(run, response)
                for event in events:
                    yield event
                done = TurnCompleted(turn=state.turns, usage=response.usage)
                if not calls:
                    events, end = _answered(run, done)
                    for event in events:
                        yield event
                    if end is not None:
                        raise end
                    continue
                if agent.tool_choice == "none":
                    yield done
                    raise RunEnd("completed", "tool_choice_none")
                state.confirmation_asked = False
                ordinary = calls
                if spec is not None:
                    ordinary, special = attempts.split_calls(spec, calls)
                if ordinary:
                    batch = Batch(run, await _plan(run, ordinary))
            if batch is not None:
                # The calls: a lone one inline, several as tasks; outputs in model order.
                try:
                    for event in batch.refusals():
                        yield event
                    runnable = batch.runnable
                    if len(runnable) == 1:
                        index = runnable[0]
                        plan = batch.plans[index]
                        yield started(plan)
                        run.busy = True
                        try:
                            result = await execute(run, plan)
                        finally:
                            run.busy = False
                        batch.results[index] = result
                        yield finished(plan, result)
                    elif runnable:
                        async for event in batch.parallel():
                            yield event
                finally:
                    batch.flush()
                for event in batch.added():
                    yield event
                batch.count_error_turn()
            if special and spec is not None:
                try:
                    async for event in attempts.handle_output_calls(run, spec, special):
                        yield event
                except RunEnd:
                    if done is not None:
                        yield done
                    raise
            if done is not None:
                yield done
            _end_after_calls(run)
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
