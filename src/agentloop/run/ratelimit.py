"""Sliding-window rate limits for tool calls (``"10/minute"``)."""

from __future__ import annotations

import re
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from agentloop.errors import ConfigError

_UNITS = {
    "s": 1.0, "sec": 1.0, "second": 1.0,
    "m": 60.0, "min": 60.0, "minute": 60.0,
    "h": 3600.0, "hour": 3600.0,
    "d": 86400.0, "day": 86400.0,
}  # fmt: skip
_LIMIT = re.compile(r"^\s*(\d+)\s*/\s*(\d*\.?\d*)\s*([a-z]+?)s?\s*$")


@dataclass(frozen=True, kw_only=True, slots=True)
class Rate:
    """``count`` calls per ``period`` seconds."""

    count: int
    period: float
    text: str

    @classmethod
    def parse(cls, text: str) -> Rate:
        """Parse ``"10/minute"``, ``"5/s"``, ``"100/2h"`` and the like."""
        match = _LIMIT.match(text.lower())
        if not match or match.group(3) not in _UNITS or int(match.group(1)) < 1:
            raise ConfigError(
                f"rate limit {text!r} must look like '10/minute' (units: second, minute, hour, day)"
            )
        multiple = float(match.group(2)) if match.group(2) else 1.0
        if multiple <= 0:
            raise ConfigError(f"rate limit {text!r} has an empty period")
        return cls(count=int(match.group(1)), period=multiple * _UNITS[match.group(3)], text=text)


class RateLimiter:
    """Per-tool limits, plus ``"*"`` for all calls together. Not thread-safe (one event loop)."""

    def __init__(
        self, limits: Mapping[str, str], clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._rates = {name: Rate.parse(text) for name, text in limits.items()}
        self._calls: dict[str, deque[float]] = {name: deque() for name in self._rates}
        self._clock = clock

    def acquire(self, tool_name: str) -> str | None:
        """Count a call, or return why it must wait (with when to retry) without counting it."""
        now = self._clock()
        keys = [k for k in (tool_name, "*") if k in self._rates]
        for key in keys:
            rate, calls = self._rates[key], self._calls[key]
            while calls and calls[0] <= now - rate.period:
                calls.popleft()
            if len(calls) >= rate.count:
                wait = calls[0] + rate.period - now
                scope = "all tools" if key == "*" else f"tool '{tool_name}'"
                return (
                    f"Rate limit exceeded for {scope} ({rate.text}). Retry in {wait:.1f} seconds."
                )
        for key in keys:
            self._calls[key].append(now)
        return None
