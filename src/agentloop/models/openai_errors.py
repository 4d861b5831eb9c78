"""The ``openai`` SDK's exceptions mapped to agentloop's :class:`~agentloop.errors.ModelError`s.

One mapping for both OpenAI adapters and every OpenAI-compatible server behind them (vLLM,
Ollama's /v1, LM Studio, Groq, Together, OpenRouter), so that retries and the loop see the same
typed errors whoever answered. The HTTP status is kept on the error.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping
from typing import Any

import openai

from agentloop.errors import (
    AuthenticationFailed,
    BadRequest,
    ContextWindowExceeded,
    ModelError,
    ModelNotFound,
    ProviderUnavailable,
    RateLimited,
    ToolsNotSupported,
)

__all__ = ["error_from_code", "map_openai_error", "parse_retry_after"]

_CONTEXT_CODES = {"context_length_exceeded", "string_above_max_length"}
_CONTEXT_PHRASES = (
    "context_length_exceeded",
    "maximum context length",
    "context length",
    "context window",
    "prompt is too long",
    "too many tokens",
    "reduce the length of the messages",
    "input is too long",
)
_TOOLS_PHRASES = (
    "does not support tools",
    "does not support function calling",
    "tools is not supported",
    "tools are not supported",
    "tool use is not supported",
    "function calling is not supported",
    "tool calling is not supported",
    "tool choice requires --enable-auto-tool-choice",
)


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(float(raw_ms) / 1000.0, 0.0)
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    try:
        return max(float(raw), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


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
    lowered = message.lower()
    if code in _CONTEXT_CODES or any(p in lowered for p in _CONTEXT_PHRASES):
        return ContextWindowExceeded(text, status_code=status_code)
    if code in ("rate_limit_exceeded", "too_many_requests"):
        return RateLimited(text, status_code=status_code)
    if code == "insufficient_quota":
        return _quota(text, status_code)
    if code in ("invalid_prompt", "invalid_request_error", "invalid_image", "bad_request"):
        return BadRequest(text, status_code=status_code)
    if any(p in lowered for p in _TOOLS_PHRASES):
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
    status = exc.status_code
    message = _message(exc)
    text = f"{provider} returned HTTP {status}: {message}"
    code = exc.code
    lowered = message.lower()
    if status == 429:
        if code == "insufficient_quota":
            return _quota(text, status)
        return RateLimited(text, retry_after=parse_retry_after(exc.response.headers))
    if status >= 500 or status == 408:
        return ProviderUnavailable(text, status_code=status)
    if status in (401, 403):
        return AuthenticationFailed(text, status_code=status)
    if status == 404:
        if code == "model_not_found" or "model" in lowered:
            return ModelNotFound(text, status_code=status)
        return BadRequest(f"{text} (is the base_url right?)", status_code=status)
    if code in _CONTEXT_CODES or any(p in lowered for p in _CONTEXT_PHRASES):
        return ContextWindowExceeded(text, status_code=status)
    if any(p in lowered for p in _TOOLS_PHRASES):
        return ToolsNotSupported(text, status_code=status)
    return BadRequest(text, status_code=status)


def body_error(data: Any) -> tuple[str | None, str]:
    """``(code, message)`` from an error object such as ``{"code": ..., "message": ...}``."""
    if isinstance(data, Mapping):
        code = data.get("code")
        message = data.get("message")
        return (
            str(code) if code is not None else None,
            str(message) if message else "the provider reported an error",
        )
    return None, "the provider reported an error"
