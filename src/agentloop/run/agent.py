"""Agent: a model, tools and rules, and the ``run`` / ``stream`` / ``resume`` entry points."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agentloop.errors import ConfigError, StateError
from agentloop.items import Item, new_id, to_items
from agentloop.models.base import Model, ModelSettings, ToolSchema
from agentloop.run.active import ActiveRun
from agentloop.run.cache import ResultCache
from agentloop.run.hooks import Hooks
from agentloop.run.limits import Limits
from agentloop.run.loop import Resume, run_events
from agentloop.run.output import (
    OUTPUT_TOOL_NAME,
    OutputSpec,
    Reflector,
    Validator,
    build_output_spec,
)
from agentloop.run.policy import Policy
from agentloop.run.ratelimit import RateLimiter
from agentloop.run.result import RunResult
from agentloop.run.state import RunState
from agentloop.run.stream import RunStream
from agentloop.tools.tool import Tool, as_tool

ToolLike = Tool | Callable[..., Any]
RunInput = str | Item | Mapping[str, Any] | Sequence[Item | Mapping[str, Any]]


def _flatten_tools(tools: Iterable[ToolLike | Iterable[ToolLike]]) -> list[Tool]:
    out: list[Tool] = []
    for entry in tools:
        if isinstance(entry, Tool) or callable(entry):
            out.append(as_tool(entry))
        elif isinstance(entry, Iterable) and not isinstance(entry, str | bytes):
            out.extend(_flatten_tools(entry))
        else:
            raise ConfigError(f"{entry!r} is not a tool, a function or a collection of tools")
    return out


class Agent:
    """A model with tools, limits and a policy. Reusable: each ``run`` has its own state.

    The result cache and rate limits belong to the agent, so they span its runs (entries expire
    after each tool's ``cache_ttl``). ``workspace`` is where tools work (default: the current
    directory); path arguments are resolved against it.
    """

    def __init__(
        self,
        model: Model | str,
        *,
        instructions: str | None = None,
        tools: Iterable[ToolLike | Iterable[ToolLike]] = (),
        limits: Limits | None = None,
        policy: Policy | None = None,
        confirm_completion: bool = False,
        parallel_tool_calls: bool = True,
        tool_choice: str = "auto",
        settings: ModelSettings | None = None,
        workspace: str | Path | None = None,
        cache: bool | ResultCache = True,
        name: str = "agent",
        output_type: Any = None,
        output_validators: Sequence[Validator] = (),
        reflect: Reflector | None = None,
        hooks: Hooks | None = None,
        output_tool_name: str = OUTPUT_TOOL_NAME,
    ) -> None:
        if isinstance(model, str):
            from agentloop.models.resolve import resolve

            model = resolve(model)
        if not isinstance(model, Model):
            raise ConfigError(f"model must be a Model or a 'provider:model' string, not {model!r}")
        self.model = model
        self.name = name
        self.instructions = instructions
        self.tools: list[Tool] = _flatten_tools(tools)
        self.tools_by_name: dict[str, Tool] = {}
        for t in self.tools:
            if t.name in self.tools_by_name:
                raise ConfigError(f"two tools are named {t.name!r}")
            self.tools_by_name[t.name] = t
        self.output: OutputSpec | None = None
        if output_type is not None:
            self.output = build_output_spec(
                output_type, validators=output_validators, reflect=reflect,
                tool_name=output_tool_name,
            )  # fmt: skip
        elif output_validators or reflect is not None:
            raise ConfigError("output_validators and reflect need an output_type")
        schemas = [t.schema for t in self.tools]
        if self.output is not None:
            schemas += [s for s in (self.output.tool, self.output.submit) if s is not None]
            for s in schemas[len(self.tools) :]:
                if s.name in self.tools_by_name:
                    raise ConfigError(f"a tool is named {s.name!r}, which the output needs")
        self.tool_schemas: tuple[ToolSchema, ...] = tuple(schemas)
        if hooks is not None and not isinstance(hooks, Hooks):
            raise ConfigError("hooks must be an agentloop.Hooks instance")
        self.hooks = hooks
        if tool_choice not in ("auto", "required", "none") and tool_choice not in {
            s.name for s in self.tool_schemas
        }:
            raise ConfigError(
                f"tool_choice must be 'auto', 'required', 'none' or a tool name; "
                f"{tool_choice!r} is none of these"
            )
        self.tool_choice = tool_choice
        self.limits = limits or Limits()
        self.policy = policy or Policy()
        self.confirm_completion = confirm_completion
        self.parallel_tool_calls = parallel_tool_calls
        self.settings = settings or ModelSettings()
        self.workspace = Path(workspace).resolve() if workspace is not None else Path.cwd()
        if cache is True:
            self.cache: ResultCache | None = ResultCache()
        elif cache is False:
            self.cache = None
        else:
            self.cache = cache
        rates = self.policy.rate_limits
        self.rate_limiter = RateLimiter(rates) if rates else None

    def __repr__(self) -> str:
        return f"Agent(name={self.name!r}, model={self.model.name!r}, tools={len(self.tools)})"

    # --- entry points ------------------------------------------------------------------------

    def stream(self, input: RunInput, *, deps: Any = None) -> RunStream:
        """Start a run and stream its events; the last event is ``run_finished``."""
        items = to_items(input)
        state = RunState(run_id=new_id("run"), items=items)
        run = ActiveRun(agent=self, state=state, deps=deps, new_from=len(items))
        return RunStream(run, run_events(run))

    async def run(self, input: RunInput, *, deps: Any = None) -> RunResult:
        """Run to the end (final answer, pause, limit, failure or cancellation)."""
        return await self.stream(input, deps=deps).drain()

    def run_sync(self, input: RunInput, *, deps: Any = None) -> RunResult:
        """``run`` for code without an event loop."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.run(input, deps=deps))
        raise RuntimeError("run_sync cannot be used inside an event loop; use 'await agent.run()'")

    def stream_resume(
        self,
        state: RunState | str,
        *,
        tool_outputs: Mapping[str, str] | None = None,
        approvals: Mapping[str, bool] | None = None,
        deps: Any = None,
    ) -> RunStream:
        """Continue a paused run, streaming its events."""
        if isinstance(state, str):
            state = RunState.from_json(state)
        resume = _check_resume(state, tool_outputs or {}, approvals or {})
        run = ActiveRun(agent=self, state=state, deps=deps, new_from=len(state.items))
        return RunStream(run, run_events(run, resume))

    async def resume(
        self,
        state: RunState | str,
        *,
        tool_outputs: Mapping[str, str] | None = None,
        approvals: Mapping[str, bool] | None = None,
        deps: Any = None,
    ) -> RunResult:
        """Continue a run that ended ``requires_action``.

        ``tool_outputs`` maps each pending client call's ``call_id`` to its output text;
        ``approvals`` maps each call awaiting approval to True (run it) or False (refuse it).
        """
        stream = self.stream_resume(
            state, tool_outputs=tool_outputs, approvals=approvals, deps=deps
        )
        return await stream.drain()


def _check_resume(
    state: RunState, tool_outputs: Mapping[str, str], approvals: Mapping[str, bool]
) -> Resume:
    """Every pending call must be answered, and nothing else; a clear error otherwise."""
    if state.status != "requires_action" or not state.pending:
        raise StateError(
            f"this run is not waiting for anything (status {state.status!r}); nothing to resume"
        )
    want_out = {p.call_id for p in state.pending if p.kind == "client"}
    want_ok = {p.call_id for p in state.pending if p.kind == "approval"}
    problems = []
    if missing := sorted(want_out - set(tool_outputs)):
        problems.append(f"missing tool_outputs for {', '.join(missing)}")
    if missing := sorted(want_ok - set(approvals)):
        problems.append(f"missing approvals for {', '.join(missing)}")
    if extra := sorted(set(tool_outputs) - want_out):
        problems.append(f"tool_outputs for calls that are not pending client calls: {extra}")
    if extra := sorted(set(approvals) - want_ok):
        problems.append(f"approvals for calls that are not awaiting approval: {extra}")
    for call_id, text in tool_outputs.items():
        if not isinstance(text, str):
            problems.append(f"tool output for {call_id} must be a string")
    if problems:
        raise StateError("cannot resume: " + "; ".join(problems))
    return Resume(tool_outputs=dict(tool_outputs), approvals=dict(approvals))
