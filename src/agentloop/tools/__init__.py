"""Tools: the decorator, the Tool type and the context injected into tools."""

from __future__ import annotations

from agentloop.tools.context import ToolContext
from agentloop.tools.tool import Tool, tool

__all__ = ["Tool", "ToolContext", "tool"]
