"""Events streamed out of the loop. Every event has a ``.type`` string.

The model's streaming parts (``text_delta``, ``reasoning_delta``, ``tool_call_delta``,
``warning``) are passed through unchanged, so there is one class per event, not a copy per layer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias

from agentloop.items import Item, Usage
from agentloop.models.base import (
    ModelResponse,
    ReasoningDelta,
    StreamWarning,
    TextDelta,
    ToolCallDelta,
)

if TYPE_CHECKING:
    from agentloop.run.result import RunResult

__all__ = [
    "AttemptStarted",
    "Event",
    "ItemAdded",
    "ModelResponded",
    "OutputValidationFailed",
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
class ModelResponded:
    """The model's complete answer for this turn (after its items were added)."""

    type: ClassVar[str] = "model_response"
    response: ModelResponse


@dataclass(frozen=True, kw_only=True, slots=True)
class AttemptStarted:
    """A structured-output attempt starts (1-based)."""

    type: ClassVar[str] = "attempt_started"
    attempt: int


@dataclass(frozen=True, kw_only=True, slots=True)
class OutputValidationFailed:
    """A structured output was rejected; ``errors`` were sent back to the model."""

    type: ClassVar[str] = "output_validation_failed"
    attempt: int
    errors: tuple[str, ...]


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
    | ModelResponded
    | AttemptStarted
    | OutputValidationFailed
    | ToolCallStarted
    | ToolCallFinished
    | TurnCompleted
    | RunFinished
)
