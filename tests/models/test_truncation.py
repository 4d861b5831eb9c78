"""truncation="auto": oldest turns are dropped on ContextWindowExceeded, pairs kept whole."""

from __future__ import annotations

import pytest

from agentloop import Agent, tool
from agentloop.errors import ContextWindowExceeded
from agentloop.items import FunctionCall, FunctionCallOutput, Message, assistant, system, user
from agentloop.models.base import ModelRequest
from agentloop.models.truncation import TruncatingModel, clean_cut
from agentloop.testing import FunctionModel, text, tool_call

pytestmark = pytest.mark.anyio


def _call(i: int) -> list[object]:
    return [
        FunctionCall(call_id=f"c{i}", name="f", arguments="{}"),
        FunctionCallOutput(call_id=f"c{i}", output="x"),
    ]


def test_a_cut_never_orphans_an_output() -> None:
    body = [user("a"), *_call(1), *_call(2), assistant("b")]
    assert clean_cut(body, 0) == 0
    assert clean_cut(body, 2) == 3  # index 2 is c1's output: move past it
    # parallel calls: both calls before both outputs; no cut between them
    par = [user("a"), FunctionCall(call_id="p", name="f", arguments="{}"),
           FunctionCall(call_id="q", name="f", arguments="{}"),
           FunctionCallOutput(call_id="p", output="1"), FunctionCallOutput(call_id="q", output="2"),
           assistant("done")]  # fmt: skip
    assert clean_cut(par, 2) == 5
    assert clean_cut(par, 6) is None


def _fits(limit: int) -> FunctionModel:
    def answer(request: ModelRequest) -> object:
        if len(request.items) > limit:
            raise ContextWindowExceeded("maximum context length exceeded")
        return text(f"saw {len(request.items)}")

    return FunctionModel(answer)  # type: ignore[arg-type]


async def test_oldest_items_are_dropped_and_instructions_kept() -> None:
    inner = _fits(4)
    model = TruncatingModel(inner)
    history = [system("rules"), *[user(str(i)) for i in range(9)]]
    response = await model.request(ModelRequest(items=history))
    assert response.text.startswith("saw ")
    sent = inner.requests[-1].items
    assert isinstance(sent[0], Message) and sent[0].text == "rules"
    assert sent[-1].text == "8"  # type: ignore[union-attr]
    assert len(sent) <= 4
    # the cut is remembered: the next call goes through at once
    before = len(inner.requests)
    await model.request(ModelRequest(items=[*history, user("9")]))
    assert len(inner.requests) - before <= 2


async def test_streaming_and_the_loop_keep_the_full_history() -> None:
    @tool(read_only=True)
    def ping() -> str:
        return "pong"

    calls = iter([tool_call("ping"), tool_call("ping"), tool_call("ping"), text("end")])

    def answer(request: ModelRequest) -> object:
        if len(request.items) > 5:
            raise ContextWindowExceeded("too long")
        return next(calls)

    agent = Agent(TruncatingModel(FunctionModel(answer)), tools=[ping])  # type: ignore[arg-type]
    result = await agent.run("go")
    assert result.status == "completed" and result.output == "end"
    assert len(result.items) == 8  # nothing was removed from the run's own history


async def test_gives_up_when_even_the_last_turn_does_not_fit() -> None:
    model = TruncatingModel(_fits(0))
    with pytest.raises(ContextWindowExceeded, match="even after truncation"):
        await model.request(ModelRequest(items=[user("a"), user("b")]))
