"""Behaviour 9: the result cache (TTL, LRU, canonical keys, invalidation by writes)."""

from __future__ import annotations

import os

import pytest

from agentloop import Agent, FunctionCallOutput, Policy, ResultCache, tool
from agentloop.run.cache import cache_key
from agentloop.testing import ScriptedModel, text, tool_call

pytestmark = pytest.mark.anyio


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_ttl_and_lru_bound() -> None:
    clock = Clock()
    cache = ResultCache(max_entries=2, clock=clock)
    cache.put("a", "1", paths=frozenset(), ttl=10)
    cache.put("b", "2", paths=frozenset(), ttl=10)
    assert cache.get("a") == "1"  # a is now most recent
    cache.put("c", "3", paths=frozenset(), ttl=10)
    assert cache.get("b") is None and cache.get("a") == "1" and cache.get("c") == "3"
    clock.now = 11
    assert cache.get("a") is None and len(cache) == 1


def test_invalidation_by_overlapping_paths() -> None:
    cache = ResultCache()
    cache.put("f", "x", paths=frozenset({"/w/src/a.py"}), ttl=30)
    cache.put("g", "y", paths=frozenset({"/w/docs/b.md"}), ttl=30)
    cache.put("h", "z", paths=frozenset(), ttl=30)
    cache.invalidate(frozenset({"/w/src"}))
    assert cache.get("f") is None and cache.get("g") == "y" and cache.get("h") == "z"
    cache.invalidate(frozenset())
    assert len(cache) == 0


class Files:
    def __init__(self) -> None:
        self.data = {"a.txt": "one", "b.txt": "bee"}
        self.reads = 0


def _agent(files: Files, script: list[object]) -> tuple[Agent, ScriptedModel]:
    @tool(read_only=True, paths=("path",))
    def read(path: str) -> str:
        files.reads += 1
        return files.data[path]

    @tool(paths=("path",))
    def write(path: str, content: str) -> str:
        files.data[os.path.normpath(path)] = content
        return "ok"

    @tool
    def shell(command: str) -> str:
        files.data = {k: v.upper() for k, v in files.data.items()}
        return "ran"

    model = ScriptedModel(script)  # type: ignore[arg-type]
    agent = Agent(model, tools=[read, write, shell], policy=Policy(auto_approve="high"))
    return agent, model


def _outputs(items: list[object]) -> list[str]:
    return [i.output for i in items if isinstance(i, FunctionCallOutput)]


def test_keys_ignore_key_order_at_every_depth() -> None:
    flat = cache_key("t", {"a": 1, "b": "x"})
    assert flat == cache_key("t", {"b": "x", "a": 1})
    nested = cache_key("t", {"q": {"x": [1, {"m": 1, "n": 2}], "y": None}, "a": 1})
    assert nested == cache_key("t", {"a": 1, "q": {"y": None, "x": [1, {"n": 2, "m": 1}]}})
    assert cache_key("t", {"a": 1}) != cache_key("u", {"a": 1})


@pytest.mark.parametrize(
    "other",
    [{"a": 1.0}, {"a": True}, {"a": "1"}, {"a": [1]}, {"a": None}, {"a": 1, "b": 1}, {"b": 1}],
)
def test_keys_tell_different_arguments_apart(other: dict[str, object]) -> None:
    assert cache_key("t", {"a": 1}) != cache_key("t", other)
    assert cache_key("t", {"a": [1, 2]}) != cache_key("t", {"a": [2, 1]})


async def test_repeated_reads_hit_the_cache_and_say_so() -> None:
    files = Files()
    agent, _ = _agent(
        files,
        [
            tool_call("read", path="a.txt"),
            tool_call("read", arguments='{"path": "a.txt"}'),
            text("done"),
        ],
    )
    events = [e async for e in agent.stream("go")]
    finished = [e for e in events if e.type == "tool_call_finished"]
    assert [e.cached for e in finished] == [False, True]  # type: ignore[union-attr]
    assert files.reads == 1
    result = events[-1].result  # type: ignore[union-attr]
    assert [a.cached for a in result.audit] == [False, True]


async def test_a_write_invalidates_overlapping_entries_only() -> None:
    files = Files()
    agent, _ = _agent(
        files,
        [
            [tool_call("read", path="a.txt"), tool_call("read", path="b.txt")],
            tool_call("write", path="./a.txt", content="two"),
            [tool_call("read", path="a.txt"), tool_call("read", path="b.txt")],
            text("done"),
        ],
    )
    result = await agent.run("go")
    assert _outputs(result.items) == ["one", "bee", "ok", "two", "bee"]
    assert files.reads == 3  # b.txt came from the cache the second time


async def test_a_write_without_paths_clears_the_cache() -> None:
    files = Files()
    agent, _ = _agent(
        files,
        [
            tool_call("read", path="b.txt"),
            tool_call("shell", command="make"),
            tool_call("read", path="b.txt"),
            text("done"),
        ],
    )
    result = await agent.run("go")
    assert _outputs(result.items) == ["bee", "ran", "BEE"]


async def test_cache_can_be_turned_off() -> None:
    files = Files()

    @tool(read_only=True)
    def read(path: str) -> str:
        files.reads += 1
        return files.data[path]

    model = ScriptedModel([tool_call("read", path="a.txt"), tool_call("read", path="a.txt"),
                           text("x")])  # fmt: skip
    await Agent(model, tools=[read], cache=False).run("go")
    assert files.reads == 2


async def test_failed_calls_are_not_cached() -> None:
    attempts = []

    @tool(read_only=True)
    def flaky(key: str) -> str:
        attempts.append(key)
        if len(attempts) == 1:
            raise RuntimeError("transient")
        return "fine"

    model = ScriptedModel([tool_call("flaky", key="k"), tool_call("flaky", key="k"), text("x")])
    result = await Agent(model, tools=[flaky]).run("go")
    assert len(attempts) == 2 and _outputs(result.items)[-1] == "fine"
