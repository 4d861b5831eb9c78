"""One tool call, from the model's request to the output fed back.

:func:`plan_call` makes every decision that does not need the call to run (known tool? valid
JSON and schema? allowed? within rate limits and budgets? approved?). :func:`execute` runs an
approved call: cache lookup, file budgets, timeout, output formatting and capping. Every failure
becomes an error output for the model; nothing here raises to the caller except cancellation.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from typing import Any, TypeAlias

import pydantic
import pydantic_core
from pydantic_core import to_jsonable_python

from agentloop.errors import ToolError
from agentloop.items import FunctionCall, FunctionCallOutput, new_id
from agentloop.parsing import ArgumentsParseError, parse_arguments
from agentloop.run.active import ActiveRun
from agentloop.run.cache import cache_key
from agentloop.run.paths import call_paths
from agentloop.run.result import AuditRecord, Decision, Outcome, PendingCall
from agentloop.run.schedule import Access
from agentloop.tools.context import ToolContext
from agentloop.tools.schema import format_validation_error
from agentloop.tools.tool import Tool

log = logging.getLogger("agentloop.tools")

NO_ACCESS = Access(writes=False, paths=frozenset())
TRUNCATION_MARKER = "\n[output truncated: {dropped} of {total} characters removed]"


@dataclass(kw_only=True, slots=True)
class CallPlan:
    """A call after every up-front check. Exactly one of ``output``/``pending``/``kwargs`` decides
    what happens next: an immediate output, a pause, or execution."""

    call: FunctionCall
    tool: Tool | None = None
    arguments: dict[str, Any] | None = None
    kwargs: dict[str, Any] | None = None
    access: Access = NO_ACCESS
    decision: Decision = "allowed"
    output: FunctionCallOutput | None = None
    pending: PendingCall | None = None
    budget: str | None = None


CallResult: TypeAlias = tuple[FunctionCallOutput, AuditRecord]
"""What running (or refusing) a call produced: the output for the model and the audit record
(which also says whether the output came from the cache, and how long the call took)."""


def error_output(call: FunctionCall, message: str) -> FunctionCallOutput:
    return FunctionCallOutput(call_id=call.call_id, output=message, id=new_id("fco"), is_error=True)


def _refuse(plan: CallPlan, message: str, decision: Decision = "refused") -> CallPlan:
    plan.decision = decision
    plan.output = error_output(plan.call, message)
    return plan


def plan_call(
    run: ActiveRun, call: FunctionCall, *, executable_budget: int | None, approved: bool = False
) -> CallPlan:
    """Decide what to do with one call. ``executable_budget`` is how many more calls may run;
    ``approved`` is for calls a human already approved (no second rate-limit count or question).

    A call that needs approval comes back pending (kind ``"approval"``); when the policy has an
    approver, :func:`ask_approver` turns that into a decision."""
    plan = CallPlan(call=call)
    tool = run.tools.get(call.name)
    if tool is None:
        names = ", ".join(sorted(run.tools)) or "(none)"
        return _refuse(plan, f"Unknown tool '{call.name}'. Available tools: {names}.", "invalid")
    plan.tool = tool
    try:
        plan.arguments = arguments = parse_arguments(call.arguments)
    except ArgumentsParseError as exc:
        return _refuse(plan, f"Invalid arguments for tool '{call.name}': {exc}", "invalid")
    policy = run.policy
    refusal = policy.refusal(call.name)
    if refusal:
        return _refuse(plan, refusal)
    if not tool.is_external:
        try:
            plan.kwargs = tool.validate(arguments)
        except pydantic.ValidationError as exc:
            return _refuse(
                plan,
                format_validation_error(exc, subject=f"arguments for tool '{call.name}'"),
                "invalid",
            )
    if executable_budget is not None and executable_budget <= 0:
        plan.budget = "max_tool_calls"
        return _refuse(plan, "Tool call budget exhausted (max_tool_calls); the call was not run.")
    if run.rate_limiter is not None and not approved:
        wait = run.rate_limiter.acquire(call.name)
        if wait:
            return _refuse(plan, wait)
    if tool.is_external:
        plan.decision = "pending"
        plan.pending = PendingCall(
            call_id=call.call_id, name=call.name, arguments=arguments, kind="client"
        )
        return plan
    if tool.paths or not tool.read_only:
        plan.access = Access(
            writes=not tool.read_only,
            paths=call_paths(arguments, tool.paths, str(run.workspace)),
        )
    if approved:
        plan.decision = "approved"
    elif policy.needs_approval(tool.risk):
        plan.decision = "pending"
        plan.pending = PendingCall(
            call_id=call.call_id,
            name=call.name,
            arguments=arguments,
            kind="approval",
            risk=tool.risk,
        )
    return plan


async def ask_approver(run: ActiveRun, plan: CallPlan) -> None:
    """Put a call awaiting approval to the policy's approver: run it, refuse it, or (no
    approver, or no answer) leave it pending so the run pauses."""
    assert plan.pending is not None
    answer = await run.policy.ask(plan.pending)
    if answer is None:
        return
    plan.pending = None
    if answer:
        plan.decision = "approved"
    else:
        _refuse(plan, f"The call to '{plan.call.name}' was denied by the approver.", "denied")


def format_output(value: Any) -> str:
    """Text for the model: strings as they are, everything else as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, pydantic.BaseModel):
        return value.model_dump_json()
    try:
        return json.dumps(to_jsonable_python(value), ensure_ascii=False)
    except (TypeError, ValueError, pydantic_core.PydanticSerializationError):
        return str(value)


def cap_output(text: str, limit: int) -> tuple[str, bool]:
    """Truncate ``text`` to ``limit`` characters with a marker; True when it was truncated."""
    if len(text) <= limit:
        return text, False
    marker = TRUNCATION_MARKER.format(dropped=len(text) - limit, total=len(text))
    return text[:limit] + marker, True


def _file_budget_refusal(run: ActiveRun, plan: CallPlan) -> str | None:
    """Refuse a writing call that would pass a file or line budget; reserve its files."""
    limits, state = run.limits, run.state
    if limits.max_lines_changed is not None and state.lines_changed >= limits.max_lines_changed:
        plan.budget = "max_lines_changed"
        return (
            f"Refused: the run has already changed {state.lines_changed} lines "
            f"(max_lines_changed={limits.max_lines_changed})."
        )
    if limits.max_files_modified is not None:
        touched = state.files_modified | run.reserved_files
        new = plan.access.paths - touched
        if len(touched) + len(new) > limits.max_files_modified or (
            not plan.access.paths and len(touched) >= limits.max_files_modified
        ):
            plan.budget = "max_files_modified"
            return (
                f"Refused: this call would modify more than {limits.max_files_modified} files "
                f"(max_files_modified); already modified: {len(touched)}."
            )
        run.reserved_files |= new
    return None


def _result(
    plan: CallPlan, text: str, *, is_error: bool, outcome: Outcome, started: float,
    cached: bool = False,
) -> CallResult:  # fmt: skip
    duration = time.perf_counter() - started
    output = FunctionCallOutput(
        call_id=plan.call.call_id, output=text, id=new_id("fco"), is_error=is_error
    )
    audit = AuditRecord(
        call_id=plan.call.call_id,
        tool=plan.call.name,
        arguments=plan.arguments if plan.arguments is not None else plan.call.arguments,
        decision=plan.decision,
        outcome=outcome,
        duration=duration,
        cached=cached,
        message=text if is_error else None,
    )
    return output, audit


def refused_result(plan: CallPlan) -> CallResult:
    """The audit record and output of a call refused during planning."""
    assert plan.output is not None
    audit = AuditRecord(
        call_id=plan.call.call_id,
        tool=plan.call.name,
        arguments=plan.arguments if plan.arguments is not None else plan.call.arguments,
        decision=plan.decision,
        outcome="not_run",
        message=plan.output.output,
    )
    return plan.output, audit


async def execute(run: ActiveRun, plan: CallPlan) -> CallResult:
    """Run one planned call. Cancellation propagates; everything else becomes an output."""
    started = time.perf_counter()
    tool, kwargs, arguments = plan.tool, plan.kwargs, plan.arguments
    assert tool is not None and kwargs is not None and arguments is not None
    limits = run.limits
    cache = run.cache if tool.cacheable else None
    key = ""
    if cache is not None:
        key = cache_key(tool.name, arguments)
        hit = cache.get(key)
        if hit is not None:
            return _result(plan, hit, is_error=False, outcome="success", started=started,
                           cached=True)  # fmt: skip
    if plan.access.writes:
        refusal = _file_budget_refusal(run, plan)
        if refusal:
            plan.decision = "refused"
            return _result(plan, refusal, is_error=True, outcome="not_run", started=started)
    ctx = None
    if tool.context_param is not None:  # built only for tools that ask for it
        ctx = ToolContext(
            workspace=run.workspace,
            run_id=run.state.run_id,
            call_id=plan.call.call_id,
            tool_name=tool.name,
            policy=run.policy,
            deps=run.deps,
            _on_change=run.record_change,
        )
    timeout = tool.timeout if tool.timeout is not None else limits.tool_timeout
    budget_cut = False
    if limits.max_duration_s is not None:
        remaining = max(limits.max_duration_s - run.elapsed(), 0.0)
        if timeout is None or remaining < timeout:
            timeout, budget_cut = remaining, True
    try:
        if timeout is None:
            value = await tool.invoke(kwargs, ctx)
        else:
            with run.deadlines.limit(timeout):
                value = await tool.invoke(kwargs, ctx)
        text = format_output(value)
        truncated = False
        if len(text) > limits.max_output_chars:
            text, truncated = cap_output(text, limits.max_output_chars)
        outcome: Outcome = "error" if truncated else "success"
        result = _result(plan, text, is_error=truncated, outcome=outcome, started=started)
    except TimeoutError:
        if budget_cut:
            run.budget = run.budget or "max_duration_s"
            msg = "Tool call stopped: the run's time budget (max_duration_s) ran out."
        else:
            msg = f"Tool '{tool.name}' timed out after {timeout:g} seconds."
        result = _result(plan, msg, is_error=True, outcome="timeout", started=started)
    except ToolError as exc:
        result = _result(plan, str(exc), is_error=True, outcome="error", started=started)
    except Exception as exc:
        log.warning("tool %s raised", tool.name, exc_info=True)
        msg = f"Tool '{tool.name}' failed: {type(exc).__name__}: {exc}"
        result = _result(plan, msg, is_error=True, outcome="error", started=started)
    finally:
        if plan.access.writes and run.cache is not None:
            run.cache.invalidate(plan.access.paths)
    output = result[0]
    if cache is not None and not output.is_error:
        cache.put(key, output.output, paths=plan.access.paths, ttl=tool.cache_ttl)
    return result
