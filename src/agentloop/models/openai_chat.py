"""OpenAI Chat Completions, and every server that speaks it (``openai:<model>``).

Works with OpenAI and, through ``base_url`` / ``OPENAI_BASE_URL``, with vLLM, Ollama's /v1,
LM Studio, Groq, Together and OpenRouter. Reasoning items are dropped from the conversation
sent: Chat Completions has no such concept (use ``openai-responses`` to keep reasoning across
turns). Failures are mapped to agentloop's typed errors and retried by :mod:`.retry`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import openai
from openai.types.chat import ChatCompletion

from agentloop.errors import ProviderUnavailable
from agentloop.models.base import (
    ModelRequest,
    ModelResponse,
    ResponseDone,
    StreamPart,
)
from agentloop.models.openai_chat_wire import (
    ChatStreamAssembly,
    build_chat_body,
    parse_completion,
)
from agentloop.models.openai_client import OpenAIModelBase, split_body
from agentloop.models.openai_errors import map_openai_error
from agentloop.models.openai_tools import StrictTools
from agentloop.models.retry import call_with_retries, stream_with_retries

__all__ = ["OpenAIChatModel"]

# request-body keys that are create() parameters; anything else goes through extra_body
_CHAT_KEYS = frozenset(
    {"model", "messages", "tools", "tool_choice", "parallel_tool_calls", "temperature", "top_p",
     "max_completion_tokens", "reasoning_effort", "response_format", "stream_options"}
)  # fmt: skip


class OpenAIChatModel(OpenAIModelBase):
    """A model behind the Chat Completions API.

    ``strict_tools`` sends every tool whose schema allows it with ``strict: true`` (a tool whose
    :class:`~agentloop.models.base.ToolSchema` says ``strict`` always goes strict).
    ``context_window`` is the model's size in tokens, for compaction; ``http_client`` is an
    ``httpx2.AsyncClient`` for the SDK (proxies, custom transports). ``sleep`` is how retries wait.
    """

    prefix = "openai"

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
        assembly = ChatStreamAssembly()
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
