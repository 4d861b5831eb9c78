"""A small deterministic toolset for demos, tests and benchmarks (``[toolsets] demo``).

Enable it with ``demo = "agentloop.gateway.demo_tools:TOOLS"`` and a request tool
``{"type": "agentloop:toolset", "name": "demo"}``.
"""

from __future__ import annotations

from agentloop.errors import ToolError
from agentloop.tools.tool import tool

_WEATHER = {"paris": "18°C, light rain", "tokyo": "24°C, clear", "lima": "19°C, overcast"}


@tool(read_only=True)
def get_weather(city: str) -> str:
    """Current weather for a city.

    Args:
        city: The city name.
    """
    return f"{city}: {_WEATHER.get(city.lower(), '21°C, sunny')}"


@tool(read_only=True)
def add(a: float, b: float) -> float:
    """Add two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


@tool(read_only=True)
def lookup(key: str) -> str:
    """Look a key up in a tiny fixed table.

    Args:
        key: What to look up.
    """
    table = {"answer": "42", "capital_of_france": "Paris", "speed_of_light": "299792458 m/s"}
    if key not in table:
        raise ToolError(f"No entry for '{key}'. Known keys: {', '.join(sorted(table))}.")
    return table[key]


@tool
def write_note(text: str) -> str:
    """Record a note (a writing tool: runs alone, never cached).

    Args:
        text: The note.
    """
    return f"noted ({len(text)} characters)"


TOOLS = [get_weather, add, lookup, write_note]
