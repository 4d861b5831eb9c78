"""The ``openai`` SDK's exceptions mapped to agentloop's :class:`~agentloop.errors.ModelError`s.

One mapping for both OpenAI adapters and every OpenAI-compatible server behind them (vLLM,
Ollama's /v1, LM Studio, Groq, Together, OpenRouter), so that retries and the loop see the same
typed errors whoever answered. The HTTP status is kept on the error.
"""

from __future__ import annotations

from collections.abc import Mapping

import openai

from agentloop.errors import (
    BadRequest,
    ContextWindowExceeded,
    ModelError,
    ProviderUnavailable,
    RateLimited,
    ToolsNotSupported,
)
from agentloop.models.http_errors import is_context_overflow, retry_after, status_error

__all__ = ["error_from_code", "map_openai_error"]

_CONTEXT_CODES = frozenset({"context_length_exceeded", "string_above_max_length"})
# OpenAI-compatible servers' ways of saying "this model has no tool calling", beyond the
# shared patterns (vLLM started without a tool parser, for one)
_NO_TOOLS_PHRASES = (
    "does not support tools",
    "tool choice requires --enable-auto-tool-choice",
    "does not support function calling",
    "tools is not supported",
    "tools are not supported",
)


def _no_tools(message: str) -> bool:
    lowered = message.lower()
    return any(p in lowered for p in _NO_TOOLS_PHRASES)


def _message(exc: openai.APIError) -> str:
    body = exc.body
    if isinstance(body, Mapping):
        text = body.get("message")
        if isinstance(text, str) and text:
            return text
    return exc.message


def error_from_code(
    code: str | None, message: str, *, provider: str, status_code: int | None = None
) -> ModelError:
    """A typed error for a failure reported inside a 200 response or a stream (Responses
    ``response.failed`` / ``error`` events, Chat stream error chunks)."""
    text = f"{provider}: {message}"
    if code in _CONTEXT_CODES or is_context_overflow(message):
        return ContextWindowExceeded(text, status_code=status_code)
    if code in ("rate_limit_exceeded", "too_many_requests"):
        return RateLimited(text, status_code=status_code)
    if code == "insufficient_quota":
        return _quota(text, status_code)
    if code in ("invalid_prompt", "invalid_request_error", "invalid_image", "bad_request"):
        return BadRequest(text, status_code=status_code)
    if _no_tools(message):
        return ToolsNotSupported(text, status_code=status_code)
    # server_error, vector_store_timeout and anything unknown: the provider failed, try again
    return ProviderUnavailable(text, status_code=status_code)


def _quota(text: str, status_code: int | None) -> RateLimited:
    """An exhausted quota is a 429 that waiting will not fix: typed RateLimited, not retried."""
    error = RateLimited(
        f"{text} (quota exhausted: check the plan and billing of this API key)",
        status_code=status_code,
    )
    error.retryable = False
    return error


def map_openai_error(exc: BaseException, *, provider: str = "OpenAI") -> ModelError:
    """The agentloop error for an exception raised by the ``openai`` SDK.

    429 → RateLimited (``retry_after`` from the headers; a spent quota is not retried); 5xx,
    408, timeouts and dropped connections → ProviderUnavailable; 401/403 →
    AuthenticationFailed; 404 → ModelNotFound; 400-class context-length errors →
    ContextWindowExceeded; "does not support tools" → ToolsNotSupported; any other 4xx →
    BadRequest.
    """
    if isinstance(exc, ModelError):
        return exc
    if isinstance(exc, openai.APITimeoutError):
        return ProviderUnavailable(f"{provider}: the request timed out")
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__
        detail = f" ({type(cause).__name__}: {cause})" if cause is not None else ""
        return ProviderUnavailable(f"{provider}: connection failed{detail}")
    if isinstance(exc, openai.APIStatusError):
        return _from_status(exc, provider)
    if isinstance(exc, openai.APIError):
        # an error reported inside a stream, without an HTTP status of its own
        return error_from_code(exc.code, _message(exc), provider=provider)
    return ModelError(f"{provider}: {type(exc).__name__}: {exc}")


def _from_status(exc: openai.APIStatusError, provider: str) -> ModelError:
    """OpenAI's error codes first (they are exact), then the shared status mapping."""
    status = exc.status_code
    message = _message(exc)
    text = f"{provider} returned HTTP {status}: {message}"
    code = exc.code
    if status == 429 and code == "insufficient_quota":
        return _quota(text, status)
    if status == 404 and code != "model_not_found" and "model" not in message.lower():
        # not about a model: most likely a wrong endpoint (a base_url without /v1, say)
        return BadRequest(f"{text} (is the base_url right?)", status_code=status)
    if 400 <= status < 500 and status not in (401, 403, 404, 408, 429):
        if code in _CONTEXT_CODES:
            return ContextWindowExceeded(text, status_code=status)
        if _no_tools(message):
            return ToolsNotSupported(text, status_code=status)
    return status_error(
        status, message, provider=provider, retry_after_s=retry_after(exc.response.headers)
    )
