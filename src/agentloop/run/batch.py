"""The calls of one turn: planned calls in, events out, outputs appended in model order.

Calls run concurrently unless they conflict (see :mod:`agentloop.run.schedule`). A lone call,
the usual case, is run by the loop itself, without a task or a queue;
several go through :meth:`Batch.parallel`, where events from concurrent calls arrive through a
queue so the stream shows each call as it starts and finishes, whatever order that is. The
outputs themselves are appended in the order the model gave the calls.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from agentloop.items import FunctionCallOutput
from agentloop.run.active import ActiveRun
from agentloop.run.events import Event, ItemAdded, ToolCallFinished, ToolCallStarted
from agentloop.run.execute import CallPlan, CallResult, execute, refused_result
from agentloop.run.schedule import dependencies


@dataclass(frozen=True, slots=True)
class _Crashed:
    error: BaseException


def started(plan: CallPlan) -> ToolCallStarted:
    call = plan.call
    return ToolCallStarted(call_id=call.call_id, name=call.name, arguments=plan.arguments or {})


def finished(plan: CallPlan, result: CallResult) -> ToolCallFinished:
    output, audit = result
    return ToolCallFinished(
        call_id=output.call_id,
        name=plan.call.name,
        output=output.output,
        is_error=output.is_error,
        cached=audit.cached,
        duration=audit.duration,
    )


class Batch:
    """The calls of one turn (or of one resume) and what became of them.

    The loop drives it: :meth:`refusals`, then the :attr:`runnable` calls (a lone one inline,
    several through :meth:`parallel`), then :meth:`flush` (also on cancellation), :meth:`added`
    and :meth:`count_error_turn`.
    """

    def __init__(self, run: ActiveRun, plans: Sequence[CallPlan]) -> None:
        self.run = run
        self.plans = plans
        self.results: dict[int, CallResult] = {}
        self.extra_outputs: dict[int, FunctionCallOutput] = {}
        self.runnable: list[int] = []
        for index, plan in enumerate(plans):
            if plan.output is None and plan.pending is None:
                self.runnable.append(index)
        self._flushed = False

    def add_output(self, index: int, output: FunctionCallOutput) -> None:
        """An output that did not come from running a call (e.g. supplied by the client)."""
        self.extra_outputs[index] = output

    def refusals(self) -> list[Event]:
        """Record the calls refused during planning; their start and finish events."""
        events: list[Event] = []
        for index, plan in enumerate(self.plans):
            if plan.output is not None:
                self.results[index] = result = refused_result(plan)
                events += (started(plan), finished(plan, result))
        return events

    def flush(self) -> None:
        """Append outputs and audit records in model order (once, also on cancellation)."""
        if self._flushed:
            return
        self._flushed = True
        run = self.run
        state = run.state
        for index, plan in enumerate(self.plans):
            result = self.results.get(index)
            if result is not None:
                output, audit = result
                state.items.append(output)
                state.audit.append(audit)
                if audit.outcome != "not_run":
                    state.tool_calls += 1
                if plan.budget:
                    run.budget = run.budget or plan.budget
            elif index in self.extra_outputs:
                state.items.append(self.extra_outputs[index])

    def added(self) -> list[Event]:
        """``item_added`` for every output, in model order (after :meth:`flush`)."""
        events: list[Event] = []
        results, extra = self.results, self.extra_outputs
        for index in range(len(self.plans)):
            result = results.get(index)
            if result is not None:
                events.append(ItemAdded(item=result[0]))
            elif index in extra:
                events.append(ItemAdded(item=extra[index]))
        return events

    def count_error_turn(self) -> None:
        """Count a turn in which every call failed; reset the count on any success."""
        failed = False
        for output, _ in self.results.values():
            if not output.is_error:
                self.run.state.consecutive_error_turns = 0
                return
            failed = True
        for output in self.extra_outputs.values():
            if not output.is_error:
                self.run.state.consecutive_error_turns = 0
                return
            failed = True
        if failed:
            self.run.state.consecutive_error_turns += 1

    async def parallel(self) -> AsyncIterator[Event]:
        """Run the runnable calls as tasks, conflicting ones in model order."""
        run = self.run
        runnable = self.runnable
        plans = [self.plans[i] for i in runnable]
        deps = dependencies([p.access for p in plans], parallel=run.agent.parallel_tool_calls)
        done = [asyncio.Event() for _ in plans]
        limit = run.limits.max_parallel_tools
        semaphore = asyncio.Semaphore(limit) if limit else None
        queue: asyncio.Queue[Event | _Crashed] = asyncio.Queue()

        async def worker(slot: int) -> None:
            plan = plans[slot]
            try:
                for dep in deps[slot]:
                    await done[dep].wait()
                if semaphore is not None:
                    async with semaphore:
                        queue.put_nowait(started(plan))
                        result = await execute(run, plan)
                else:
                    queue.put_nowait(started(plan))
                    result = await execute(run, plan)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # a bug, not a tool failure: surface it
                queue.put_nowait(_Crashed(exc))
                raise
            self.results[runnable[slot]] = result
            done[slot].set()
            queue.put_nowait(finished(plan, result))

        tasks = [asyncio.create_task(worker(slot)) for slot in range(len(plans))]
        left = len(tasks)
        try:
            while left:
                run.busy = True
                try:
                    event = await queue.get()
                finally:
                    run.busy = False
                if isinstance(event, _Crashed):
                    raise event.error
                if isinstance(event, ToolCallFinished):
                    left -= 1
                yield event
        finally:
            pending = [t for t in tasks if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)
