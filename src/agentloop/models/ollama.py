"""Ollama's native chat API (``ollama:<model>``, ``POST /api/chat``) over ``httpx``.

Translation, both ways:

- instructions and system/developer messages -> one leading ``system`` message; user text and
  ``data:`` images -> ``user`` messages with base64 ``images`` (Ollama cannot fetch image URLs:
  those are mentioned in the text instead); assistant text -> ``assistant`` messages.
- :class:`FunctionCall` -> ``tool_calls`` on the assistant message (arguments as an object, see
  :mod:`agentloop.models.translate` for broken JSON); :class:`FunctionCallOutput` -> ``tool``
  messages with ``tool_name`` and ``tool_call_id``. Ollama has no error flag for tool results, so
  failed calls are sent as ``"Error: <output>"``. Calls without an id get a fresh ``call_...`` one.
- ``thinking`` -> :class:`Reasoning` content (``settings.reasoning`` turns ``think`` on; an
  ``effort`` of low/medium/high is passed as the think level).
- Tools in OpenAI function format. Ollama has no ``tool_choice``: ``none`` sends no tools, a forced
  name sends only that tool, ``required`` sends them all; ``parallel_tool_calls`` is ignored.
- ``options`` (constructor) plus temperature / top_p / ``num_predict`` from the settings and
  ``settings.extra`` entries go to ``options`` (``keep_alive``, ``think`` and ``format`` in
  ``extra`` are request fields); ``output_schema`` -> ``format``.

Errors: a 400 saying the model "does not support tools" is
:class:`~agentloop.errors.ToolsNotSupported` (the text-mode fallback catches it), 404 is
:class:`~agentloop.errors.ModelNotFound`, and a refused connection says Ollama is not reachable.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import httpx

from agentloop.errors import BadRequest, ModelError, ModelNotFound, ProviderUnavailable
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
    new_id,
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
)
from agentloop.models.http_errors import retry_after, status_error
from agentloop.models.retry import RetryPolicy, call_with_retries, stream_with_retries
from agentloop.models.translate import (
    arguments_json,
    arguments_object,
    call_names,
    is_system,
    split_data_url,
    system_prompt,
)

__all__ = ["DEFAULT_HOST", "OllamaModel", "host_url"]

PROVIDER = "Ollama"
DEFAULT_HOST = "http://localhost:11434"
DEFAULT_TIMEOUT = 600.0
"""Seconds; local models can take long to load and answer."""

_FINISH: dict[str, FinishReason] = {"stop": "stop", "length": "length"}
_TOP_LEVEL = frozenset({"keep_alive", "think", "format"})
"""``settings.extra`` keys that are request fields; every other key is a model option."""


def host_url(value: str | None) -> str:
    """A base URL from an argument or ``OLLAMA_HOST`` (``host``, ``host:port`` or a URL)."""
    raw = (value or os.environ.get("OLLAMA_HOST") or DEFAULT_HOST).strip().rstrip("/")
    if "://" not in raw:
        raw = f"http://{raw}"
    scheme, _, rest = raw.partition("://")
    host, slash, path = rest.partition("/")
    if host.startswith("0.0.0.0"):  # a server's bind address; clients connect locally
        host = "127.0.0.1" + host[len("0.0.0.0") :]
    if ":" not in host.rsplit("]", 1)[-1]:
        host = f"{host}:11434"
    return f"{scheme}://{host}{slash}{path}"


# --- request ---------------------------------------------------------------------------------


def _user_message(message: Message) -> dict[str, Any]:
    texts: list[str] = []
    images: list[str] = []
    for part in message.content:
        if isinstance(part, InputText | OutputText):
            texts.append(part.text)
        elif isinstance(part, Refusal):
            texts.append(part.refusal)
        elif isinstance(part, InputImage) and part.image_url:
            inline = split_data_url(part.image_url)
            if inline is not None:
                images.append(inline[1])
            else:
                texts.append(f"(image: {part.image_url})")
    out: dict[str, Any] = {"role": "user", "content": "\n".join(t for t in texts if t)}
    if images:
        out["images"] = images
    return out


def to_messages(request: ModelRequest) -> list[dict[str, Any]]:
    """The conversation as Ollama chat messages, system prompt first."""
    messages: list[dict[str, Any]] = []
    system = system_prompt(request)
    if system:
        messages.append({"role": "system", "content": system})
    names = call_names(request.items)
    for item in request.items:
        if isinstance(item, Message):
            if is_system(item):
                continue
            if item.role == "assistant":
                messages.append({"role": "assistant", "content": item.text})
            else:
                messages.append(_user_message(item))
        elif isinstance(item, FunctionCall):
            call = {
                "id": item.call_id,
                "function": {"name": item.name, "arguments": arguments_object(item.arguments)},
            }
            last = messages[-1] if messages else None
            if last is None or last["role"] != "assistant":
                last = {"role": "assistant", "content": ""}
                messages.append(last)
            last.setdefault("tool_calls", []).append(call)
        elif isinstance(item, FunctionCallOutput):
            messages.append(
                {
                    "role": "tool",
                    "content": f"Error: {item.output}" if item.is_error else item.output,
                    "tool_name": names.get(item.call_id, ""),
                    "tool_call_id": item.call_id,
                }
            )
    return messages


def request_body(
    request: ModelRequest, *, model: str, options: Mapping[str, Any], stream: bool
) -> dict[str, Any]:
    """The ``/api/chat`` request body."""
    settings = request.settings
    body: dict[str, Any] = {"model": model, "messages": to_messages(request), "stream": stream}
    tools = list(request.tools)
    if request.tool_choice == "none":
        tools = []
    elif request.tool_choice not in ("auto", "required"):
        tools = [t for t in tools if t.name == request.tool_choice] or tools
    if tools:
        body["tools"] = [
            {"type": "function", "function": {"name": t.name, "description": t.description,
                                              "parameters": dict(t.parameters)}}
            for t in tools
        ]  # fmt: skip
    merged = dict(options)
    for key, value in (("temperature", settings.temperature), ("top_p", settings.top_p),
                       ("num_predict", settings.max_output_tokens)):  # fmt: skip
        if value is not None:
            merged[key] = value
    for key, value in settings.extra.items():
        if key in _TOP_LEVEL:
            body[key] = value
        else:
            merged[key] = value
    if merged:
        body["options"] = merged
    if request.output_schema is not None:
        body["format"] = dict(request.output_schema)
    if settings.reasoning:
        effort = settings.reasoning.get("effort")
        body["think"] = effort if effort in ("low", "medium", "high") else True
    return body


# --- response --------------------------------------------------------------------------------


def _tool_calls(message: Mapping[str, Any]) -> list[FunctionCall]:
    calls = []
    for raw in message.get("tool_calls") or []:
        function = raw.get("function") or {}
        calls.append(
            FunctionCall(
                call_id=raw.get("id") or new_id("call"),
                name=str(function.get("name", "")),
                arguments=arguments_json(function.get("arguments")),
            )
        )
    return calls


def _items(thinking: str, text: str, calls: Sequence[FunctionCall]) -> list[Item]:
    items: list[Item] = []
    if thinking:
        items.append(Reasoning(content=(thinking,)))
    if text:
        items.append(Message(role="assistant", content=(OutputText(text=text),)))
    items.extend(calls)
    return items


def _response(final: Mapping[str, Any], items: list[Item], model: str) -> ModelResponse:
    has_calls = any(isinstance(i, FunctionCall) for i in items)
    reason = _FINISH.get(str(final.get("done_reason") or "stop"), "stop")
    if reason == "stop" and has_calls:
        reason = "tool_calls"
    return ModelResponse(
        items=tuple(items),
        usage=Usage.of(int(final.get("prompt_eval_count") or 0), int(final.get("eval_count") or 0)),
        finish_reason=reason,
        model=str(final.get("model") or model),
    )


# --- errors ----------------------------------------------------------------------------------


def _error_text(body: bytes) -> str:
    try:
        data = json.loads(body)
    except ValueError:
        return body.decode("utf-8", "replace").strip() or "no details"
    if isinstance(data, dict) and isinstance(data.get("error"), str):
        return str(data["error"])
    return json.dumps(data)


def http_error(response: httpx.Response, body: bytes, *, model: str) -> ModelError:
    """The typed error for an Ollama error response."""
    message = _error_text(body)
    if response.status_code == 404:
        return ModelNotFound(
            f"{PROVIDER} returned HTTP 404: {message} (try: ollama pull {model})", status_code=404
        )
    return status_error(
        response.status_code,
        message,
        provider=PROVIDER,
        retry_after_s=retry_after(response.headers),
    )


def body_error(message: Any) -> ModelError:
    """An ``{"error": ...}`` object in a 200 answer (mid-stream, usually a runner failure)."""
    error = status_error(0, str(message), provider=PROVIDER)
    if type(error) is BadRequest:
        return ProviderUnavailable(str(error))
    return error


def transport_error(exc: httpx.TransportError, base_url: str) -> ProviderUnavailable:
    """A request that got no answer; a refused connection says where Ollama was expected."""
    if isinstance(exc, httpx.ConnectError):
        return ProviderUnavailable(
            f"{PROVIDER} is not reachable at {base_url} ({exc}); is 'ollama serve' running? "
            "Set OLLAMA_HOST or base_url= for another address"
        )
    if isinstance(exc, httpx.TimeoutException):
        return ProviderUnavailable(f"{PROVIDER} at {base_url} timed out: {type(exc).__name__}")
    return ProviderUnavailable(f"{PROVIDER} at {base_url} failed: {exc or type(exc).__name__}")


# --- the model -------------------------------------------------------------------------------


class OllamaModel(Model):
    """A model served by Ollama. ``base_url`` defaults to ``OLLAMA_HOST`` or
    http://localhost:11434; ``options`` are Ollama model options (``num_ctx``, ``seed``...)."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        retry: RetryPolicy | None = None,
        timeout: float | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        self.model = model
        self.name = f"ollama:{model}"
        self.base_url = host_url(base_url)
        self.retry = retry or RetryPolicy()
        self.options = dict(options or {})
        self.client = httpx.AsyncClient(
            base_url=self.base_url, timeout=httpx.Timeout(timeout or DEFAULT_TIMEOUT)
        )

    def __repr__(self) -> str:
        return f"OllamaModel({self.model!r}, base_url={self.base_url!r})"

    def _body(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        return request_body(request, model=self.model, options=self.options, stream=stream)

    async def request(self, request: ModelRequest) -> ModelResponse:
        body = self._body(request, stream=False)

        async def once() -> dict[str, Any]:
            try:
                response = await self.client.post("/api/chat", json=body)
            except httpx.TransportError as exc:
                raise transport_error(exc, self.base_url) from exc
            if response.status_code >= 400:
                raise http_error(response, response.content, model=self.model)
            data = _decode(response.content)
            if "error" in data:
                raise body_error(data["error"])
            return data

        data, retries = await call_with_retries(once, self.retry)
        message = data.get("message") or {}
        items = _items(
            str(message.get("thinking") or ""), str(message.get("content") or ""),
            _tool_calls(message),
        )  # fmt: skip
        return replace(_response(data, items, self.model), retries=retries)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamPart]:
        body = self._body(request, stream=True)
        async for part in stream_with_retries(lambda: self._stream_once(body), self.retry):
            yield part

    async def _stream_once(self, body: dict[str, Any]) -> AsyncIterator[StreamPart]:
        text: list[str] = []
        thinking: list[str] = []
        calls: list[FunctionCall] = []
        final: dict[str, Any] | None = None
        try:
            async with self.client.stream("POST", "/api/chat", json=body) as response:
                if response.status_code >= 400:
                    raise http_error(response, await response.aread(), model=self.model)
                async for line in response.aiter_lines():
                    if not line.strip():
                        continue
                    chunk = _decode(line.encode())
                    if "error" in chunk:
                        raise body_error(chunk["error"])
                    message = chunk.get("message") or {}
                    if message.get("thinking"):
                        thinking.append(str(message["thinking"]))
                        yield ReasoningDelta(delta=str(message["thinking"]))
                    if message.get("content"):
                        text.append(str(message["content"]))
                        yield TextDelta(delta=str(message["content"]))
                    for call in _tool_calls(message):
                        yield ToolCallDelta(
                            index=len(calls),
                            call_id=call.call_id,
                            name=call.name,
                            arguments_delta=call.arguments,
                        )
                        calls.append(call)
                    if chunk.get("done"):
                        final = chunk
        except httpx.TransportError as exc:
            raise transport_error(exc, self.base_url) from exc
        if final is None:
            raise ProviderUnavailable(f"{PROVIDER}'s stream ended before its final message")
        items = _items("".join(thinking), "".join(text), calls)
        yield ResponseDone(response=_response(final, items, self.model))

    async def aclose(self) -> None:
        await self.client.aclose()


def _decode(raw: bytes) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise ProviderUnavailable(f"{PROVIDER} sent something that is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ProviderUnavailable(f"{PROVIDER} sent unexpected JSON: {data!r}")
    return data
