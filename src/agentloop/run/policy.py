"""Who may call what: :class:`Policy` (allow/deny lists, approvals, rate limits).

This is the one place where a call is allowed, refused or sent for approval. Every tool schema
is still sent to the model; a refused call gets an error output saying why, so the model can
change course.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from agentloop.errors import ConfigError
from agentloop.run.ratelimit import Rate
from agentloop.run.result import PendingCall

ApproveLevel: TypeAlias = Literal["none", "low", "medium", "high"]
Approver: TypeAlias = Callable[[PendingCall], "bool | Awaitable[bool]"]
_RANK = {"none": 0, "low": 1, "medium": 2, "high": 3}


@dataclass(frozen=True, kw_only=True)
class Policy:
    """Permissions for tool calls.

    ``allowed_tools`` (``None`` = all) and ``denied_tools`` refuse calls outright.
    ``auto_approve`` is the highest risk run without asking (``"none"`` asks for everything);
    riskier calls go to ``approver(call)`` (sync or async, returning True to approve) or, with no
    approver, pause the run with ``requires_action``. ``rate_limits`` maps a tool name, or
    ``"*"`` for all calls together, to a limit such as ``"10/minute"``. ``allowed_paths`` and
    ``allowed_commands`` are allowlists for tools that touch files or run commands.
    """

    allowed_tools: Collection[str] | None = None
    denied_tools: Collection[str] = ()
    auto_approve: ApproveLevel = "low"
    approver: Approver | None = None
    rate_limits: Mapping[str, str] | None = None
    allowed_paths: Collection[str] | None = None
    allowed_commands: Collection[str] | None = None
    _frozen_sets: tuple[frozenset[str] | None, frozenset[str]] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if self.auto_approve not in _RANK:
            raise ConfigError("Policy.auto_approve must be one of none, low, medium, high")
        for name in ("allowed_tools", "denied_tools"):
            if isinstance(getattr(self, name), str):
                raise ConfigError(f"Policy.{name} must be a collection of tool names, not a str")
        for key, text in (self.rate_limits or {}).items():
            if not isinstance(key, str):
                raise ConfigError("Policy.rate_limits keys must be tool names or '*'")
            Rate.parse(text)
        allowed = None if self.allowed_tools is None else frozenset(self.allowed_tools)
        object.__setattr__(self, "_frozen_sets", (allowed, frozenset(self.denied_tools)))

    def refusal(self, tool_name: str) -> str | None:
        """Why a call to ``tool_name`` is refused outright, or None."""
        allowed, denied = self._frozen_sets
        if tool_name in denied:
            return f"Tool '{tool_name}' is denied by policy."
        if allowed is not None and tool_name not in allowed:
            return f"Tool '{tool_name}' is not in the allowed tools for this run."
        return None

    def needs_approval(self, risk: str) -> bool:
        """True when a call of this risk is above the auto-approve level."""
        return _RANK.get(risk, 3) > _RANK[self.auto_approve]

    async def ask(self, call: PendingCall) -> bool | None:
        """The approver's answer, or None when there is no approver (the run must pause)."""
        if self.approver is None:
            return None
        answer = self.approver(call)
        if inspect.isawaitable(answer):
            answer = await answer
        return bool(answer)
