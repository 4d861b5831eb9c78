"""The one exception hierarchy of agentloop.

User mistakes (bad configuration, bad input, a bad saved state) raise :class:`UserError`
subclasses with a message meant to be read by a person. Provider failures are
:class:`ModelError` subclasses; the loop turns them into a ``failed`` result. A tool's failure is
never an exception to the caller: it is fed back to the model as an error output (raise
:class:`ToolError` from a tool to choose the exact message).
"""

from __future__ import annotations


class AgentloopError(Exception):
    """Base of every error agentloop raises."""


# --- user mistakes -------------------------------------------------------------------------


class UserError(AgentloopError):
    """A mistake in how agentloop is used; the message says what to change."""


class ConfigError(UserError):
    """Invalid configuration (a tool definition, limits, policy, model string...)."""


class InvalidItem(UserError):
    """Input that is not a valid Open Responses item."""


class StateError(UserError):
    """A run state that cannot be resumed (corrupt JSON, wrong version, missing outputs...)."""


# --- tools ---------------------------------------------------------------------------------


class ToolError(AgentloopError):
    """Raise from a tool to send exactly this message back to the model as an error output."""


class OutputRejected(AgentloopError):
    """Raised by an output validator to reject a structured output; the message goes back
    to the model."""


# --- models --------------------------------------------------------------------------------


class ModelError(AgentloopError):
    """A model call failed. ``retries`` is how many retries were made before giving up."""

    retryable: bool = False

    def __init__(self, message: str, *, status_code: int | None = None, retries: int = 0) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.retries = retries


class ScriptExhausted(ModelError):
    """A scripted test model was asked for more turns than its script has."""


class RateLimited(ModelError):
    """The provider asked us to slow down (HTTP 429). ``retry_after`` is in seconds, if given."""

    retryable = True

    def __init__(
        self,
        message: str,
        *,
        retry_after: float | None = None,
        status_code: int | None = 429,
        retries: int = 0,
    ) -> None:
        super().__init__(message, status_code=status_code, retries=retries)
        self.retry_after = retry_after


class ProviderUnavailable(ModelError):
    """The provider failed or could not be reached (5xx, timeout, dropped connection)."""

    retryable = True


class AuthenticationFailed(ModelError):
    """Missing or rejected credentials."""


class BadRequest(ModelError):
    """The provider rejected the request (a 4xx other than auth, not-found and rate limits)."""


class ContextWindowExceeded(BadRequest):
    """The conversation no longer fits in the model's context window."""


class ToolsNotSupported(BadRequest):
    """The model has no native function calling (the text-mode fallback handles this)."""


class ModelNotFound(ModelError):
    """The provider does not know the model name."""
