"""Deadlines: per-call time limits sharing one timer."""

from __future__ import annotations

import asyncio

import pytest

from agentloop import Agent, tool
from agentloop.run.deadlines import Deadlines, Limit, loop_deadlines
from agentloop.testing import ScriptedModel, text, tool_call

pytestmark = pytest.mark.anyio


async def test_a_call_past_its_deadline_raises_timeout_error() -> None:
    deadlines = Deadlines()
    with pytest.raises(TimeoutError), deadlines.limit(0.01):
        await asyncio.sleep(5)
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0  # its own cancel was taken back
    await asyncio.sleep(0)  # and no cancel is left pending for the next await


async def test_a_call_that_ends_in_time_is_not_cancelled_and_leaves_the_timer_armed_once() -> None:
    deadlines = Deadlines()
    for _ in range(100):
        with deadlines.limit(30):
            await asyncio.sleep(0)
    loop = asyncio.get_running_loop()
    timers = [h for h in getattr(loop, "_scheduled", []) if not h.cancelled()]
    assert len([h for h in timers if getattr(h, "_callback", None) == deadlines._fire]) == 1
    deadlines.close()
    assert deadlines._timer is None


async def test_concurrent_calls_each_expire_at_their_own_deadline() -> None:
    deadlines = Deadlines()
    outcomes: dict[str, str] = {}

    async def call(name: str, limit: float, work: float) -> None:
        try:
            with deadlines.limit(limit):
                await asyncio.sleep(work)
            outcomes[name] = "done"
        except TimeoutError:
            outcomes[name] = "timeout"

    await asyncio.gather(
        call("long_limit", 5, 0.05),
        call("short_limit", 0.02, 5),
        call("middle_limit", 0.06, 5),
        call("fast", 0.01, 0),
    )
    assert outcomes == {
        "long_limit": "done",
        "short_limit": "timeout",
        "middle_limit": "timeout",
        "fast": "done",
    }
    deadlines.close()


async def test_an_earlier_deadline_re_arms_the_timer() -> None:
    deadlines = Deadlines()
    started = asyncio.get_running_loop().time()

    async def slow() -> None:
        with deadlines.limit(10):
            await asyncio.sleep(0.2)

    background = asyncio.create_task(slow())
    await asyncio.sleep(0)
    with pytest.raises(TimeoutError), deadlines.limit(0.02):
        await asyncio.sleep(5)
    assert asyncio.get_running_loop().time() - started < 1
    await background  # the other call was left alone
    deadlines.close()


async def test_a_cancel_from_elsewhere_stays_a_cancel() -> None:
    deadlines = Deadlines()

    async def call() -> None:
        with deadlines.limit(10):
            await asyncio.sleep(5)

    task = asyncio.create_task(call())
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    deadlines.close()


async def test_a_cancel_at_the_same_time_as_the_deadline_wins() -> None:
    deadlines = Deadlines()
    limits: list[Limit] = []

    async def call() -> None:
        with deadlines.limit(1000) as limit:
            limits.append(limit)
            await asyncio.sleep(5)

    task = asyncio.create_task(call())
    await asyncio.sleep(0.01)
    loop = asyncio.get_running_loop()
    limits[0].deadline = loop.time()
    deadlines._fire(loop)  # the deadline passes and cancels the task...
    task.cancel()  # ...and in the same step the run is cancelled too
    with pytest.raises(asyncio.CancelledError):
        await task
    deadlines.close()


async def test_runs_on_one_event_loop_share_its_deadlines() -> None:
    assert loop_deadlines() is loop_deadlines()
    other = await asyncio.to_thread(lambda: asyncio.run(_deadlines_of_a_new_loop()))
    assert other is not loop_deadlines()


async def _deadlines_of_a_new_loop() -> Deadlines:
    return loop_deadlines()


async def test_a_tool_still_times_out_with_the_shared_timer_armed_for_later() -> None:
    async def slow() -> str:
        await asyncio.sleep(5)
        return "late"

    shared = loop_deadlines()
    with shared.limit(60):  # another run's call arms the loop's timer for a minute from now
        agent = Agent(
            ScriptedModel([tool_call("slow"), text("ok")]),
            tools=[tool(read_only=True, timeout=0.05)(slow)],
        )
        result = await agent.run("go")
    assert result.audit[0].outcome == "timeout"
    assert "timed out after 0.05 seconds" in (result.audit[0].message or "")
