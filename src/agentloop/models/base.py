"""What the loop asks of a model, and what it gets back.

A :class:`Model` turns a :class:`ModelRequest` (instructions, the conversation as items, tool
schemas, tool choice, settings) into a :class:`ModelResponse` (new items, usage, finish reason).
Providers translate items to their own wire format and back; nothing else in agentloop knows a
provider's format. :meth:`Model.stream` yields :data:`StreamPart` values as the answer arrives
and always ends with exactly one :class:`ResponseDone`.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeAlias

from agentloop.items import FunctionCall, Item, Message, Reasoning, Usage

FinishReason: TypeAlias = Literal["stop", "tool_calls", "length", "content_filter"]
ToolChoice: TypeAlias = str
"""``"auto"``, ``"required"``, ``"none"`` or the name of one tool that must be called."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolSchema:
    """A tool as the model sees it: name, description and JSON Schema of its arguments."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    strict: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelSettings:
    """Sampling and output settings passed through to the provider when set."""

    temperature: float | None = None
    top_p: float | None = None
    max_output_tokens: int | None = None
    reasoning: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelRequest:
    """One model call. ``items`` is the whole conversation; models must not mutate it."""

    items: Sequence[Item]
    instructions: str | None = None
    tools: Sequence[ToolSchema] = ()
    tool_choice: ToolChoice = "auto"
    parallel_tool_calls: bool = True
    settings: ModelSettings = field(default_factory=ModelSettings)
    output_schema: Mapping[str, Any] | None = None
    """A JSON Schema the final text must follow (Open Responses ``text.format``), if any."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelResponse:
    """One model answer: its output items, usage and why it stopped."""

    items: tuple[Item, ...]
    usage: Usage = field(default_factory=Usage)
    finish_reason: FinishReason = "stop"
    model: str | None = None
    retries: int = 0

    @property
    def tool_calls(self) -> list[FunctionCall]:
        return [i for i in self.items if isinstance(i, FunctionCall)]

    @property
    def text(self) -> str:
        return "".join(
            i.text for i in self.items if isinstance(i, Message) and i.role == "assistant"
        )

    @property
    def reasoning(self) -> list[Reasoning]:
        return [i for i in self.items if isinstance(i, Reasoning)]


# --- streaming ---------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class TextDelta:
    """A fragment of assistant text (also yielded by the loop as the ``text_delta`` event)."""

    type: ClassVar[str] = "text_delta"
    delta: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ReasoningDelta:
    """A fragment of reasoning (summary) text; the ``reasoning_delta`` event."""

    type: ClassVar[str] = "reasoning_delta"
    delta: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallDelta:
    """A fragment of a tool call's arguments; ``index`` orders calls within the response.

    The ``tool_call_delta`` event."""

    type: ClassVar[str] = "tool_call_delta"
    index: int
    call_id: str | None
    name: str | None
    arguments_delta: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ResponseDone:
    """The final, assembled response. Always the last part of a stream (never a loop event)."""

    type: ClassVar[str] = "response_done"
    response: ModelResponse


@dataclass(frozen=True, kw_only=True, slots=True)
class StreamWarning:
    """Something the user should know that did not stop the call (e.g. a fallback).

    The ``warning`` event."""

    type: ClassVar[str] = "warning"
    message: str


StreamPart: TypeAlias = TextDelta | ReasoningDelta | ToolCallDelta | StreamWarning | ResponseDone


class Model(abc.ABC):
    """A chat model with tool calling. Subclass and implement :meth:`request`;
    override :meth:`stream` when the provider can stream."""

    name: str = "model"

    @abc.abstractmethod
    async def request(self, request: ModelRequest) -> ModelResponse:
        """Make one model call and return the complete response."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamPart]:
        """Stream one model call. The default calls :meth:`request` and replays its text."""
        response = await self.request(request)
        text = response.text
        if text:
            yield TextDelta(delta=text)
        yield ResponseDone(response=response)

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release network resources, if any."""
