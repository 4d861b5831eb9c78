"""The OpenAI Responses API (``openai-responses:<model>``), and Open Responses servers.

Our items are the Open Responses item model, so translation is thin (see
:mod:`.openai_responses_wire`); reasoning items with ``encrypted_content`` are passed back so
that reasoning models keep their chain of thought across turns. Streaming maps
``response.output_text.delta`` to text deltas, ``response.function_call_arguments.delta`` to
tool-call deltas, reasoning summary (and raw reasoning) deltas to reasoning deltas, and the
terminal ``response.completed`` / ``response.incomplete`` to the final response.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from typing import Any

import openai
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseErrorEvent,
    ResponseFailedEvent,
    ResponseFunctionCallArgumentsDeltaEvent,
    ResponseIncompleteEvent,
    ResponseOutputItemAddedEvent,
    ResponseReasoningSummaryTextDeltaEvent,
    ResponseReasoningTextDeltaEvent,
    ResponseStreamEvent,
    ResponseTextDeltaEvent,
)

from agentloop.errors import ProviderUnavailable
from agentloop.models.base import (
    ModelRequest,
    ModelResponse,
    ReasoningDelta,
    ResponseDone,
    StreamPart,
    TextDelta,
    ToolCallDelta,
)
from agentloop.models.openai_client import OpenAIModelBase, split_body
from agentloop.models.openai_errors import error_from_code, map_openai_error
from agentloop.models.openai_responses_wire import build_responses_body, parse_response
from agentloop.models.openai_tools import StrictTools
from agentloop.models.retry import call_with_retries, stream_with_retries

__all__ = ["OpenAIResponsesModel"]

# request-body keys that are create() parameters; anything else goes through extra_body
_RESPONSES_KEYS = frozenset(
    {"model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls",
     "temperature", "top_p", "max_output_tokens", "reasoning", "include", "text"}
)  # fmt: skip


class OpenAIResponsesModel(OpenAIModelBase):
    """A model behind the Responses API; same options as
    :class:`~agentloop.models.openai_chat.OpenAIChatModel`."""

    prefix = "openai-responses"

    async def request(self, request: ModelRequest) -> ModelResponse:
        body, strict = build_responses_body(
            self.model_name, request, strict_tools=self.strict_tools
        )

        async def once() -> ModelResponse:
            try:
                response: Response = await self.client.responses.create(
                    **split_body(body, _RESPONSES_KEYS)
                )
            except openai.OpenAIError as exc:
                raise map_openai_error(exc, provider=self.provider) from exc
            _check_failed(response, self.provider)
            return parse_response(response, strict)

        response, retries = await call_with_retries(once, self.retry, sleep=self.sleep)
        return replace(response, retries=retries)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamPart]:
        body, strict = build_responses_body(
            self.model_name, request, strict_tools=self.strict_tools
        )

        def open_stream() -> AsyncIterator[StreamPart]:
            return self._stream_once(body, strict)

        async for part in stream_with_retries(open_stream, self.retry, sleep=self.sleep):
            yield part

    async def _stream_once(
        self, body: dict[str, Any], strict: StrictTools
    ) -> AsyncIterator[StreamPart]:
        state = _StreamState(strict=strict, provider=self.provider)
        try:
            events = await self.client.responses.create(
                **split_body(body, _RESPONSES_KEYS), stream=True
            )
            async with events:
                async for event in events:
                    for part in state.handle(event):
                        yield part
                    if state.final is not None:
                        break
        except openai.OpenAIError as exc:
            raise map_openai_error(exc, provider=self.provider) from exc
        if state.final is None:
            raise ProviderUnavailable(f"{self.provider}: the stream ended before the response did")
        yield ResponseDone(response=state.final)


def _check_failed(response: Response, provider: str) -> None:
    """Raise the typed error of a response whose status is ``failed``."""
    if response.status != "failed":
        return
    error = response.error
    if error is None:
        raise ProviderUnavailable(f"{provider}: the response failed")
    raise error_from_code(error.code, error.message, provider=provider)


@dataclass
class _StreamState:
    """Turns stream events into stream parts; ``final`` is set by the terminal event."""

    strict: StrictTools
    provider: str
    calls: dict[int, tuple[int, str | None, str | None]] = field(default_factory=dict)
    """output_index -> (our call index, call_id, name)"""
    final: ModelResponse | None = None

    def handle(self, event: ResponseStreamEvent) -> list[StreamPart]:
        if isinstance(event, ResponseTextDeltaEvent):
            return [TextDelta(delta=event.delta)] if event.delta else []
        if isinstance(
            event, ResponseReasoningSummaryTextDeltaEvent | ResponseReasoningTextDeltaEvent
        ):
            return [ReasoningDelta(delta=event.delta)] if event.delta else []
        if isinstance(event, ResponseOutputItemAddedEvent):
            item = event.item
            if item.type != "function_call":
                return []
            return [self._call(event.output_index, "", item.call_id, item.name)]
        if isinstance(event, ResponseFunctionCallArgumentsDeltaEvent):
            return [self._call(event.output_index, event.delta)]
        if isinstance(event, ResponseCompletedEvent | ResponseIncompleteEvent):
            self.final = parse_response(event.response, self.strict)
        elif isinstance(event, ResponseFailedEvent):
            _check_failed(event.response, self.provider)
            raise ProviderUnavailable(f"{self.provider}: the response failed")
        elif isinstance(event, ResponseErrorEvent):
            raise error_from_code(event.code, event.message, provider=self.provider)
        return []

    def _call(
        self, output_index: int, delta: str, call_id: str | None = None, name: str | None = None
    ) -> ToolCallDelta:
        if output_index not in self.calls:
            self.calls[output_index] = (len(self.calls), call_id, name)
        index, known_id, known_name = self.calls[output_index]
        return ToolCallDelta(index=index, call_id=known_id, name=known_name, arguments_delta=delta)
