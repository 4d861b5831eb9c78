"""Running the calls of one turn: planned calls in, events out, outputs appended in model order.

Calls run concurrently unless they conflict (see :mod:`agentloop.run.schedule`); a lone call
runs inline without a task. Events from concurrent calls arrive through a queue so the stream
shows each call as it starts and finishes, whatever order that is; the outputs themselves are
appended in the order the model gave the calls.
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


def _started(plan: CallPlan) -> ToolCallStarted:
    return ToolCallStarted(
        call_id=plan.call.call_id, name=plan.call.name, arguments=plan.arguments or {}
    )


def _finished(plan: CallPlan, result: CallResult) -> ToolCallFinished:
    return ToolCallFinished(
        call_id=plan.call.call_id,
        name=plan.call.name,
        output=result.output.output,
        is_error=result.output.is_error,
        cached=result.cached,
        duration=result.duration,
    )


class Batch:
    """The calls of one turn (or of one resume) and what became of them."""

    def __init__(self, run: ActiveRun, plans: Sequence[CallPlan]) -> None:
        self.run = run
        self.plans = list(plans)
        self.results: dict[int, CallResult] = {}
        self.extra_outputs: dict[int, FunctionCallOutput] = {}
        self._flushed = False

    def add_output(self, index: int, output: FunctionCallOutput) -> None:
        """An output that did not come from running a call (e.g. supplied by the client)."""
        self.extra_outputs[index] = output

    async def events(self) -> AsyncIterator[Event]:
        """Run every runnable plan, yielding events; then append the outputs in model order."""
        run = self.run
        runnable: list[int] = []
        for index, plan in enumerate(self.plans):
            if plan.output is not None:
                self.results[index] = result = refused_result(plan)
                yield _started(plan)
                yield _finished(plan, result)
            elif plan.pending is None:
                runnable.append(index)
        try:
            if len(runnable) == 1:
                plan = self.plans[runnable[0]]
                yield _started(plan)
                run.busy = True
                try:
                    result = await execute(run, plan)
                finally:
                    run.busy = False
                self.results[runnable[0]] = result
                yield _finished(plan, result)
            elif runnable:
                async for event in self._parallel(runnable):
                    yield event
        finally:
            self.flush()
        for index in sorted(self.results):
            yield ItemAdded(item=self.results[index].output)

    def flush(self) -> None:
        """Append outputs and audit records in model order (once, also on cancellation)."""
        if self._flushed:
            return
        self._flushed = True
        state = self.run.state
        for index in range(len(self.plans)):
            result = self.results.get(index)
            if result is not None:
                state.items.append(result.output)
                state.audit.append(result.audit)
                if result.audit.outcome != "not_run":
                    state.tool_calls += 1
                if self.plans[index].budget:
                    self.run.budget = self.run.budget or self.plans[index].budget
            elif index in self.extra_outputs:
                state.items.append(self.extra_outputs[index])

    @property
    def all_failed(self) -> bool:
        """True when at least one call ran or was refused and every one of them failed."""
        outputs = [r.output for r in self.results.values()] + list(self.extra_outputs.values())
        return bool(outputs) and all(o.is_error for o in outputs)

    async def _parallel(self, runnable: list[int]) -> AsyncIterator[Event]:
        run = self.run
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
                        queue.put_nowait(_started(plan))
                        result = await execute(run, plan)
                else:
                    queue.put_nowait(_started(plan))
                    result = await execute(run, plan)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # a bug, not a tool failure: surface it
                queue.put_nowait(_Crashed(exc))
                raise
            self.results[runnable[slot]] = result
            done[slot].set()
            queue.put_nowait(_finished(plan, result))

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
