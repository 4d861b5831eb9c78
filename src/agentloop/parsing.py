"""Parsing of tool-call arguments that models produce, strict first, then safely repaired.

``json.loads`` is tried first. Models (especially small ones) sometimes write Python literals
instead (``{'path': 'a.txt', 'force': True}``); those are repaired with :func:`ast.literal_eval`,
which evaluates literals only and never runs code, behind size and nesting guards so a hostile
string cannot exhaust memory or the stack.
"""

from __future__ import annotations

import ast
import json
import math
from typing import Any

MAX_LITERAL_CHARS = 200_000
MAX_NESTING = 64


class ArgumentsParseError(ValueError):
    """The text is neither JSON nor a safe Python literal; the message says why."""


def _nesting_depth(text: str) -> int:
    depth = deepest = 0
    quote: str | None = None
    escaped = False
    for ch in text:
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch in "[{(":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]})":
            depth -= 1
    return deepest


def _to_json_value(value: Any, depth: int = 0) -> Any:
    """Keep only JSON-representable values (tuples become lists; keys must be strings)."""
    if depth > MAX_NESTING:
        raise ArgumentsParseError("arguments are nested too deeply")
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ArgumentsParseError("arguments contain a non-finite number")
        return value
    if isinstance(value, list | tuple):
        return [_to_json_value(v, depth + 1) for v in value]
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, val in value.items():
            if not isinstance(key, str):
                raise ArgumentsParseError("object keys must be strings")
            out[key] = _to_json_value(val, depth + 1)
        return out
    raise ArgumentsParseError(f"arguments contain a {type(value).__name__}, which is not JSON")


def parse_literal(text: str) -> Any:
    """Parse a Python literal safely (no code runs), or raise :class:`ArgumentsParseError`."""
    if len(text) > MAX_LITERAL_CHARS:
        raise ArgumentsParseError("arguments are too long to repair")
    if _nesting_depth(text) > MAX_NESTING:
        raise ArgumentsParseError("arguments are nested too deeply")
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        raise ArgumentsParseError(f"not valid JSON ({type(exc).__name__})") from None
    return _to_json_value(value)


def parse_arguments(raw: str | None) -> dict[str, Any]:
    """Parse tool-call arguments into a dict. Empty text means no arguments."""
    if raw is None or not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError) as json_exc:
        try:
            value = parse_literal(raw)
        except ArgumentsParseError:
            raise ArgumentsParseError(
                f"arguments are not valid JSON: {json_exc}. Send a JSON object."
            ) from None
    if not isinstance(value, dict):
        raise ArgumentsParseError(f"arguments must be a JSON object, got {type(value).__name__}")
    return value
