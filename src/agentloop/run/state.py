"""RunState: everything needed to continue a run, as plain data with a versioned JSON form.

Pausing for client tools or approvals and resuming in another process (or on another gateway
worker) is ``state.to_json()`` there and ``RunState.from_json(text)`` here. The agent's
configuration (model, tools, policy) is not part of the state: resume with an equivalent agent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agentloop.errors import AgentloopError, StateError
from agentloop.items import Item, Usage, item_from_dict, item_to_dict
from agentloop.run.result import AuditRecord, PendingCall

STATE_VERSION = 1


@dataclass(kw_only=True)
class RunState:
    """The mutable state of one run. ``items`` is the whole conversation."""

    run_id: str
    items: list[Item]
    usage: Usage = field(default_factory=Usage)
    turns: int = 0
    tool_calls: int = 0
    consecutive_error_turns: int = 0
    pending: list[PendingCall] = field(default_factory=list)
    files_modified: set[str] = field(default_factory=set)
    lines_changed: int = 0
    elapsed_s: float = 0.0
    confirmation_asked: bool = False
    audit: list[AuditRecord] = field(default_factory=list)
    status: str = "in_progress"
    reason: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    """Room for loop extensions (structured-output attempts and the like); must be JSON-able."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "run_id": self.run_id,
            "items": [item_to_dict(i) for i in self.items],
            "usage": self.usage.to_dict(),
            "turns": self.turns,
            "tool_calls": self.tool_calls,
            "consecutive_error_turns": self.consecutive_error_turns,
            "pending": [p.to_dict() for p in self.pending],
            "files_modified": sorted(self.files_modified),
            "lines_changed": self.lines_changed,
            "elapsed_s": self.elapsed_s,
            "confirmation_asked": self.confirmation_asked,
            "audit": [a.to_dict() for a in self.audit],
            "status": self.status,
            "reason": self.reason,
            "extra": self.extra,
        }

    def to_json(self) -> str:
        """Versioned JSON; load it with :meth:`from_json`."""
        return json.dumps(self.to_dict(), separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: Any) -> RunState:
        if not isinstance(data, dict):
            raise StateError("run state must be a JSON object")
        version = data.get("version")
        if version != STATE_VERSION:
            raise StateError(
                f"run state version {version!r} is not supported (expected {STATE_VERSION})"
            )
        try:
            return cls(
                run_id=str(data["run_id"]),
                items=[item_from_dict(i) for i in data["items"]],
                usage=Usage.from_dict(data.get("usage") or {}),
                turns=int(data.get("turns", 0)),
                tool_calls=int(data.get("tool_calls", 0)),
                consecutive_error_turns=int(data.get("consecutive_error_turns", 0)),
                pending=[PendingCall.from_dict(p) for p in data.get("pending", [])],
                files_modified=set(data.get("files_modified", [])),
                lines_changed=int(data.get("lines_changed", 0)),
                elapsed_s=float(data.get("elapsed_s", 0.0)),
                confirmation_asked=bool(data.get("confirmation_asked", False)),
                audit=[AuditRecord.from_dict(a) for a in data.get("audit", [])],
                status=str(data.get("status", "in_progress")),
                reason=str(data.get("reason", "")),
                extra=dict(data.get("extra") or {}),
            )
        except AgentloopError as exc:
            raise StateError(f"run state is invalid: {exc}") from None
        except (KeyError, TypeError, ValueError) as exc:
            raise StateError(f"run state is invalid: {type(exc).__name__}: {exc}") from None

    @classmethod
    def from_json(cls, text: str | bytes) -> RunState:
        """Load a state saved with :meth:`to_json`; raises :class:`StateError` if it is not one."""
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise StateError(f"run state is not valid JSON: {exc}") from None
        return cls.from_dict(data)
