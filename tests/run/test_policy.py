"""Behaviour 10: allow/deny lists, approvals and rate limits."""

from __future__ import annotations

import pytest

from agentloop import Agent, ConfigError, FunctionCallOutput, PendingCall, Policy, tool
from agentloop.run.ratelimit import Rate, RateLimiter
from agentloop.testing import ScriptedModel, text, tool_call

pytestmark = pytest.mark.anyio


@tool(read_only=True)
def look(q: str) -> str:
    return f"saw {q}"


@tool(risk="high")
def deploy(env: str) -> str:
    return f"deployed {env}"


@tool
def edit(path: str) -> str:
    return f"edited {path}"


def _outs(items: list[object]) -> list[FunctionCallOutput]:
    return [i for i in items if isinstance(i, FunctionCallOutput)]


async def test_calls_outside_allowed_tools_are_refused_but_schemas_still_sent() -> None:
    model = ScriptedModel([[tool_call("look", q="x"), tool_call("deploy", env="prod")], text("k")])
    policy = Policy(allowed_tools=["look"], auto_approve="high")
    result = await Agent(model, tools=[look, deploy], policy=policy).run("go")
    out = _outs(result.items)
    assert not out[0].is_error
    assert out[1].is_error and "not in the allowed tools" in out[1].output
    assert [t.name for t in model.requests[0].tools] == ["look", "deploy"]
    assert result.audit[1].decision == "refused"


async def test_denied_tools_are_refused() -> None:
    model = ScriptedModel([tool_call("deploy", env="prod"), text("k")])
    policy = Policy(denied_tools={"deploy"}, auto_approve="high")
    result = await Agent(model, tools=[deploy], policy=policy).run("go")
    assert "denied by policy" in _outs(result.items)[0].output


async def test_approver_decides_calls_above_the_auto_approve_level() -> None:
    asked: list[PendingCall] = []

    async def approver(call: PendingCall) -> bool:
        asked.append(call)
        return call.arguments["env"] == "staging"

    model = ScriptedModel(
        [[tool_call("deploy", env="staging"), tool_call("deploy", env="prod")], text("k")]
    )
    policy = Policy(auto_approve="medium", approver=approver)
    result = await Agent(model, tools=[deploy], policy=policy).run("go")
    assert [c.arguments["env"] for c in asked] == ["staging", "prod"]
    assert asked[0].kind == "approval" and asked[0].risk == "high"
    out = _outs(result.items)
    assert out[0].output == "deployed staging"
    assert out[1].is_error and "denied by the approver" in out[1].output
    assert [a.decision for a in result.audit] == ["approved", "denied"]


async def test_sync_approver_and_low_risk_auto_approved() -> None:
    asked = []

    def approver(call: PendingCall) -> bool:
        asked.append(call.name)
        return True

    model = ScriptedModel([[tool_call("look", q="a"), tool_call("edit", path="x")], text("k")])
    result = await Agent(model, tools=[look, edit], policy=Policy(approver=approver)).run("go")
    assert asked == ["edit"]  # read-only (low) calls are auto-approved by default
    assert [a.decision for a in result.audit] == ["allowed", "approved"]


async def test_auto_approve_none_asks_for_everything() -> None:
    model = ScriptedModel([tool_call("look", q="a")])
    result = await Agent(model, tools=[look], policy=Policy(auto_approve="none")).run("go")
    assert result.status == "requires_action"


async def test_rate_limit_error_says_when_to_retry() -> None:
    model = ScriptedModel([[tool_call("look", q=str(i)) for i in range(3)], text("k")])
    policy = Policy(rate_limits={"look": "2/minute"})
    result = await Agent(model, tools=[look], policy=policy).run("go")
    out = _outs(result.items)
    assert [o.is_error for o in out] == [False, False, True]
    assert "Rate limit exceeded for tool 'look' (2/minute)" in out[2].output
    assert "Retry in" in out[2].output


def test_rate_limiter_window_and_global_limit() -> None:
    now = [0.0]
    limiter = RateLimiter({"*": "3/second", "a": "1/10s"}, clock=lambda: now[0])
    assert limiter.acquire("a") is None
    assert "tool 'a'" in (limiter.acquire("a") or "")
    assert limiter.acquire("b") is None and limiter.acquire("b") is None
    assert "all tools" in (limiter.acquire("c") or "")
    now[0] = 10.5
    assert limiter.acquire("a") is None


def test_rate_parsing() -> None:
    assert Rate.parse("10/minute").period == 60
    assert Rate.parse("5/s").period == 1
    assert Rate.parse("100/2h").period == 7200
    with pytest.raises(ConfigError, match="must look like"):
        Rate.parse("ten per minute")
    with pytest.raises(ConfigError):
        Policy(rate_limits={"x": "0/minute"})


def test_policy_rejects_a_string_for_a_list() -> None:
    with pytest.raises(ConfigError, match="collection"):
        Policy(allowed_tools="look")
    with pytest.raises(ConfigError, match="auto_approve"):
        Policy(auto_approve="sometimes")  # type: ignore[arg-type]
