"""Models for tests and demos: deterministic, offline, and observable.

``ScriptedModel`` plays a fixed script, one turn per model call; ``FunctionModel`` asks a
function. Both record every request they receive in ``.requests`` (``record=False`` turns that
off: each record copies the conversation, which benchmarks of the loop should not pay for).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from agentloop.errors import ScriptExhausted
from agentloop.items import FunctionCall, Item, Message, OutputText, Usage, new_id
from agentloop.models.base import (
    Model,
    ModelRequest,
    ModelResponse,
    ResponseDone,
    StreamPart,
    TextDelta,
    ToolCallDelta,
)

__all__ = ["FunctionModel", "ScriptedModel", "text", "tool_call"]

SCRIPTED_USAGE = Usage.of(10, 5)


@dataclass(frozen=True, kw_only=True, slots=True)
class TextPart:
    text: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallPart:
    name: str
    arguments: str
    call_id: str | None = None


Part: TypeAlias = TextPart | ToolCallPart
Turn: TypeAlias = Part | Sequence[Part] | BaseException


def text(content: str) -> TextPart:
    """A scripted assistant text."""
    return TextPart(text=content)


def tool_call(
    name: str, /, arguments: dict[str, Any] | str | None = None, *, call_id: str | None = None,
    **kwargs: Any,
) -> ToolCallPart:  # fmt: skip
    """A scripted tool call. ``arguments`` may be a dict, keyword arguments, or a raw string
    (to script malformed JSON). Pass arguments named ``arguments`` or ``call_id`` in the dict."""
    raw = arguments if isinstance(arguments, str) else json.dumps({**(arguments or {}), **kwargs})
    return ToolCallPart(name=name, arguments=raw, call_id=call_id)


def _response(parts: Sequence[Part], model: str) -> ModelResponse:
    """The response for a scripted turn. Its items have ids, as Open Responses output items do
    (so the loop keeps them as they are rather than copying each to give it one)."""
    texts: list[OutputText] = []
    calls: list[Item] = []
    for p in parts:
        if isinstance(p, TextPart):
            texts.append(OutputText(text=p.text))
        else:
            call_id = p.call_id or new_id("call")
            calls.append(
                FunctionCall(call_id=call_id, name=p.name, arguments=p.arguments, id=new_id("fc"))
            )
    items: list[Item] = []
    if texts:
        items.append(Message(role="assistant", content=tuple(texts), id=new_id("msg")))
    items += calls
    return ModelResponse(
        items=tuple(items),
        usage=SCRIPTED_USAGE,
        finish_reason="tool_calls" if calls else "stop",
        model=model,
    )


def _stream_parts(response: ModelResponse) -> list[StreamPart]:
    """The parts a streaming provider would send for ``response``."""
    parts: list[StreamPart] = []
    index = 0
    for item in response.items:
        if isinstance(item, Message):
            for part in item.content:
                if isinstance(part, OutputText) and part.text:
                    parts.append(TextDelta(delta=part.text))
        elif isinstance(item, FunctionCall):
            parts.append(
                ToolCallDelta(
                    index=index,
                    call_id=item.call_id,
                    name=item.name,
                    arguments_delta=item.arguments,
                )
            )
            index += 1
    parts.append(ResponseDone(response=response))
    return parts


class ScriptedModel(Model):
    """Plays ``turns`` in order: each a part, a list of parts, or an exception to raise.

    Each response reports 10 input and 5 output tokens. Asking for more turns than the script
    has raises :class:`~agentloop.errors.ScriptExhausted`. With ``record=False`` requests are
    not kept in ``.requests``.
    """

    def __init__(
        self, turns: Sequence[Turn], *, name: str = "scripted", record: bool = True
    ) -> None:
        self.turns = list(turns)
        self.name = name
        self.record = record
        self.requests: list[ModelRequest] = []
        self._next = 0

    @property
    def remaining(self) -> int:
        return len(self.turns) - self._next

    def _take(self, request: ModelRequest) -> ModelResponse:
        if self.record:
            self.requests.append(_snapshot(request))
        if self._next >= len(self.turns):
            raise ScriptExhausted(
                f"ScriptedModel ran out of script: it has {len(self.turns)} turn(s) and was "
                f"asked for turn {self._next + 1}"
            )
        turn = self.turns[self._next]
        self._next += 1
        if isinstance(turn, BaseException):
            raise turn
        parts = [turn] if isinstance(turn, TextPart | ToolCallPart) else list(turn)
        return _response(parts, self.name)

    async def request(self, request: ModelRequest) -> ModelResponse:
        return self._take(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamPart]:
        response = self._take(request)
        for part in _stream_parts(response):
            yield part


def _snapshot(request: ModelRequest) -> ModelRequest:
    """A request whose item list will not change as the conversation grows."""
    return ModelRequest(
        items=tuple(request.items),
        instructions=request.instructions,
        tools=request.tools,
        tool_choice=request.tool_choice,
        parallel_tool_calls=request.parallel_tool_calls,
        settings=request.settings,
        output_schema=request.output_schema,
    )


FunctionResult: TypeAlias = ModelResponse | str | Part | Sequence[Part]


class FunctionModel(Model):
    """Calls ``fn(request)`` (sync or async) for each turn. It may return a ModelResponse, a
    string (assistant text), a part, or a list of parts. With ``record=False`` requests are not
    kept in ``.requests``."""

    def __init__(
        self,
        fn: Callable[[ModelRequest], FunctionResult | Awaitable[FunctionResult]],
        *,
        name: str = "function",
        record: bool = True,
    ) -> None:
        self.fn = fn
        self.name = name
        self.record = record
        self.requests: list[ModelRequest] = []

    async def request(self, request: ModelRequest) -> ModelResponse:
        if self.record:
            self.requests.append(_snapshot(request))
        value = self.fn(request)
        if inspect.isawaitable(value):
            value = await value
        if isinstance(value, ModelResponse):
            return value
        if isinstance(value, str):
            return _response([TextPart(text=value)], self.name)
        if isinstance(value, TextPart | ToolCallPart):
            return _response([value], self.name)
        return _response(list(value), self.name)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamPart]:
        response = await self.request(request)
        for part in _stream_parts(response):
            yield part
