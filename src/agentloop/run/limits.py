"""Budgets for a run: :class:`Limits`."""

from __future__ import annotations

from dataclasses import dataclass

from agentloop.errors import ConfigError


@dataclass(frozen=True, kw_only=True, slots=True)
class Limits:
    """How far a run may go before it stops as ``incomplete``.

    ``max_turns`` ends with reason ``max_turns``; ``max_consecutive_errors`` (turns in which every
    call failed) with ``tool_errors``; every other budget with ``budget_exceeded`` and the
    budget's name in ``RunResult.budget``. ``max_output_chars`` caps one tool output (longer
    outputs are truncated with a marker and marked as errors). ``tool_timeout`` applies to tools
    without a timeout of their own. ``max_files_modified`` and ``max_lines_changed`` count what
    writing tools report through ``ToolContext.record_change``; a writing call that would pass
    them is refused before it runs.
    """

    max_turns: int = 20
    max_tool_calls: int | None = None
    max_total_tokens: int | None = None
    max_duration_s: float | None = None
    max_consecutive_errors: int | None = 3
    max_parallel_tools: int | None = None
    max_output_chars: int = 50_000
    max_files_modified: int | None = None
    max_lines_changed: int | None = None
    tool_timeout: float | None = 300.0
    max_attempts: int = 3
    max_turns_per_attempt: int = 15

    def __post_init__(self) -> None:
        for name in (
            "max_turns",
            "max_tool_calls",
            "max_total_tokens",
            "max_consecutive_errors",
            "max_parallel_tools",
            "max_output_chars",
            "max_attempts",
            "max_turns_per_attempt",
        ):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ConfigError(f"Limits.{name} must be a positive integer or None")
        for name in ("max_files_modified", "max_lines_changed"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 0):
                raise ConfigError(f"Limits.{name} must be a non-negative integer or None")
        for name in ("max_duration_s", "tool_timeout"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ConfigError(f"Limits.{name} must be positive or None")
