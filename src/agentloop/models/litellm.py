"""LiteLLM (``litellm:<provider>/<model>``): 100+ providers through ``litellm.acompletion``.

LiteLLM speaks the OpenAI Chat Completions format both ways, so the request body and the
response parsing are the OpenAI Chat adapter's own (:mod:`agentloop.models.openai_chat_wire`):
LiteLLM's ``ModelResponse`` / stream chunks are read as OpenAI ``ChatCompletion`` /
``ChatCompletionChunk`` objects. litellm is an optional extra (``pip install 'agentloop[litellm]'``)
and is imported only when a model is made.

Keyword arguments other than ``retry`` go to every ``acompletion`` call (``api_key``,
``api_base``, ``timeout``...). LiteLLM's own retries are off (``num_retries=0``,
``max_retries=0``) so that :mod:`agentloop.models.retry` counts them, and ``drop_params=True``
lets providers that lack a setting (``parallel_tool_calls``...) ignore it; both can be overridden.
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Any

from openai.types.chat import ChatCompletion, ChatCompletionChunk

from agentloop.errors import (
    ConfigError,
    ContextWindowExceeded,
    ModelError,
    ProviderUnavailable,
)
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
from agentloop.models.http_errors import TRANSPORT_ERRORS, retry_after, status_error
from agentloop.models.openai_chat_wire import (
    assemble_items,
    build_chat_body,
    chat_usage,
    finish_reason,
    parse_completion,
    reasoning_text,
)
from agentloop.models.openai_tools import StrictTools
from agentloop.models.retry import RetryPolicy, call_with_retries, stream_with_retries

__all__ = ["LiteLLMModel", "map_litellm_error"]

PROVIDER = "LiteLLM"
INSTALL_HINT = "pip install 'agentloop[litellm]'"
_DEFAULTS = {"num_retries": 0, "max_retries": 0, "drop_params": True}


def _import_litellm() -> ModuleType:
    try:
        return importlib.import_module("litellm")
    except ImportError as exc:
        raise ConfigError(
            f"the 'litellm' provider needs the litellm package ({exc}); install it with: "
            f"{INSTALL_HINT}"
        ) from None


def _as_dict(obj: Any) -> dict[str, Any]:
    """A LiteLLM response object (pydantic ``ModelResponse``, or a plain mapping) as a dict."""
    if isinstance(obj, Mapping):
        return dict(obj)
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        data = dump()
        if isinstance(data, dict):
            return data
    raise ProviderUnavailable(f"{PROVIDER} returned an unexpected object: {type(obj).__name__}")


def map_litellm_error(exc: BaseException) -> ModelError | None:
    """LiteLLM's exception classes (OpenAI-style, with ``status_code``) as typed errors; None for
    exceptions that are not provider failures (bugs stay visible)."""
    name = type(exc).__name__
    message = str(getattr(exc, "message", None) or exc or name)
    if "ContextWindowExceeded" in name:
        return ContextWindowExceeded(f"{PROVIDER}: {message}", status_code=400)
    if "Timeout" in name or name == "APIConnectionError" or isinstance(exc, TRANSPORT_ERRORS):
        return ProviderUnavailable(f"{PROVIDER}: {message}")
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and status >= 400:
        headers = getattr(getattr(exc, "response", None), "headers", None)
        wait = retry_after(headers) if isinstance(headers, Mapping) else None
        return status_error(status, message, provider=PROVIDER, retry_after_s=wait)
    return None


class LiteLLMModel(Model):
    """Any model LiteLLM supports, named as LiteLLM names it (``anthropic/claude-...``,
    ``bedrock/...``, ``groq/...``)."""

    def __init__(self, model: str, *, retry: RetryPolicy | None = None, **kwargs: Any) -> None:
        self.litellm = _import_litellm()
        self.model = model
        self.name = f"litellm:{model}"
        self.retry = retry or RetryPolicy()
        self.kwargs = {**_DEFAULTS, **kwargs}

    def __repr__(self) -> str:
        return f"LiteLLMModel({self.model!r})"

    async def _complete(self, body: dict[str, Any], **extra: Any) -> Any:
        try:
            return await self.litellm.acompletion(**body, **self.kwargs, **extra)
        except Exception as exc:
            mapped = map_litellm_error(exc)
            if mapped is None:
                raise
            raise mapped from exc

    async def request(self, request: ModelRequest) -> ModelResponse:
        body, strict = build_chat_body(self.model, request, strict_tools=False)

        async def once() -> Any:
            return await self._complete(body)

        raw, retries = await call_with_retries(once, self.retry)
        completion = ChatCompletion.construct(**_as_dict(raw))
        return replace(parse_completion(completion, strict), retries=retries)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamPart]:
        body, strict = build_chat_body(self.model, request, strict_tools=False)
        async for part in stream_with_retries(lambda: self._stream_once(body, strict), self.retry):
            yield part

    async def _stream_once(
        self, body: dict[str, Any], strict: StrictTools
    ) -> AsyncIterator[StreamPart]:
        assembly = _ChunkAssembly()
        chunks = await self._complete(body, stream=True, stream_options={"include_usage": True})
        try:
            async for raw in chunks:
                for part in assembly.add(ChatCompletionChunk.construct(**_as_dict(raw))):
                    yield part
        except Exception as exc:
            mapped = map_litellm_error(exc)
            if mapped is None:
                raise
            raise mapped from exc
        if not assembly.chunks:
            raise ProviderUnavailable(f"{PROVIDER}: the stream ended before any answer")
        yield ResponseDone(response=assembly.response(strict))


@dataclass
class _ChunkAssembly:
    """Collects streamed chunks: text, reasoning, and tool-call fragments by their index.

    (The OpenAI Chat adapter has the same assembly as a private class; this is the LiteLLM
    side, which can share it once it is public.)"""

    text: list[str] = field(default_factory=list)
    refusal: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: dict[int, dict[str, Any]] = field(default_factory=dict)
    chunks: int = 0
    finish: str | None = None
    usage: Any = None
    model: str | None = None

    def add(self, chunk: ChatCompletionChunk) -> list[StreamPart]:
        self.chunks += 1
        self.model = chunk.model or self.model
        if getattr(chunk, "usage", None) is not None:
            self.usage = chunk.usage
        parts: list[StreamPart] = []
        for choice in (chunk.choices or [])[:1]:
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
            if getattr(delta, "refusal", None):
                self.refusal.append(str(delta.refusal))
            for tc in delta.tool_calls or ():
                parts.append(self._fragment(tc))
        return parts

    def _fragment(self, tc: Any) -> ToolCallDelta:
        index = tc.index if isinstance(tc.index, int) else len(self.calls)
        call = self.calls.setdefault(index, {"id": None, "name": "", "arguments": []})
        function = tc.function
        if tc.id:
            call["id"] = tc.id
        if function is not None and function.name:
            call["name"] = function.name
        fragment = (function.arguments if function is not None else None) or ""
        call["arguments"].append(fragment)
        return ToolCallDelta(
            index=sorted(self.calls).index(index),
            call_id=tc.id or None,
            name=(function.name if function is not None else None) or None,
            arguments_delta=fragment,
        )

    def response(self, strict: StrictTools) -> ModelResponse:
        calls = [
            FunctionCall(call_id=c["id"] or new_id("call"), name=c["name"],
                         arguments="".join(c["arguments"]))
            for _, c in sorted(self.calls.items())
        ]  # fmt: skip
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
