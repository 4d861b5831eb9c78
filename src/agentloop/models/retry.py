"""Retries for model calls: exponential backoff with jitter, honouring ``Retry-After``.

Only transient failures are retried (:class:`~agentloop.errors.RateLimited`,
:class:`~agentloop.errors.ProviderUnavailable`: 429, 5xx, timeouts, dropped connections); any
other error is final at once. Provider SDKs' own retries are turned off so that the count here is
the true one and is reported on the response (``ModelResponse.retries``) or the final error
(``ModelError.retries``).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TypeVar

from agentloop.errors import ModelError, RateLimited
from agentloop.models.base import ModelResponse, ResponseDone, StreamPart

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True, slots=True)
class RetryPolicy:
    """``max_retries`` retries after the first attempt, waiting ``initial_delay * multiplier**n``
    seconds (capped at ``max_delay``, with full jitter), or what ``Retry-After`` asks for."""

    max_retries: int = 3
    initial_delay: float = 0.5
    max_delay: float = 30.0
    multiplier: float = 2.0
    jitter: bool = True

    def delay(self, attempt: int, error: ModelError) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based)."""
        if isinstance(error, RateLimited) and error.retry_after is not None:
            return min(max(error.retry_after, 0.0), self.max_delay)
        base = min(self.initial_delay * self.multiplier ** (attempt - 1), self.max_delay)
        return random.uniform(base / 2, base) if self.jitter else base


NO_RETRIES = RetryPolicy(max_retries=0)

Sleep = Callable[[float], Awaitable[None]]


async def call_with_retries(
    fn: Callable[[], Awaitable[T]], policy: RetryPolicy, *, sleep: Sleep = asyncio.sleep
) -> tuple[T, int]:
    """Call ``fn`` until it succeeds or fails for good; returns the value and the retry count."""
    attempt = 0
    while True:
        try:
            return await fn(), attempt
        except ModelError as exc:
            if not exc.retryable or attempt >= policy.max_retries:
                exc.retries = attempt
                raise
            attempt += 1
            await sleep(policy.delay(attempt, exc))


async def stream_with_retries(
    open_stream: Callable[[], AsyncIterator[StreamPart]],
    policy: RetryPolicy,
    *,
    sleep: Sleep = asyncio.sleep,
) -> AsyncIterator[StreamPart]:
    """Retry a stream that fails before yielding anything; once parts have gone out, a failure
    is final (replaying would duplicate text). The final response carries the retry count."""
    attempt = 0
    while True:
        started = False
        try:
            async for part in open_stream():
                started = True
                if isinstance(part, ResponseDone) and attempt:
                    part = ResponseDone(response=_with_retries(part.response, attempt))
                yield part
            return
        except ModelError as exc:
            if started or not exc.retryable or attempt >= policy.max_retries:
                exc.retries = attempt
                raise
            attempt += 1
            await sleep(policy.delay(attempt, exc))


def _with_retries(response: ModelResponse, retries: int) -> ModelResponse:
    return replace(response, retries=retries)
