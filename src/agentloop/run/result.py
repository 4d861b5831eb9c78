"""What a run returns: :class:`RunResult`, its pending calls and its audit records."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from agentloop.items import Item, Usage

if TYPE_CHECKING:
    from agentloop.run.state import RunState

RunStatus: TypeAlias = Literal["completed", "incomplete", "requires_action", "failed", "cancelled"]
PendingKind: TypeAlias = Literal["client", "approval"]
Decision: TypeAlias = Literal["allowed", "approved", "denied", "refused", "invalid", "pending"]
Outcome: TypeAlias = Literal["success", "error", "timeout", "cancelled", "not_run"]


@dataclass(frozen=True, kw_only=True, slots=True)
class PendingCall:
    """A call the run is waiting on: the client must execute it, or a human must approve it."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    kind: PendingKind
    risk: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PendingCall:
        return cls(
            call_id=str(data["call_id"]),
            name=str(data["name"]),
            arguments=dict(data.get("arguments") or {}),
            kind=data["kind"],
            risk=data.get("risk"),
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class AuditRecord:
    """One executed or refused call: what was asked, what was decided, what happened."""

    call_id: str
    tool: str
    arguments: dict[str, Any] | str
    decision: Decision
    outcome: Outcome
    duration: float = 0.0
    cached: bool = False
    message: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AuditRecord:
        return cls(**{k: data[k] for k in data if k in cls.__dataclass_fields__})


@dataclass(frozen=True, kw_only=True)
class RunResult:
    """The outcome of ``run`` / ``resume``.

    ``status`` says how the run ended and ``reason`` why: ``final_answer``, ``max_turns``,
    ``tool_errors``, ``budget_exceeded`` (see ``budget``), ``model_error``, ``cancelled``,
    ``client_tool_call``, ``approval_required``, ``tool_choice_none``.
    """

    status: RunStatus
    reason: str
    output: Any
    items: list[Item]
    new_items: list[Item]
    usage: Usage
    turns: int
    tool_calls: int
    state: RunState
    pending: list[PendingCall] = field(default_factory=list)
    error: BaseException | None = None
    audit: list[AuditRecord] = field(default_factory=list)
    budget: str | None = None
    run_id: str = ""
    hook_errors: list[BaseException] = field(default_factory=list)
    attempts: int = 0
    output_errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "completed"
