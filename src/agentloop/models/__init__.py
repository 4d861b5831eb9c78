"""Models: the protocol the loop speaks, and the provider adapters."""

from __future__ import annotations

from agentloop.models.base import (
    Model,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    ToolSchema,
)

__all__ = ["Model", "ModelRequest", "ModelResponse", "ModelSettings", "ToolSchema"]
