"""Tools of a request: client-executed function tools and server-side toolsets.

A request's ``function`` tools become schema-only tools the client executes; a tool of type
``agentloop:toolset`` enables a toolset from the config's ``[toolsets]`` (an import path to a
list of tools, a single tool, or an object with a ``tools`` attribute).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agentloop.errors import ConfigError
from agentloop.gateway.wire import ApiError, FunctionToolParam, ToolParam
from agentloop.tools.tool import Tool, as_tool


def _flatten(value: Any, where: str) -> list[Tool]:
    if isinstance(value, Tool):
        return [value]
    inner = getattr(value, "tools", None)
    if inner is not None and not callable(inner):
        return _flatten(inner, where)
    if isinstance(value, Iterable) and not isinstance(value, str | bytes | Mapping):
        out: list[Tool] = []
        for entry in value:
            out.extend(_flatten(entry, where))
        return out
    if callable(value):
        return [as_tool(value)]
    raise ConfigError(f"{where} is not a tool, a list of tools or a toolset")


def import_toolset(path: str) -> list[Tool]:
    """Import ``"pkg.module:attr"`` and return its tools."""
    module_name, sep, attr = path.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"toolset path {path!r} must look like 'pkg.module:attr'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"cannot import toolset module {module_name!r}: {exc}") from None
    value: Any = module
    for part in attr.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise ConfigError(f"toolset {path!r}: {module_name} has no {attr!r}") from None
    tools = _flatten(value, f"toolset {path!r}")
    names = [t.name for t in tools]
    if len(set(names)) != len(names):
        raise ConfigError(f"toolset {path!r} has two tools with the same name")
    return tools


def request_tools(
    params: Sequence[ToolParam] | None, toolsets: Mapping[str, Sequence[Tool]]
) -> list[Tool]:
    """The tools a request enables; a 400 naming the parameter for anything wrong."""
    tools: list[Tool] = []
    seen: dict[str, int] = {}
    for index, param in enumerate(params or ()):
        if isinstance(param, FunctionToolParam):
            new = [
                Tool.external(
                    param.name,
                    param.description or "",
                    param.parameters or {"type": "object", "properties": {}},
                )
            ]
        else:
            found = toolsets.get(param.name)
            if found is None:
                known = ", ".join(sorted(toolsets)) or "none are configured"
                raise ApiError(
                    400,
                    f"Unknown toolset '{param.name}' (known: {known}).",
                    code="unknown_toolset",
                    param=f"tools[{index}].name",
                )
            new = list(found)
        for tool in new:
            if tool.name in seen:
                raise ApiError(
                    400,
                    f"Two tools are named '{tool.name}' (tools[{seen[tool.name]}] and "
                    f"tools[{index}]).",
                    code="duplicate_tool",
                    param=f"tools[{index}]",
                )
            seen[tool.name] = index
            tools.append(tool)
    return tools
