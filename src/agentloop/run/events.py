"""Events streamed out of the loop. Every event has a ``.type`` string.

The model's streaming parts (``text_delta``, ``reasoning_delta``, ``tool_call_delta``,
``warning``) are passed through unchanged, so there is one class per event, not a copy per layer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias

from agentloop.items import Item, Usage
from agentloop.models.base import ReasoningDelta, StreamWarning, TextDelta, ToolCallDelta

if TYPE_CHECKING:
    from agentloop.run.result import RunResult

__all__ = [
    "Event",
    "ItemAdded",
    "ReasoningDelta",
    "RunFinished",
    "RunStarted",
    "StreamWarning",
    "TextDelta",
    "ToolCallDelta",
    "ToolCallFinished",
    "ToolCallStarted",
    "TurnCompleted",
    "TurnStarted",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class RunStarted:
    type: ClassVar[str] = "run_started"
    run_id: str
    resumed: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class TurnStarted:
    type: ClassVar[str] = "turn_started"
    turn: int


@dataclass(frozen=True, kw_only=True, slots=True)
class ItemAdded:
    """An item was appended to the conversation (model output or tool output)."""

    type: ClassVar[str] = "item_added"
    item: Item


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallStarted:
    type: ClassVar[str] = "tool_call_started"
    call_id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallFinished:
    type: ClassVar[str] = "tool_call_finished"
    call_id: str
    name: str
    output: str
    is_error: bool
    cached: bool
    duration: float


@dataclass(frozen=True, kw_only=True, slots=True)
class TurnCompleted:
    type: ClassVar[str] = "turn_completed"
    turn: int
    usage: Usage
    """Usage of this turn's model call."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RunFinished:
    type: ClassVar[str] = "run_finished"
    result: RunResult


Event: TypeAlias = (
    RunStarted
    | TurnStarted
    | TextDelta
    | ReasoningDelta
    | ToolCallDelta
    | StreamWarning
    | ItemAdded
    | ToolCallStarted
    | ToolCallFinished
    | TurnCompleted
    | RunFinished
)
