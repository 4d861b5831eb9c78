"""OpenAI Chat Completions, and every server that speaks it (``openai:<model>``).

Works with OpenAI and, through ``base_url`` / ``OPENAI_BASE_URL``, with vLLM, Ollama's /v1,
LM Studio, Groq, Together and OpenRouter. Reasoning items are dropped from the conversation
sent: Chat Completions has no such concept (use ``openai-responses`` to keep reasoning across
turns). Failures are mapped to agentloop's typed errors and retried by :mod:`.retry`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import httpx2
import openai
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from agentloop.errors import ProviderUnavailable
from agentloop.items import FunctionCall, new_id
from agentloop.models.base import (
    Model,
    ModelRequest,
    ModelResponse,
    ReasoningDelta,
    ResponseDone,
    StreamPart,
    TextDelta,
    ToolCallDelta,
)
from agentloop.models.openai_chat_wire import (
    assemble_items,
    build_chat_body,
    chat_usage,
    finish_reason,
    parse_completion,
    reasoning_text,
)
from agentloop.models.openai_client import make_client, provider_label, split_body
from agentloop.models.openai_errors import map_openai_error
from agentloop.models.openai_tools import StrictTools
from agentloop.models.retry import RetryPolicy, Sleep, call_with_retries, stream_with_retries

__all__ = ["OpenAIChatModel"]

# request-body keys that are create() parameters; anything else goes through extra_body
_CHAT_KEYS = frozenset(
    {"model", "messages", "tools", "tool_choice", "parallel_tool_calls", "temperature", "top_p",
     "max_completion_tokens", "reasoning_effort", "response_format", "stream_options"}
)  # fmt: skip


class OpenAIChatModel(Model):
    """A model behind the Chat Completions API.

    ``strict_tools`` sends every tool whose schema allows it with ``strict: true`` (a tool whose
    :class:`~agentloop.models.base.ToolSchema` says ``strict`` always goes strict).
    ``context_window`` is the model's size in tokens, for compaction; ``http_client`` is an
    ``httpx2.AsyncClient`` for the SDK (proxies, custom transports). ``sleep`` is how retries wait.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        organization: str | None = None,
        client: openai.AsyncOpenAI | None = None,
        retry: RetryPolicy | None = None,
        strict_tools: bool = False,
        timeout: float | None = None,
        default_headers: Mapping[str, str] | None = None,
        context_window: int | None = None,
        http_client: httpx2.AsyncClient | None = None,
    ) -> None:
        self.model_name = model
        self.name = f"openai:{model}"
        self.client = make_client(
            client=client,
            api_key=api_key,
            base_url=base_url,
            organization=organization,
            timeout=timeout,
            default_headers=default_headers,
            http_client=http_client,
        )
        self._owns_client = client is None and http_client is None
        self.provider = provider_label(self.client)
        self.retry = retry or RetryPolicy()
        self.strict_tools = strict_tools
        self.context_window = context_window
        self.sleep: Sleep = asyncio.sleep

    def __repr__(self) -> str:
        return f"OpenAIChatModel({self.model_name!r}, provider={self.provider!r})"

    async def request(self, request: ModelRequest) -> ModelResponse:
        body, strict = build_chat_body(self.model_name, request, strict_tools=self.strict_tools)

        async def once() -> ChatCompletion:
            try:
                completion: ChatCompletion = await self.client.chat.completions.create(
                    **split_body(body, _CHAT_KEYS)
                )
            except openai.OpenAIError as exc:
                raise map_openai_error(exc, provider=self.provider) from exc
            return completion

        completion, retries = await call_with_retries(once, self.retry, sleep=self.sleep)
        return replace(parse_completion(completion, strict), retries=retries)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamPart]:
        body, strict = build_chat_body(self.model_name, request, strict_tools=self.strict_tools)
        body["stream_options"] = {"include_usage": True}

        def open_stream() -> AsyncIterator[StreamPart]:
            return self._stream_once(body, strict)

        async for part in stream_with_retries(open_stream, self.retry, sleep=self.sleep):
            yield part

    async def _stream_once(
        self, body: dict[str, Any], strict: StrictTools
    ) -> AsyncIterator[StreamPart]:
        assembly = _Assembly()
        try:
            chunks = await self.client.chat.completions.create(
                **split_body(body, _CHAT_KEYS), stream=True
            )
            async with chunks:
                async for chunk in chunks:
                    for part in assembly.add(chunk):
                        yield part
        except openai.OpenAIError as exc:
            raise map_openai_error(exc, provider=self.provider) from exc
        if not assembly.chunks:
            raise ProviderUnavailable(f"{self.provider}: the stream ended before any answer")
        yield ResponseDone(response=assembly.response(strict))

    async def aclose(self) -> None:
        if self._owns_client:  # a client or http_client the caller gave stays theirs
            await self.client.close()


@dataclass
class _Call:
    call_id: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class _Assembly:
    """Collects a streamed completion: text, reasoning, and tool calls by index."""

    text: list[str] = field(default_factory=list)
    refusal: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: dict[int, _Call] = field(default_factory=dict)
    slots: dict[int, int] = field(default_factory=dict)  # wire index -> our call index
    chunks: int = 0
    finish: str | None = None
    usage: Any = None
    model: str | None = None

    def add(self, chunk: ChatCompletionChunk) -> list[StreamPart]:
        parts: list[StreamPart] = []
        self.chunks += 1
        self.model = chunk.model or self.model
        if chunk.usage is not None:
            self.usage = chunk.usage
        for choice in chunk.choices[:1]:
            delta = choice.delta
            if choice.finish_reason is not None:
                self.finish = choice.finish_reason
            thought = reasoning_text(delta)
            if thought:
                self.reasoning.append(thought)
                parts.append(ReasoningDelta(delta=thought))
            if delta.content:
                self.text.append(delta.content)
                parts.append(TextDelta(delta=delta.content))
            if delta.refusal:
                self.refusal.append(delta.refusal)
            for tc in delta.tool_calls or ():
                parts.append(self._call_fragment(tc))
        return parts

    def _call_fragment(self, tc: Any) -> ToolCallDelta:
        call_id = getattr(tc, "id", None) or None
        function = getattr(tc, "function", None)
        name = getattr(function, "name", None)
        fragment = getattr(function, "arguments", None) or ""
        index = self._slot(getattr(tc, "index", None), call_id)
        call = self.calls[index]
        if call_id:
            call.call_id = call_id
        if name:
            call.name = name
        call.arguments.append(fragment)
        return ToolCallDelta(
            index=index, call_id=call.call_id, name=call.name or None, arguments_delta=fragment
        )

    def _slot(self, wire_index: int | None, call_id: str | None) -> int:
        """Our index for a fragment: by the wire index, or by id for servers that omit it."""
        if wire_index is None:
            for known, call in self.calls.items():
                if call_id is not None and call.call_id == call_id:
                    return known
            if call_id is None and self.calls:
                return len(self.calls) - 1
            return self._new_call()
        slot = self.slots.get(wire_index)
        if slot is None or (call_id and self.calls[slot].call_id not in (None, call_id)):
            # a new call; a server that reuses an index for a second call gives it a new id
            slot = self._new_call()
            self.slots[wire_index] = slot
        return slot

    def _new_call(self) -> int:
        index = len(self.calls)
        self.calls[index] = _Call()
        return index

    def response(self, strict: StrictTools) -> ModelResponse:
        calls = [
            FunctionCall(
                call_id=c.call_id or new_id("call"), name=c.name, arguments="".join(c.arguments)
            )
            for _, c in sorted(self.calls.items())
        ]
        items = assemble_items(
            reasoning="".join(self.reasoning),
            text="".join(self.text),
            refusal="".join(self.refusal),
            calls=calls,
            strict=strict,
        )
        return ModelResponse(
            items=items,
            usage=chat_usage(self.usage),
            finish_reason=finish_reason(self.finish, has_calls=bool(calls)),
            model=self.model,
        )
