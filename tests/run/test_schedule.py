"""Behaviour 8: conflict-aware parallel scheduling."""

from __future__ import annotations

import asyncio

import pytest

from agentloop import Agent, Limits, Policy, tool
from agentloop.run.schedule import Access, conflicts, dependencies
from agentloop.testing import ScriptedModel, text, tool_call

pytestmark = pytest.mark.anyio


def _a(writes: bool, *paths: str) -> Access:
    return Access(writes=writes, paths=frozenset(paths))


def test_reads_never_conflict() -> None:
    assert not conflicts(_a(False, "/w/a"), _a(False, "/w/a"))
    assert not conflicts(_a(False), _a(False))


def test_writes_conflict_on_same_or_nested_paths_only() -> None:
    assert conflicts(_a(True, "/w/a"), _a(False, "/w/a"))
    assert conflicts(_a(False, "/w/dir"), _a(True, "/w/dir/file"))
    assert conflicts(_a(True, "/w/dir/file"), _a(True, "/w/dir"))
    assert not conflicts(_a(True, "/w/a"), _a(True, "/w/b"))
    assert not conflicts(_a(True, "/w/ab"), _a(False, "/w/a"))


def test_a_writer_without_paths_is_a_barrier() -> None:
    assert conflicts(_a(True), _a(False, "/w/a"))
    assert conflicts(_a(False), _a(True))
    assert dependencies([_a(False, "/a"), _a(True), _a(False, "/b")]) == [(), (0,), (1,)]


def test_sequential_mode_chains_every_call() -> None:
    assert dependencies([_a(False), _a(False), _a(False)], parallel=False) == [(), (0,), (1,)]


class Recorder:
    """Tools that log start/end and can wait for each other, to observe real concurrency."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.running = 0
        self.peak = 0

    async def work(self, tag: str, rendezvous: asyncio.Barrier | None = None) -> str:
        self.log.append(f"start {tag}")
        self.running += 1
        self.peak = max(self.peak, self.running)
        if rendezvous is not None:
            # only returns if the other party runs at the same time
            async with asyncio.timeout(5):
                await rendezvous.wait()
        await asyncio.sleep(0.01)
        self.running -= 1
        self.log.append(f"end {tag}")
        return tag


async def test_reads_run_concurrently() -> None:
    rec, barrier = Recorder(), asyncio.Barrier(3)

    @tool(read_only=True, paths=("path",), cacheable=False)
    async def read(path: str) -> str:
        return await rec.work(path, barrier)

    calls = [tool_call("read", path=p) for p in ("a", "b", "a")]
    result = await Agent(ScriptedModel([calls, text("ok")]), tools=[read]).run("go")
    assert result.status == "completed" and rec.peak == 3


async def test_conflicting_calls_run_in_model_order_others_in_parallel() -> None:
    rec = Recorder()

    @tool(paths=("path",))
    async def write(path: str, tag: str) -> str:
        return await rec.work(tag)

    @tool(read_only=True, paths=("path",), cacheable=False)
    async def read(path: str, tag: str) -> str:
        return await rec.work(tag)

    calls = [
        tool_call("write", path="src/a.py", tag="w1"),
        tool_call("read", path="./src/a.py", tag="r1"),  # same file after normalisation
        tool_call("write", path="src", tag="w2"),  # contains src/a.py
        tool_call("read", path="docs/x.md", tag="r2"),  # disjoint: runs alongside w1
    ]
    agent = Agent(ScriptedModel([calls, text("ok")]), tools=[write, read],
                  policy=Policy(auto_approve="high"))  # fmt: skip
    await agent.run("go")
    log = rec.log
    assert log.index("end w1") < log.index("start r1")
    assert log.index("end r1") < log.index("start w2")
    assert log.index("start r2") < log.index("end w1")


async def test_parallel_tool_calls_false_runs_one_by_one() -> None:
    rec = Recorder()

    @tool(read_only=True, cacheable=False)
    async def read(tag: str) -> str:
        return await rec.work(tag)

    calls = [tool_call("read", tag=t) for t in "abc"]
    agent = Agent(ScriptedModel([calls, text("ok")]), tools=[read], parallel_tool_calls=False)
    await agent.run("go")
    assert rec.peak == 1
    assert rec.log == ["start a", "end a", "start b", "end b", "start c", "end c"]


async def test_max_parallel_tools_caps_concurrency() -> None:
    rec = Recorder()

    @tool(read_only=True, cacheable=False)
    async def read(tag: str) -> str:
        return await rec.work(tag)

    calls = [tool_call("read", tag=str(i)) for i in range(6)]
    agent = Agent(ScriptedModel([calls, text("ok")]), tools=[read],
                  limits=Limits(max_parallel_tools=2))  # fmt: skip
    await agent.run("go")
    assert rec.peak == 2
