"""Fixtures shared by the provider wire tests: retries that never wait, one sample tool."""

from __future__ import annotations

from agentloop.models.base import ToolSchema
from agentloop.models.retry import RetryPolicy

FAST = RetryPolicy(max_retries=2, initial_delay=0, max_delay=0, jitter=False)
"""Retries with no delay, so retry paths run instantly."""

WEATHER = ToolSchema(
    name="get_weather",
    description="Weather for a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
