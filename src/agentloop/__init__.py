"""agentloop: an agentic tool-calling runtime.

One loop (model call, policy-checked and conflict-scheduled tool calls, outputs fed back) with
three faces: this library, the Open Responses gateway and the terminal console.
"""

from __future__ import annotations

from agentloop.errors import (
    AgentloopError,
    ConfigError,
    ModelError,
    OutputRejected,
    ScriptExhausted,
    StateError,
    ToolError,
    UserError,
)
from agentloop.items import (
    FunctionCall,
    FunctionCallOutput,
    InputImage,
    InputText,
    Item,
    Message,
    OutputText,
    Reasoning,
    Usage,
)
from agentloop.models.base import Model, ModelRequest, ModelResponse, ModelSettings
from agentloop.run.agent import Agent
from agentloop.run.cache import ResultCache
from agentloop.run.hooks import Hooks
from agentloop.run.limits import Limits
from agentloop.run.policy import Policy
from agentloop.run.result import AuditRecord, PendingCall, RunResult
from agentloop.run.state import RunState
from agentloop.run.stream import RunStream
from agentloop.tools.context import ToolContext
from agentloop.tools.tool import Tool, tool

__version__ = "0.1.0"

__all__ = [
    "Agent",
    "AgentloopError",
    "AuditRecord",
    "ConfigError",
    "FunctionCall",
    "FunctionCallOutput",
    "Hooks",
    "InputImage",
    "InputText",
    "Item",
    "Limits",
    "Message",
    "Model",
    "ModelError",
    "ModelRequest",
    "ModelResponse",
    "ModelSettings",
    "OutputRejected",
    "OutputText",
    "PendingCall",
    "Policy",
    "Reasoning",
    "ResultCache",
    "RunResult",
    "RunState",
    "RunStream",
    "ScriptExhausted",
    "StateError",
    "Tool",
    "ToolContext",
    "ToolError",
    "Usage",
    "UserError",
    "tool",
]
