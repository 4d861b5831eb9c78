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
from dataclasses import replace
from types import ModuleType
from typing import Any

from openai.types.chat import ChatCompletion, ChatCompletionChunk

from agentloop.errors import (
    ConfigError,
    ContextWindowExceeded,
    ModelError,
    ProviderUnavailable,
)
from agentloop.models.base import (
    Model,
    ModelRequest,
    ModelResponse,
    ResponseDone,
    StreamPart,
)
from agentloop.models.http_errors import TRANSPORT_ERRORS, retry_after, status_error
from agentloop.models.openai_chat_wire import (
    ChatStreamAssembly,
    build_chat_body,
    parse_completion,
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
        assembly = ChatStreamAssembly()
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
