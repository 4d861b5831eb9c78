"""Anthropic Messages API (``anthropic:<model>``) through the official ``anthropic`` SDK.

Translation, both ways:

- instructions and system/developer messages -> ``system``; user text and images (``data:`` URLs
  as base64 sources, other URLs as url sources, file ids as file sources) -> ``user`` turns;
  assistant text -> ``assistant`` turns. Consecutive blocks of one role share a turn, so roles
  alternate as the API requires, and tool results lead their user turn.
- :class:`FunctionCall` <-> ``tool_use`` blocks (input as a JSON object; arguments that are not
  an object travel as ``{"INVALID_JSON": raw}``, see :mod:`agentloop.models.translate`);
  :class:`FunctionCallOutput` -> ``tool_result`` blocks with ``is_error`` when the call failed.
- ``thinking`` / ``redacted_thinking`` blocks <-> :class:`Reasoning` items. The thinking text is
  the item's summary and the signature (or redacted data) its ``encrypted_content``, prefixed
  with ``anthropic.thinking:`` / ``anthropic.redacted:`` so that reasoning from other providers
  is never sent to Anthropic as a thinking block.
- Tools as ``{name, description, input_schema}`` (``strict`` when asked); ``tool_choice`` auto /
  any (required) / none / ``{type: tool, name}``, with ``disable_parallel_tool_use`` when
  parallel tool calls are off. ``settings.reasoning``: ``budget_tokens`` enables extended
  thinking, ``effort`` sets ``output_config.effort``; ``settings.extra`` is merged into the body.

The SDK's own retries are off (``max_retries=0``): :mod:`agentloop.models.retry` retries and
counts. Streaming reads the SDK's raw event stream and assembles the response at ``message_stop``.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anthropic
from anthropic import types as at

from agentloop.errors import ConfigError, ModelError, ProviderUnavailable
from agentloop.items import (
    FunctionCall,
    FunctionCallOutput,
    InputImage,
    InputText,
    Item,
    Message,
    OutputText,
    Reasoning,
    Refusal,
    Usage,
)
from agentloop.models.base import (
    FinishReason,
    Model,
    ModelRequest,
    ModelResponse,
    ReasoningDelta,
    ResponseDone,
    StreamPart,
    TextDelta,
    ToolCallDelta,
    ToolSchema,
)
from agentloop.models.http_errors import (
    TRANSPORT_ERRORS,
    retry_after,
    status_error,
    transport_error,
)
from agentloop.models.retry import RetryPolicy, call_with_retries, stream_with_retries
from agentloop.models.translate import arguments_object, is_system, split_data_url, system_prompt

__all__ = ["REDACTED_PREFIX", "THINKING_PREFIX", "AnthropicModel"]

PROVIDER = "Anthropic"
API_KEY_ENV = "ANTHROPIC_API_KEY"
THINKING_PREFIX = "anthropic.thinking:"
REDACTED_PREFIX = "anthropic.redacted:"

_FINISH: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}
# the HTTP status an error *event* inside a 200 stream stands for
_ERROR_TYPE_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}


# --- request ---------------------------------------------------------------------------------


def _image_block(part: InputImage) -> dict[str, Any] | None:
    if part.file_id is not None:
        return {"type": "image", "source": {"type": "file", "file_id": part.file_id}}
    if not part.image_url:
        return None
    inline = split_data_url(part.image_url)
    if inline is not None:
        media_type, data = inline
        source = {"type": "base64", "media_type": media_type, "data": data}
        return {"type": "image", "source": source}
    return {"type": "image", "source": {"type": "url", "url": part.image_url}}


def _content_block(part: Any) -> dict[str, Any] | None:
    if isinstance(part, InputText | OutputText):
        return {"type": "text", "text": part.text} if part.text else None
    if isinstance(part, Refusal):
        return {"type": "text", "text": part.refusal} if part.refusal else None
    if isinstance(part, InputImage):
        return _image_block(part)
    return None


def _thinking_block(item: Reasoning) -> dict[str, Any] | None:
    blob = item.encrypted_content or ""
    if blob.startswith(THINKING_PREFIX):
        text = "".join(item.summary or item.content)
        return {"type": "thinking", "thinking": text, "signature": blob[len(THINKING_PREFIX) :]}
    if blob.startswith(REDACTED_PREFIX):
        return {"type": "redacted_thinking", "data": blob[len(REDACTED_PREFIX) :]}
    return None  # reasoning from another provider (or without a signature) cannot be replayed


def to_messages(items: Sequence[Item]) -> list[dict[str, Any]]:
    """The conversation as Anthropic ``messages`` (system/developer messages left out)."""
    messages: list[dict[str, Any]] = []

    def add(role: str, block: dict[str, Any] | None) -> None:
        if block is None:
            return
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].append(block)
        else:
            messages.append({"role": role, "content": [block]})

    for item in items:
        if isinstance(item, Message):
            if not is_system(item):
                role = "assistant" if item.role == "assistant" else "user"
                for part in item.content:
                    add(role, _content_block(part))
        elif isinstance(item, FunctionCall):
            block = {"type": "tool_use", "id": item.call_id, "name": item.name}
            add("assistant", {**block, "input": arguments_object(item.arguments)})
        elif isinstance(item, FunctionCallOutput):
            result: dict[str, Any] = {"type": "tool_result", "tool_use_id": item.call_id}
            if item.output:
                result["content"] = item.output
            if item.is_error:
                result["is_error"] = True
            add("user", result)
        elif isinstance(item, Reasoning):
            add("assistant", _thinking_block(item))
    for message in messages:  # tool results must open their user turn
        if message["role"] == "user":
            message["content"].sort(key=lambda b: b["type"] != "tool_result")
    return messages


def tool_param(tool: ToolSchema) -> dict[str, Any]:
    """One tool definition."""
    param: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "input_schema": dict(tool.parameters) or {"type": "object", "properties": {}},
    }
    if tool.strict:
        param["strict"] = True
    return param


def tool_choice_param(choice: str, parallel: bool) -> dict[str, Any]:
    """``tool_choice`` for auto / required / none / a tool name."""
    if choice == "none":
        return {"type": "none"}
    if choice == "auto":
        param: dict[str, Any] = {"type": "auto"}
    elif choice == "required":
        param = {"type": "any"}
    else:
        param = {"type": "tool", "name": choice}
    if not parallel:
        param["disable_parallel_tool_use"] = True
    return param


def _reasoning_params(reasoning: Mapping[str, Any] | None) -> dict[str, Any]:
    if not reasoning:
        return {}
    out: dict[str, Any] = {}
    budget = reasoning.get("budget_tokens")
    if budget is not None:
        out["thinking"] = {"type": "enabled", "budget_tokens": int(budget)}
    effort = reasoning.get("effort")
    if effort is not None:
        out["output_config"] = {"effort": "low" if effort == "minimal" else effort}
    return out


def request_params(request: ModelRequest, *, model: str, max_tokens: int) -> dict[str, Any]:
    """The body of one Messages API call, without ``stream``."""
    settings = request.settings
    params: dict[str, Any] = {
        "model": model,
        "max_tokens": settings.max_output_tokens or max_tokens,
        "messages": to_messages(request.items),
    }
    system = system_prompt(request)
    if system:
        params["system"] = system
    if request.tools:
        params["tools"] = [tool_param(t) for t in request.tools]
        params["tool_choice"] = tool_choice_param(request.tool_choice, request.parallel_tool_calls)
    if settings.temperature is not None:
        params["temperature"] = settings.temperature
    if settings.top_p is not None:
        params["top_p"] = settings.top_p
    params.update(_reasoning_params(settings.reasoning))
    if request.output_schema is not None:
        output_config = params.setdefault("output_config", {})
        output_config["format"] = {"type": "json_schema", "schema": dict(request.output_schema)}
    return params


# --- response --------------------------------------------------------------------------------


@dataclass(kw_only=True, slots=True)
class _Block:
    """One content block, from a response or assembled from stream events."""

    kind: str
    text: list[str] = field(default_factory=list)
    call_id: str = ""
    name: str = ""
    signature: str = ""
    data: str = ""
    tool_index: int = -1


def _block_from_sdk(block: Any) -> _Block:
    kind = getattr(block, "type", "")
    if isinstance(block, at.TextBlock):
        return _Block(kind=kind, text=[block.text])
    if isinstance(block, at.ToolUseBlock):
        args = json.dumps(block.input, ensure_ascii=False)
        return _Block(kind=kind, call_id=block.id, name=block.name, text=[args])
    if isinstance(block, at.ThinkingBlock):
        return _Block(kind=kind, text=[block.thinking], signature=block.signature)
    if isinstance(block, at.RedactedThinkingBlock):
        return _Block(kind=kind, data=block.data)
    return _Block(kind="other")


def _items(blocks: Sequence[_Block]) -> list[Item]:
    items: list[Item] = []
    texts: list[OutputText] = []

    def flush() -> None:
        if texts:
            items.append(Message(role="assistant", content=tuple(texts)))
            texts.clear()

    for block in blocks:
        if block.kind == "text":
            text = "".join(block.text)
            if text:
                texts.append(OutputText(text=text))
            continue
        flush()
        if block.kind == "tool_use":
            arguments = "".join(block.text) or "{}"
            items.append(FunctionCall(call_id=block.call_id, name=block.name, arguments=arguments))
        elif block.kind == "thinking":
            text = "".join(block.text)
            items.append(
                Reasoning(
                    summary=(text,) if text else (),
                    encrypted_content=THINKING_PREFIX + block.signature,
                )
            )
        elif block.kind == "redacted_thinking":
            items.append(Reasoning(encrypted_content=REDACTED_PREFIX + block.data))
    flush()
    return items


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0


def usage_from(usage: Mapping[str, Any]) -> Usage:
    """Anthropic usage (as a dict) -> ours. Input counts every prompt token, cached or not."""
    cache_read = _int(usage.get("cache_read_input_tokens"))
    cache_write = _int(usage.get("cache_creation_input_tokens"))
    details = usage.get("output_tokens_details") or {}
    return Usage.of(
        _int(usage.get("input_tokens")) + cache_read + cache_write,
        _int(usage.get("output_tokens")),
        cached_input_tokens=cache_read,
        reasoning_tokens=_int(details.get("thinking_tokens")),
    )


def finish_reason(stop_reason: str | None, items: Sequence[Item]) -> FinishReason:
    """Anthropic ``stop_reason`` -> stop / tool_calls / length / content_filter."""
    if stop_reason in _FINISH:
        return _FINISH[stop_reason]
    return "tool_calls" if any(isinstance(i, FunctionCall) for i in items) else "stop"


def response_from(message: at.Message, *, retries: int = 0) -> ModelResponse:
    """A complete (non-streamed) Messages API response as a :class:`ModelResponse`."""
    items = _items([_block_from_sdk(b) for b in message.content])
    return ModelResponse(
        items=tuple(items),
        usage=usage_from(message.usage.model_dump()),
        finish_reason=finish_reason(message.stop_reason, items),
        model=message.model,
        retries=retries,
    )


# --- errors ----------------------------------------------------------------------------------


def _body_error(body: object) -> tuple[str | None, str | None]:
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return None, None
    kind, message = error.get("type"), error.get("message")
    return (kind if isinstance(kind, str) else None, message if isinstance(message, str) else None)


def map_error(exc: BaseException, *, base_url: str | None = None) -> ModelError:
    """An ``anthropic`` SDK (or transport) exception as agentloop's typed error."""
    if isinstance(exc, anthropic.APIStatusError):
        kind, message = _body_error(exc.body)
        status = exc.status_code
        if status < 400:  # an error event inside a streamed 200 response
            status = _ERROR_TYPE_STATUS.get(kind or "", 500)
        return status_error(
            status,
            message or exc.message,
            provider=PROVIDER,
            retry_after_s=retry_after(exc.response.headers),
        )
    if isinstance(exc, anthropic.APIConnectionError):
        cause = exc.__cause__ or exc
        return transport_error(cause, provider=PROVIDER, url=base_url)
    if isinstance(exc, TRANSPORT_ERRORS):
        return transport_error(exc, provider=PROVIDER, url=base_url)
    return ModelError(f"{PROVIDER}: {exc}")


# keyword arguments every supported SDK version names; others travel in ``extra_body``
_SDK_KEYS = frozenset(
    {"model", "max_tokens", "messages", "system", "tools", "tool_choice", "thinking"}
)
_SDK_ERRORS: tuple[type[BaseException], ...] = (anthropic.AnthropicError, *TRANSPORT_ERRORS)


# --- streaming -------------------------------------------------------------------------------


class _StreamAssembler:
    """Turns raw stream events into :data:`StreamPart` values and the final response."""

    def __init__(self) -> None:
        self.blocks: dict[int, _Block] = {}
        self.tool_calls = 0
        self.model: str | None = None
        self.usage: dict[str, Any] = {}
        self.stop_reason: str | None = None
        self.done = False

    def feed(self, event: Any) -> list[StreamPart]:
        if isinstance(event, at.RawMessageStartEvent):
            self.model = event.message.model
            self.usage = event.message.usage.model_dump()
        elif isinstance(event, at.RawContentBlockStartEvent):
            return self._start(event.index, event.content_block)
        elif isinstance(event, at.RawContentBlockDeltaEvent):
            return self._delta(event.index, event.delta)
        elif isinstance(event, at.RawMessageDeltaEvent):
            self.stop_reason = event.delta.stop_reason or self.stop_reason
            delta_usage = event.usage.model_dump(exclude_none=True)
            self.usage = {**self.usage, **delta_usage}
        elif isinstance(event, at.RawMessageStopEvent):
            self.done = True
        return []

    def _start(self, index: int, block: Any) -> list[StreamPart]:
        assembled = _block_from_sdk(block)
        parts: list[StreamPart] = []
        if assembled.kind == "tool_use":
            assembled.text = []  # the input arrives as input_json_delta fragments
            assembled.tool_index = self.tool_calls
            self.tool_calls += 1
            parts.append(
                ToolCallDelta(
                    index=assembled.tool_index,
                    call_id=assembled.call_id,
                    name=assembled.name,
                    arguments_delta="",
                )
            )
        elif assembled.kind == "text" and "".join(assembled.text):
            parts.append(TextDelta(delta="".join(assembled.text)))
        self.blocks[index] = assembled
        return parts

    def _delta(self, index: int, delta: Any) -> list[StreamPart]:
        block = self.blocks.setdefault(index, _Block(kind="other"))
        if isinstance(delta, at.TextDelta):
            block.text.append(delta.text)
            return [TextDelta(delta=delta.text)] if delta.text else []
        if isinstance(delta, at.InputJSONDelta):
            block.text.append(delta.partial_json)
            if not delta.partial_json:
                return []
            return [
                ToolCallDelta(
                    index=block.tool_index,
                    call_id=None,
                    name=None,
                    arguments_delta=delta.partial_json,
                )
            ]
        if isinstance(delta, at.ThinkingDelta):
            block.text.append(delta.thinking)
            return [ReasoningDelta(delta=delta.thinking)] if delta.thinking else []
        if isinstance(delta, at.SignatureDelta):
            block.signature += delta.signature
        return []

    def response(self, retries: int = 0) -> ModelResponse:
        items = _items([self.blocks[i] for i in sorted(self.blocks)])
        return ModelResponse(
            items=tuple(items),
            usage=usage_from(self.usage),
            finish_reason=finish_reason(self.stop_reason, items),
            model=self.model,
            retries=retries,
        )


# --- the model -------------------------------------------------------------------------------


class AnthropicModel(Model):
    """A Claude model through the Messages API. The key comes from ``api_key`` or
    ``ANTHROPIC_API_KEY``; ``client`` takes a ready ``anthropic.AsyncAnthropic`` instead (a copy
    of it with SDK retries off is used).

    ``max_tokens`` is the output cap when the settings give none (the API requires one);
    ``context_window`` records the model's window size in tokens for whoever needs it.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: anthropic.AsyncAnthropic | None = None,
        retry: RetryPolicy | None = None,
        max_tokens: int = 4096,
        timeout: float | None = None,
        context_window: int | None = None,
    ) -> None:
        self.model = model
        self.name = f"anthropic:{model}"
        self.retry = retry or RetryPolicy()
        self.max_tokens = max_tokens
        self.context_window = context_window
        if client is None:
            key = api_key or os.environ.get(API_KEY_ENV)
            if not key:
                raise ConfigError(
                    f"the Anthropic API key is missing: set {API_KEY_ENV} or pass api_key="
                )
            options: dict[str, Any] = {"api_key": key, "base_url": base_url, "max_retries": 0}
            if timeout is not None:
                options["timeout"] = timeout
            self.client = anthropic.AsyncAnthropic(**options)
        else:  # a copy that shares the caller's connection pool, with SDK retries off
            self.client = client.with_options(max_retries=0)
        self._owns_client = client is None
        self.base_url = str(self.client.base_url)

    def __repr__(self) -> str:
        return f"AnthropicModel({self.model!r})"

    def _body(self, request: ModelRequest) -> dict[str, Any]:
        """SDK keyword arguments: what the SDK names, the rest (sampling, extras) as extra_body."""
        params = request_params(request, model=self.model, max_tokens=self.max_tokens)
        extra = {key: params.pop(key) for key in list(params) if key not in _SDK_KEYS}
        extra.update(request.settings.extra)
        if extra:
            params["extra_body"] = extra
        return params

    async def request(self, request: ModelRequest) -> ModelResponse:
        params = self._body(request)

        async def once() -> at.Message:
            try:
                message: at.Message = await self.client.messages.create(**params)
            except _SDK_ERRORS as exc:
                raise map_error(exc, base_url=self.base_url) from exc
            return message

        message, retries = await call_with_retries(once, self.retry)
        return response_from(message, retries=retries)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamPart]:
        params = self._body(request)
        async for part in stream_with_retries(lambda: self._stream_once(params), self.retry):
            yield part

    async def _stream_once(self, params: dict[str, Any]) -> AsyncIterator[StreamPart]:
        assembler = _StreamAssembler()
        try:
            events = await self.client.messages.create(**params, stream=True)
            try:
                async for event in events:
                    for part in assembler.feed(event):
                        yield part
            finally:
                await events.close()
        except _SDK_ERRORS as exc:
            raise map_error(exc, base_url=self.base_url) from exc
        if not assembler.done:
            raise ProviderUnavailable(f"{PROVIDER}'s stream ended before message_stop")
        yield ResponseDone(response=assembler.response())

    async def aclose(self) -> None:
        """Close the HTTP client if this model made it (a caller's client stays open)."""
        if self._owns_client:
            await self.client.close()
