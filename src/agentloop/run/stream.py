"""RunStream: the async iterator ``Agent.stream`` returns, with ``cancel()``."""

from __future__ import annotations

from collections.abc import AsyncIterator

from agentloop.run.active import ActiveRun
from agentloop.run.events import Event, RunFinished
from agentloop.run.result import RunResult


class RunStream:
    """Iterate to get events; the last is ``run_finished``. ``cancel()`` may be called from any
    task: in-flight model calls and tools are cancelled and the run ends ``cancelled`` with every
    item produced so far."""

    def __init__(self, run: ActiveRun, events: AsyncIterator[Event]) -> None:
        self._run = run
        self._events = events
        self._result: RunResult | None = None

    def __aiter__(self) -> RunStream:
        return self

    async def __anext__(self) -> Event:
        if self._result is not None:
            raise StopAsyncIteration
        event = await anext(self._events)
        if isinstance(event, RunFinished):
            self._result = event.result
            # It is the last event: close the loop's generator now, so that a consumer that stops
            # here leaves nothing suspended for the event loop's finalizer to clean up.
            await self.aclose()
        return event

    @property
    def run_id(self) -> str:
        return self._run.state.run_id

    @property
    def result(self) -> RunResult:
        """The result, once the stream has finished."""
        if self._result is None:
            raise RuntimeError("the run has not finished yet; iterate the stream to the end")
        return self._result

    def cancel(self) -> None:
        """Ask the run to stop. Safe to call at any time, more than once, from any task."""
        run = self._run
        if self._result is not None or run.cancel_requested:
            return
        run.cancel_requested = True
        if run.busy and run.task is not None:
            run.task.cancel()

    async def drain(self) -> RunResult:
        """Consume the remaining events and return the result."""
        if self._result is None:
            # The loop's events directly, not through __anext__: one coroutine less per event.
            # Run to the generator's end (not `break` at run_finished): a generator left
            # suspended would be closed later by the event loop's finalizer, at a cost.
            async for event in self._events:
                if isinstance(event, RunFinished):
                    self._result = event.result
        return self.result

    async def aclose(self) -> None:
        """Stop iterating early; in-flight work is cancelled."""
        closer = getattr(self._events, "aclose", None)
        if closer is not None:
            await closer()
