"""HTTP failures as agentloop's typed model errors, shared by the provider adapters.

Every adapter catches its SDK's (or httpx's) exceptions and hands the status code, message and
headers to :func:`status_error`, so that a 429 is a :class:`~agentloop.errors.RateLimited` with
its ``Retry-After``, a 5xx (and Anthropic's 529) is :class:`~agentloop.errors.ProviderUnavailable`,
and a context-window overflow is :class:`~agentloop.errors.ContextWindowExceeded` on every
provider alike.
"""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Mapping

import httpx

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

_CONTEXT_OVERFLOW = re.compile(
    r"context[ _-]?(window|length)|prompt is too long|too many (input )?tokens"
    r"|input token count .* exceeds|exceeds? the maximum (number of tokens|context)"
    r"|maximum context length|input is too long|context_length_exceeded",
    re.IGNORECASE,
)
_NO_TOOLS = re.compile(
    r"does not support tools|tools? (use |calling )?(is |are )?not supported"
    r"|does not support (function|tool) calling",
    re.IGNORECASE,
)


def _transport_types() -> tuple[type[BaseException], ...]:
    types: list[type[BaseException]] = [httpx.TransportError]
    try:  # the Anthropic and Google SDKs send through httpx2, a fork with its own classes
        import httpx2

        types.append(httpx2.TransportError)
    except ImportError:  # pragma: no cover - httpx2 comes with the SDKs
        pass
    return tuple(types)


TRANSPORT_ERRORS = _transport_types()
"""Exceptions of a request that never got an HTTP answer (refused, dropped, timed out)."""


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait as the provider asked (``retry-after-ms``, ``retry-after`` in seconds or as
    an HTTP date), or None."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis:
        try:
            return max(float(millis) / 1000.0, 0.0)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def is_context_overflow(message: str) -> bool:
    """Whether a provider's error message says the conversation no longer fits."""
    return bool(_CONTEXT_OVERFLOW.search(message))


def status_error(
    status: int,
    message: str,
    *,
    provider: str,
    retry_after_s: float | None = None,
) -> ModelError:
    """The typed error for an HTTP error status from ``provider``."""
    text = f"{provider} returned HTTP {status}: {message}" if status else f"{provider}: {message}"
    if status == 429:
        return RateLimited(text, retry_after=retry_after_s, status_code=status)
    if status in (401, 403):
        return AuthenticationFailed(text, status_code=status)
    if status == 404:
        return ModelNotFound(text, status_code=status)
    if status == 408 or status >= 500:
        return ProviderUnavailable(text, status_code=status)
    if _NO_TOOLS.search(message):
        return ToolsNotSupported(text, status_code=status)
    if is_context_overflow(message):
        return ContextWindowExceeded(text, status_code=status)
    return BadRequest(text, status_code=status)


def transport_error(exc: BaseException, *, provider: str, url: str | None = None) -> ModelError:
    """A :class:`ProviderUnavailable` for a request that got no HTTP answer."""
    where = f" at {url}" if url else ""
    if "Timeout" in type(exc).__name__:
        return ProviderUnavailable(f"{provider}{where} timed out: {exc or type(exc).__name__}")
    detail = str(exc) or type(exc).__name__
    return ProviderUnavailable(f"{provider}{where} could not be reached: {detail}")
