"""Models: the protocol the loop speaks, and the provider adapters."""

from __future__ import annotations

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
from agentloop.models.base import (
    Model,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    ToolSchema,
)
from agentloop.models.resolve import resolve
from agentloop.models.retry import RetryPolicy
from agentloop.models.text_mode import TextModeFallback, TextToolMode

__all__ = [
    "AuthenticationFailed",
    "BadRequest",
    "ContextWindowExceeded",
    "Model",
    "ModelError",
    "ModelNotFound",
    "ModelRequest",
    "ModelResponse",
    "ModelSettings",
    "ProviderUnavailable",
    "RateLimited",
    "RetryPolicy",
    "TextModeFallback",
    "TextToolMode",
    "ToolSchema",
    "ToolsNotSupported",
    "resolve",
]
