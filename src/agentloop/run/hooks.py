"""Run hooks: observe a run at its key moments by overriding async methods of :class:`Hooks`.

Hooks are driven by the loop's own events, so they see exactly what a stream consumer sees. A
hook that raises never breaks the run: the exception is collected in ``RunResult.hook_errors``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from agentloop.models.base import ModelResponse

if TYPE_CHECKING:
    from agentloop.run.events import Event
    from agentloop.run.result import RunResult
    from agentloop.run.state import RunState

log = logging.getLogger("agentloop.hooks")


class Hooks:
    """Subclass and override what you need; every method is optional."""

    async def on_run_start(self, state: RunState) -> None:
        """The run (or a resume of it) starts."""

    async def on_turn_start(self, state: RunState, turn: int) -> None:
        """A model call is about to be made."""

    async def on_model_response(self, state: RunState, response: ModelResponse) -> None:
        """The model answered (its items are already in ``state.items``)."""

    async def on_tool_call(
        self, state: RunState, tool_name: str, arguments: dict[str, Any]
    ) -> None:
        """A tool call starts (or is refused just after this)."""

    async def on_tool_result(
        self, state: RunState, tool_name: str, result: str, error: str | None
    ) -> None:
        """A tool call finished. ``error`` is the error text when it failed, else None."""

    async def on_attempt_start(self, state: RunState, attempt: int) -> None:
        """A structured-output attempt starts (1-based)."""

    async def on_validation_failure(self, state: RunState, errors: list[str]) -> None:
        """A structured output was rejected; ``errors`` go back to the model."""

    async def on_run_end(self, state: RunState, result: RunResult) -> None:
        """The run ended (any status)."""


async def dispatch(
    hooks: Hooks, state: RunState, event: Event, errors: list[BaseException]
) -> None:
    """Call the hook that matches ``event``; collect what it raises."""
    from agentloop.run import events as ev

    try:
        if isinstance(event, ev.RunStarted):
            await hooks.on_run_start(state)
        elif isinstance(event, ev.TurnStarted):
            await hooks.on_turn_start(state, event.turn)
        elif isinstance(event, ev.ModelResponded):
            await hooks.on_model_response(state, event.response)
        elif isinstance(event, ev.ToolCallStarted):
            await hooks.on_tool_call(state, event.name, event.arguments)
        elif isinstance(event, ev.ToolCallFinished):
            error = event.output if event.is_error else None
            await hooks.on_tool_result(state, event.name, event.output, error)
        elif isinstance(event, ev.AttemptStarted):
            await hooks.on_attempt_start(state, event.attempt)
        elif isinstance(event, ev.OutputValidationFailed):
            await hooks.on_validation_failure(state, list(event.errors))
        elif isinstance(event, ev.RunFinished):
            await hooks.on_run_end(state, event.result)
    except Exception as exc:
        log.warning("hook for %s raised", event.type, exc_info=True)
        errors.append(exc)
