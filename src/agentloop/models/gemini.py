"""Gemini (``gemini:<model>``) through the official ``google-genai`` SDK: the Gemini API with a key,
or Vertex AI.

Translation, both ways:

- instructions and system/developer messages -> ``system_instruction``; user/assistant messages
  -> ``user``/``model`` contents (``data:`` images as ``inline_data``, other URLs and file ids as
  ``file_data``); consecutive parts of one role share a content.
- :class:`FunctionCall` <-> ``function_call`` parts (args as an object, see
  :mod:`agentloop.models.translate` for broken JSON). Gemini may omit call ids: fresh ``call_...``
  ids are made, and sent back on later turns. :class:`FunctionCallOutput` -> ``function_response``
  parts named after their call, with ``{"output": text}`` or, for failures, ``{"error": text}``.
- Thought summaries (``thought: true`` parts) -> :class:`Reasoning` summaries. Thought signatures
  travel as a :class:`Reasoning` item's ``encrypted_content`` (``gemini.signature:<base64>``) placed
  just before the item whose part carried them, and are put back on that part when the
  conversation is sent again (Gemini 3 rejects function calls without their signature).
- Tool schemas are rewritten to the subset Gemini accepts (:mod:`agentloop.models.gemini_schema`);
  ``tool_choice`` becomes ``function_calling_config`` mode AUTO / ANY / NONE, and a forced name is
  ANY with ``allowed_function_names``. Gemini has no switch for parallel calls; the flag is ignored.
- ``settings.reasoning``: ``budget_tokens`` -> ``thinking_budget``, ``effort`` ->
  ``thinking_level``, thoughts included; ``settings.extra`` entries are ``GenerateContentConfig``
  fields. ``output_schema`` -> JSON output with ``response_json_schema``.

The SDK's retries are off (one attempt); :mod:`agentloop.models.retry` retries and counts.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import pydantic
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as gt

from agentloop.errors import AuthenticationFailed, ConfigError, ModelError, ProviderUnavailable
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
    ToolSchema,
)
from agentloop.models.gemini_schema import to_gemini_schema
from agentloop.models.http_errors import (
    TRANSPORT_ERRORS,
    retry_after,
    status_error,
    transport_error,
)
from agentloop.models.retry import RetryPolicy, call_with_retries, stream_with_retries
from agentloop.models.translate import (
    arguments_json,
    arguments_object,
    call_names,
    is_system,
    split_data_url,
    system_prompt,
)

__all__ = ["SIGNATURE_PREFIX", "GeminiModel", "make_client"]

PROVIDER = "Gemini"
SIGNATURE_PREFIX = "gemini.signature:"
KEY_ENVS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")

_FINISH: dict[str, FinishReason] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    **dict.fromkeys(
        ["SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY",
         "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION", "MODEL_ARMOR"],
        "content_filter",
    ),
}  # fmt: skip
_EXTENSION_TYPES = {"png": "image/png", "gif": "image/gif", "webp": "image/webp"}


# --- request ---------------------------------------------------------------------------------


def _image_part(part: InputImage) -> gt.Part | None:
    if part.file_id is not None:
        return gt.Part(file_data=gt.FileData(file_uri=part.file_id))
    if not part.image_url:
        return None
    inline = split_data_url(part.image_url)
    if inline is not None:
        media_type, data = inline
        return gt.Part(inline_data=gt.Blob(mime_type=media_type, data=base64.b64decode(data)))
    extension = part.image_url.rsplit("?", 1)[0].rsplit(".", 1)[-1].lower()
    mime_type = _EXTENSION_TYPES.get(extension, "image/jpeg")
    return gt.Part(file_data=gt.FileData(file_uri=part.image_url, mime_type=mime_type))


def _content_part(part: Any) -> gt.Part | None:
    if isinstance(part, InputText | OutputText):
        return gt.Part(text=part.text) if part.text else None
    if isinstance(part, Refusal):
        return gt.Part(text=part.refusal) if part.refusal else None
    if isinstance(part, InputImage):
        return _image_part(part)
    return None


def _signature(item: Reasoning) -> bytes | None:
    blob = item.encrypted_content or ""
    if not blob.startswith(SIGNATURE_PREFIX):
        return None
    try:
        return base64.b64decode(blob[len(SIGNATURE_PREFIX) :])
    except ValueError:
        return None


def to_contents(items: Sequence[Item]) -> list[gt.Content]:
    """The conversation as Gemini ``contents`` (system/developer messages left out)."""
    contents: list[gt.Content] = []
    names = call_names(items)
    signature: bytes | None = None  # waits for the next model part

    def add(role: str, part: gt.Part | None) -> None:
        nonlocal signature
        if part is None:
            return
        if role == "model" and signature is not None:
            part.thought_signature, signature = signature, None
        if contents and contents[-1].role == role and contents[-1].parts is not None:
            contents[-1].parts.append(part)
        else:
            contents.append(gt.Content(role=role, parts=[part]))

    for item in items:
        if isinstance(item, Message):
            if not is_system(item):
                role = "model" if item.role == "assistant" else "user"
                if role == "user":
                    signature = None
                for content_part in item.content:
                    add(role, _content_part(content_part))
        elif isinstance(item, FunctionCall):
            args = arguments_object(item.arguments)
            call = gt.FunctionCall(id=item.call_id, name=item.name, args=args)
            add("model", gt.Part(function_call=call))
        elif isinstance(item, FunctionCallOutput):
            signature = None
            result = {"error": item.output} if item.is_error else {"output": item.output}
            name = names.get(item.call_id, item.call_id)
            reply = gt.FunctionResponse(id=item.call_id, name=name, response=result)
            add("user", gt.Part(function_response=reply))
        elif isinstance(item, Reasoning):
            signature = _signature(item) or signature
    return contents


def function_declaration(tool: ToolSchema) -> gt.FunctionDeclaration:
    """One tool, its parameters in Gemini's schema dialect (omitted when it takes none)."""
    schema = to_gemini_schema(tool.parameters)
    parameters = gt.Schema.model_validate(schema) if schema.get("properties") else None
    return gt.FunctionDeclaration(
        name=tool.name, description=tool.description, parameters=parameters
    )


def tool_config(choice: str) -> gt.ToolConfig:
    """``tool_choice`` as ``function_calling_config``."""
    mode = gt.FunctionCallingConfigMode
    modes = {"auto": mode.AUTO, "required": mode.ANY, "none": mode.NONE}
    if choice in modes:
        config = gt.FunctionCallingConfig(mode=modes[choice])
    else:
        config = gt.FunctionCallingConfig(mode=mode.ANY, allowed_function_names=[choice])
    return gt.ToolConfig(function_calling_config=config)


def _thinking(reasoning: Mapping[str, Any] | None) -> gt.ThinkingConfig | None:
    if not reasoning:
        return None
    config = gt.ThinkingConfig(include_thoughts=bool(reasoning.get("include_thoughts", True)))
    if reasoning.get("budget_tokens") is not None:
        config.thinking_budget = int(reasoning["budget_tokens"])
    effort = reasoning.get("effort")
    if isinstance(effort, str):
        config.thinking_level = gt.ThinkingLevel(effort.upper())
    return config


def generate_config(request: ModelRequest) -> gt.GenerateContentConfig:
    """Everything but the contents: system instruction, tools, tool config, settings."""
    settings = request.settings
    fields: dict[str, Any] = {
        "automatic_function_calling": gt.AutomaticFunctionCallingConfig(disable=True),
        "system_instruction": system_prompt(request),
        "temperature": settings.temperature,
        "top_p": settings.top_p,
        "max_output_tokens": settings.max_output_tokens,
        "thinking_config": _thinking(settings.reasoning),
    }
    if request.tools:
        declarations = [function_declaration(t) for t in request.tools]
        fields["tools"] = [gt.Tool(function_declarations=declarations)]
        fields["tool_config"] = tool_config(request.tool_choice)
    if request.output_schema is not None:
        fields["response_mime_type"] = "application/json"
        fields["response_json_schema"] = dict(request.output_schema)
    fields.update(settings.extra)
    try:
        return gt.GenerateContentConfig(**{k: v for k, v in fields.items() if v is not None})
    except (pydantic.ValidationError, TypeError) as exc:
        raise ConfigError(f"invalid Gemini settings (settings.extra?): {exc}") from None


# --- response --------------------------------------------------------------------------------


def _encode_signature(signature: bytes) -> str:
    return SIGNATURE_PREFIX + base64.b64encode(signature).decode("ascii")


def ensure_call_ids(parts: Sequence[gt.Part]) -> None:
    """Give every function call without an id a fresh ``call_...`` one."""
    for part in parts:
        if part.function_call is not None and not part.function_call.id:
            part.function_call.id = new_id("call")


def items_from_parts(parts: Sequence[gt.Part]) -> list[Item]:
    """Response parts as items: text runs merge into one message, thought runs into one
    :class:`Reasoning`, each function call is a :class:`FunctionCall`; signatures ride along."""
    items: list[Item] = []
    texts: list[str] = []
    thoughts: list[str] = []
    text_signature: bytes | None = None
    thought_signature: bytes | None = None

    def flush() -> None:
        nonlocal text_signature, thought_signature
        if thoughts or thought_signature:
            summary = ("".join(thoughts),) if "".join(thoughts) else ()
            enc = _encode_signature(thought_signature) if thought_signature else None
            items.append(Reasoning(summary=summary, encrypted_content=enc))
        if texts and "".join(texts):
            if text_signature:
                items.append(Reasoning(encrypted_content=_encode_signature(text_signature)))
            items.append(Message(role="assistant", content=(OutputText(text="".join(texts)),)))
        texts.clear()
        thoughts.clear()
        text_signature = thought_signature = None

    for part in parts:
        if part.thought and part.function_call is None:
            if texts:
                flush()
            thoughts.append(part.text or "")
            thought_signature = part.thought_signature or thought_signature
        elif part.function_call is not None:
            flush()
            call = part.function_call
            if part.thought_signature:
                items.append(Reasoning(encrypted_content=_encode_signature(part.thought_signature)))
            items.append(
                FunctionCall(
                    call_id=call.id or new_id("call"),
                    name=call.name or "",
                    arguments=arguments_json(call.args),
                )
            )
        elif part.text is not None:
            if thoughts or thought_signature:
                flush()
            texts.append(part.text)
            text_signature = part.thought_signature or text_signature
    flush()
    return items


def usage_from(meta: gt.GenerateContentResponseUsageMetadata | None) -> Usage:
    """``usage_metadata`` -> ours; thought tokens count as output (and as reasoning)."""
    if meta is None:
        return Usage()
    prompt = (meta.prompt_token_count or 0) + (meta.tool_use_prompt_token_count or 0)
    thoughts = meta.thoughts_token_count or 0
    return Usage.of(
        prompt,
        (meta.candidates_token_count or 0) + thoughts,
        cached_input_tokens=meta.cached_content_token_count or 0,
        reasoning_tokens=thoughts,
    )


def finish_reason(reason: Any, items: Sequence[Item], *, blocked: bool = False) -> FinishReason:
    """Gemini ``finish_reason`` -> stop / tool_calls / length / content_filter."""
    if blocked:
        return "content_filter"
    name = getattr(reason, "value", reason)
    mapped = _FINISH.get(name, "stop") if isinstance(name, str) else "stop"
    if mapped == "stop" and any(isinstance(i, FunctionCall) for i in items):
        return "tool_calls"
    return mapped


def _parts(response: gt.GenerateContentResponse) -> list[gt.Part]:
    candidate = response.candidates[0] if response.candidates else None
    content = candidate.content if candidate is not None else None
    return list(content.parts or []) if content is not None else []


def _blocked(response: gt.GenerateContentResponse) -> bool:
    feedback = response.prompt_feedback
    return feedback is not None and feedback.block_reason is not None


def response_from(response: gt.GenerateContentResponse, *, retries: int = 0) -> ModelResponse:
    """A complete ``generate_content`` answer as a :class:`ModelResponse`."""
    parts = _parts(response)
    ensure_call_ids(parts)
    items = items_from_parts(parts)
    candidate = response.candidates[0] if response.candidates else None
    reason = candidate.finish_reason if candidate is not None else None
    return ModelResponse(
        items=tuple(items),
        usage=usage_from(response.usage_metadata),
        finish_reason=finish_reason(reason, items, blocked=_blocked(response)),
        model=response.model_version,
        retries=retries,
    )


# --- errors ----------------------------------------------------------------------------------

_DELAY = re.compile(r"^([0-9.]+)s$")


def _retry_delay(details: Any) -> float | None:
    """``google.rpc.RetryInfo.retryDelay`` (e.g. ``"39s"``) from an error body."""
    error = details.get("error", details) if isinstance(details, dict) else None
    entries = error.get("details") if isinstance(error, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and str(entry.get("@type", "")).endswith("RetryInfo"):
            match = _DELAY.match(str(entry.get("retryDelay", "")))
            if match:
                return float(match.group(1))
    return None


def map_error(exc: BaseException, *, url: str | None = None) -> ModelError:
    """A ``google.genai`` (or transport) exception as agentloop's typed error."""
    if isinstance(exc, genai_errors.APIError):
        message = exc.message or str(exc)
        if exc.code == 400 and "API_KEY_INVALID" in str(exc.details):
            return AuthenticationFailed(f"{PROVIDER}: {message}", status_code=400)
        headers = getattr(exc.response, "headers", None)
        wait = retry_after(headers) if isinstance(headers, Mapping) else None
        if wait is None:
            wait = _retry_delay(exc.details)
        return status_error(exc.code or 500, message, provider=PROVIDER, retry_after_s=wait)
    if isinstance(exc, genai_errors.UnknownApiResponseError):
        return ProviderUnavailable(f"{PROVIDER} sent a response that is not JSON: {exc}")
    if isinstance(exc, TRANSPORT_ERRORS):
        return transport_error(exc, provider=PROVIDER, url=url)
    return ModelError(f"{PROVIDER}: {exc}")


_SDK_ERRORS: tuple[type[BaseException], ...] = (
    genai_errors.APIError,
    genai_errors.UnknownApiResponseError,
    *TRANSPORT_ERRORS,
)


# --- the model -------------------------------------------------------------------------------


def _env_true(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes")


def make_client(
    *,
    api_key: str | None = None,
    vertexai: bool = False,
    project: str | None = None,
    location: str | None = None,
    base_url: str | None = None,
    timeout: float | None = None,
) -> genai.Client:
    """A ``genai.Client`` with SDK retries off: Vertex AI when asked (argument or
    ``GOOGLE_GENAI_USE_VERTEXAI``), else the Gemini API with a key."""
    options = gt.HttpOptions(
        base_url=base_url,
        timeout=int(timeout * 1000) if timeout is not None else None,
        retry_options=gt.HttpRetryOptions(attempts=1),
    )
    if vertexai or _env_true("GOOGLE_GENAI_USE_VERTEXAI"):
        if api_key:  # Vertex AI express mode
            return genai.Client(vertexai=True, api_key=api_key, http_options=options)
        project = project or os.environ.get("GOOGLE_CLOUD_PROJECT")
        if not project:
            raise ConfigError(
                "Vertex AI needs a project: set GOOGLE_CLOUD_PROJECT (and GOOGLE_CLOUD_LOCATION) "
                "or pass project="
            )
        location = location or os.environ.get("GOOGLE_CLOUD_LOCATION") or "global"
        return genai.Client(vertexai=True, project=project, location=location, http_options=options)
    key = api_key or next((os.environ[n] for n in KEY_ENVS if os.environ.get(n)), None)
    if not key:
        raise ConfigError(
            "the Gemini API key is missing: set GEMINI_API_KEY (or GOOGLE_API_KEY) or pass "
            "api_key=; for Vertex AI set GOOGLE_GENAI_USE_VERTEXAI=true and GOOGLE_CLOUD_PROJECT"
        )
    return genai.Client(api_key=key, http_options=options)


class GeminiModel(Model):
    """A Gemini model. ``client`` takes a ready ``genai.Client`` instead of building one
    (its own retry options then apply); ``base_url`` points the SDK at another endpoint."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        vertexai: bool = False,
        project: str | None = None,
        location: str | None = None,
        client: genai.Client | None = None,
        retry: RetryPolicy | None = None,
        timeout: float | None = None,
        base_url: str | None = None,
    ) -> None:
        self.model = model
        self.name = f"gemini:{model}"
        self.retry = retry or RetryPolicy()
        self._owns_client = client is None
        if client is None:
            client = make_client(
                api_key=api_key,
                vertexai=vertexai,
                project=project,
                location=location,
                base_url=base_url,
                timeout=timeout,
            )
        self.client = client
        self.base_url = base_url

    def __repr__(self) -> str:
        return f"GeminiModel({self.model!r})"

    async def request(self, request: ModelRequest) -> ModelResponse:
        contents, config = to_contents(request.items), generate_config(request)

        async def once() -> gt.GenerateContentResponse:
            try:
                return await self.client.aio.models.generate_content(
                    model=self.model, contents=contents, config=config
                )
            except _SDK_ERRORS as exc:
                raise map_error(exc, url=self.base_url) from exc

        response, retries = await call_with_retries(once, self.retry)
        return response_from(response, retries=retries)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamPart]:
        contents, config = to_contents(request.items), generate_config(request)
        opener = lambda: self._stream_once(contents, config)  # noqa: E731
        async for part in stream_with_retries(opener, self.retry):
            yield part

    async def _stream_once(
        self, contents: list[gt.Content], config: gt.GenerateContentConfig
    ) -> AsyncIterator[StreamPart]:
        parts: list[gt.Part] = []
        calls = 0
        last: gt.GenerateContentResponse | None = None
        reason: Any = None
        usage: gt.GenerateContentResponseUsageMetadata | None = None
        try:
            chunks = await self.client.aio.models.generate_content_stream(
                model=self.model, contents=contents, config=config
            )
            async for chunk in _closing(chunks):
                last = chunk
                usage = chunk.usage_metadata or usage
                if chunk.candidates and chunk.candidates[0].finish_reason is not None:
                    reason = chunk.candidates[0].finish_reason
                new = _parts(chunk)
                ensure_call_ids(new)
                parts.extend(new)
                for part in new:
                    if part.function_call is not None:
                        call = part.function_call
                        yield ToolCallDelta(
                            index=calls,
                            call_id=call.id,
                            name=call.name,
                            arguments_delta=arguments_json(call.args),
                        )
                        calls += 1
                    elif part.text:
                        yield (
                            ReasoningDelta(delta=part.text)
                            if part.thought
                            else TextDelta(delta=part.text)
                        )
        except _SDK_ERRORS as exc:
            raise map_error(exc, url=self.base_url) from exc
        items = items_from_parts(parts)
        blocked = last is not None and _blocked(last)
        response = ModelResponse(
            items=tuple(items),
            usage=usage_from(usage),
            finish_reason=finish_reason(reason, items, blocked=blocked),
            model=last.model_version if last is not None else None,
        )
        yield ResponseDone(response=response)

    async def aclose(self) -> None:
        """Close the HTTP client if this model made it (a caller's client stays open)."""
        if self._owns_client:
            await self.client.aio.aclose()


Chunks = AsyncIterator[gt.GenerateContentResponse]


async def _closing(chunks: Chunks) -> Chunks:
    """Iterate the SDK's stream and close it even when the consumer stops early."""
    try:
        async for chunk in chunks:
            yield chunk
    finally:
        close = getattr(chunks, "aclose", None)
        if close is not None:
            await close()
