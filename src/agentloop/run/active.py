"""ActiveRun: what the loop and the call executor share during one run invocation."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentloop.models.base import ModelRequest
from agentloop.run.cache import ResultCache
from agentloop.run.deadlines import Deadlines
from agentloop.run.limits import Limits
from agentloop.run.paths import normalise
from agentloop.run.policy import Policy
from agentloop.run.ratelimit import RateLimiter
from agentloop.run.result import RunStatus
from agentloop.run.state import RunState

if TYPE_CHECKING:
    from agentloop.run.agent import Agent
    from agentloop.tools.tool import Tool


class RunEnd(Exception):
    """Control flow inside the loop: the run ends with this status and reason."""

    def __init__(self, status: RunStatus, reason: str) -> None:
        super().__init__(f"{status}: {reason}")
        self.status, self.reason = status, reason


_NO_OUTPUT: Any = object()


@dataclass(kw_only=True, eq=False)
class ActiveRun:
    """Per-invocation data: the agent's configuration, the state, and run-scoped counters."""

    agent: Agent
    state: RunState
    deps: Any = None
    started: float = field(default_factory=time.monotonic)
    new_from: int = 0
    """Index in ``state.items`` where this invocation's new items begin."""
    budget: str | None = None
    """Name of the budget that ended (or will end) the run, if any."""
    reserved_files: set[str] = field(default_factory=set)
    cancel_requested: bool = False
    busy: bool = False
    """True while the loop awaits something that a cancel may interrupt (never across a yield)."""
    task: asyncio.Task[Any] | None = None
    error: BaseException | None = None
    hook_errors: list[BaseException] = field(default_factory=list)
    output_value: Any = _NO_OUTPUT
    """The validated structured output, once accepted."""
    output_errors: list[str] = field(default_factory=list)
    deadlines: Deadlines = field(init=False)
    """The time limits of tool calls: the event loop's (set when the run starts)."""

    limits: Limits = field(init=False)
    policy: Policy = field(init=False)
    tools: Mapping[str, Tool] = field(init=False)
    cache: ResultCache | None = field(init=False)
    rate_limiter: RateLimiter | None = field(init=False)
    workspace: Path = field(init=False)
    request: ModelRequest = field(init=False)
    """The model request of every turn: its ``items`` is the live conversation list."""

    def __post_init__(self) -> None:
        # The agent's configuration, copied once: the loop reads these many times per turn.
        agent = self.agent
        self.limits, self.policy, self.tools = agent.limits, agent.policy, agent.tools_by_name
        self.cache, self.rate_limiter = agent.cache, agent.rate_limiter
        self.workspace = agent.workspace
        self.request = ModelRequest(
            items=self.state.items,
            instructions=agent.instructions,
            tools=agent.tool_schemas,
            tool_choice=agent.tool_choice,
            parallel_tool_calls=agent.parallel_tool_calls,
            settings=agent.settings,
        )

    @property
    def has_output(self) -> bool:
        return self.output_value is not _NO_OUTPUT

    def elapsed(self) -> float:
        """Active time of the run across pauses (time while paused does not count)."""
        return self.state.elapsed_s + (time.monotonic() - self.started)

    def record_change(self, path: str, lines_changed: int) -> None:
        """Count what a writing tool reports (``ToolContext.record_change``)."""
        self.state.files_modified.add(normalise(path, str(self.workspace)))
        self.state.lines_changed += lines_changed
