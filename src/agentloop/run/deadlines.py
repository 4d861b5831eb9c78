"""Tool-call timeouts with one timer per event loop rather than one per call.

``asyncio.timeout`` schedules a timer handle for every call and cancels it when the call ends
(about 4 µs, plus a cancelled entry left in the event loop's heap), although almost every call
ends long before its timeout. Here a call only records its deadline; one timer, set for the
earliest deadline, cancels the calls that are past theirs when it fires and re-arms itself for
the next one. Every run on an event loop shares that loop's :class:`Deadlines`
(:func:`loop_deadlines`), so runs do not set up or tear down a timer either. Expiry is reported
as ``TimeoutError``, as ``asyncio.timeout`` does, and a cancel from elsewhere (the run being
cancelled) still propagates as ``CancelledError``.
"""

from __future__ import annotations

import asyncio
import math
import weakref
from types import TracebackType
from typing import Any


class Deadlines:
    """The time limits of the calls in flight (``with deadlines.limit(s): ...``)."""

    def __init__(self) -> None:
        self._active: set[Limit] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_when = math.inf

    def limit(self, seconds: float) -> Limit:
        """A context manager that cancels the current task after ``seconds``."""
        return Limit(self, seconds)

    def close(self) -> None:
        """Drop the timer."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
            self._timer_when = math.inf

    def _arm(self, loop: asyncio.AbstractEventLoop, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = loop.call_at(when, self._fire, loop)
        self._timer_when = when

    def _fire(self, loop: asyncio.AbstractEventLoop) -> None:
        due = max(self._timer_when, loop.time())
        self._timer, self._timer_when = None, math.inf
        earliest = math.inf
        for limit in self._active:
            if limit.expired:
                continue
            if limit.deadline <= due:
                limit.expired = True
                limit.task.cancel()
            elif limit.deadline < earliest:
                earliest = limit.deadline
        if earliest < math.inf:
            self._arm(loop, earliest)


_BY_LOOP: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Deadlines] = (
    weakref.WeakKeyDictionary()
)


def loop_deadlines() -> Deadlines:
    """The :class:`Deadlines` of the running event loop, shared by every run on it. Its timer
    may stay scheduled after the calls end; when it fires with nothing due it simply stops."""
    loop = asyncio.get_running_loop()
    deadlines = _BY_LOOP.get(loop)
    if deadlines is None:
        deadlines = _BY_LOOP[loop] = Deadlines()
    return deadlines


class Limit:
    """One call's time limit; see :meth:`Deadlines.limit`."""

    __slots__ = ("_cancelling", "_owner", "_seconds", "deadline", "expired", "task")

    def __init__(self, owner: Deadlines, seconds: float) -> None:
        self._owner = owner
        self._seconds = seconds
        self.expired = False

    def __enter__(self) -> Limit:
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("a time limit must be used inside a task")
        loop = task.get_loop()
        self.task: asyncio.Task[Any] = task
        self._cancelling = task.cancelling()
        self.deadline = deadline = loop.time() + self._seconds
        owner = self._owner
        owner._active.add(self)
        if deadline < owner._timer_when:
            owner._arm(loop, deadline)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._owner._active.discard(self)
        # An expired limit always takes back its own cancel (uncancel); the CancelledError
        # becomes a TimeoutError unless someone else cancelled the task too.
        if (
            self.expired
            and self.task.uncancel() <= self._cancelling
            and exc_type is asyncio.CancelledError
        ):
            raise TimeoutError from exc
