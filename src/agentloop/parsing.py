"""Parsing of tool-call arguments that models produce, strict first, then safely repaired.

``json.loads`` is tried first. Models (especially small ones) sometimes write Python literals
instead (``{'path': 'a.txt', 'force': True}``); those are repaired with :func:`ast.literal_eval`,
which evaluates literals only and never runs code, behind size and nesting guards so a hostile
string cannot exhaust memory or the stack. After that come lenient repairs for the other usual
slips: a fenced ```json block, doubled braces (``{{...}}``, copied from prompt templates),
trailing commas, and JSON's ``true``/``false``/``null`` inside a Python-style dict. Repairs only
run on text that is not valid JSON, so valid input is never reinterpreted.

This is the one argument parser: native tool calls (the loop) and the text-mode protocol
(:mod:`agentloop.models.text_mode`) both use :func:`parse_arguments`.
"""

from __future__ import annotations

import ast
import json
import math
import re
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from pydantic_core import from_json

MAX_LITERAL_CHARS = 200_000
MAX_NESTING = 64

_QUOTES = re.compile(r"[\"']")
_STRING_END = {'"': re.compile(r'[\\"]'), "'": re.compile(r"[\\']")}
_BRACKETS = re.compile(r"[\[\]{}()]")
_FENCE_OPEN = re.compile(r"```[ \t]*[\w+.-]*[ \t]*\n?")
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")
_JSON_CONSTANTS = re.compile(r"\b(true|false|null)\b")
_PYTHON_CONSTANTS = {"true": "True", "false": "False", "null": "None"}


class ArgumentsParseError(ValueError):
    """The text is neither JSON nor a safe Python literal; the message says why."""


def split_strings(text: str) -> Iterator[tuple[int, int, bool]]:
    """Split ``text`` into ``(start, end, is_string)`` segments, in order.

    A string starts at a ``"`` or ``'`` and ends at the same unescaped quote (or at the end of
    the text). Linear time: the scan jumps between quotes and backslashes with regexes.
    """
    pos, n = 0, len(text)
    while pos < n:
        match = _QUOTES.search(text, pos)
        if match is None:
            yield pos, n, False
            return
        if match.start() > pos:
            yield pos, match.start(), False
        quote, start = match.group(), match.start()
        end_re = _STRING_END[quote]
        i = start + 1
        while True:
            hit = end_re.search(text, i)
            if hit is None:
                i = n
                break
            if hit.group() == "\\":
                i = hit.start() + 2
                continue
            i = hit.end()
            break
        end = min(i, n)
        yield start, end, True
        pos = end


def _rewrite_outside_strings(text: str, rewrite: Callable[[str], str]) -> str:
    """Apply ``rewrite`` to every part of ``text`` that is not inside a string literal."""
    return "".join(
        text[a:b] if is_string else rewrite(text[a:b]) for a, b, is_string in split_strings(text)
    )


def _nesting_depth(text: str) -> int:
    depth = deepest = 0
    for start, end, is_string in split_strings(text):
        if is_string:
            continue
        for match in _BRACKETS.finditer(text, start, end):
            if match.group() in "[{(":
                depth += 1
                deepest = max(deepest, depth)
            else:
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
        # Compiling the model's text may warn about its escapes ("\[" in a string): that is the
        # model's text, not our code, and must not reach the user's stderr.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        raise ArgumentsParseError(f"not valid JSON ({type(exc).__name__})") from None
    return _to_json_value(value)


# --- lenient repairs -------------------------------------------------------------------------


def _fence_contents(text: str) -> list[str]:
    """Possible contents of a code fence that ``text`` starts with: up to the fence that ends
    the text (so a ``"```"`` inside a string survives), and up to the first closing fence."""
    stripped = text.strip()
    opening = _FENCE_OPEN.match(stripped)
    if opening is None:
        return []
    body = stripped[opening.end() :]
    first = body.find("```")
    out = [body[:-3].strip()] if first >= 0 and body.endswith("```") else []
    out.append((body if first < 0 else body[:first]).strip())
    return out


def unfence(text: str) -> str:
    """The content of a Markdown code fence (```json ... ```) that ``text`` starts with,
    or ``text`` unchanged. An unclosed fence runs to the end of the text."""
    contents = _fence_contents(text)
    return contents[0] if contents else text.strip()


def _undouble_braces(text: str) -> list[str]:
    """Candidates for ``{{...}}`` (a template's escaped braces): one outer layer removed, and
    every doubled brace outside strings halved."""
    if not (text.startswith("{{") and text.endswith("}}")):
        return []
    halved = _rewrite_outside_strings(text, lambda s: s.replace("{{", "{").replace("}}", "}"))
    return [text[1:-1].strip(), halved]


def _drop_trailing_commas(text: str) -> str:
    text = _rewrite_outside_strings(text, lambda s: _TRAILING_COMMA.sub(r"\1", s))
    return text.rstrip().rstrip(",").rstrip()


def _repair_candidates(raw: str) -> list[str]:
    """``raw``, then repaired versions of it, mildest first; each distinct text once."""
    unfenced = _fence_contents(raw) or [raw.strip()]
    doubled = [d for text in unfenced for d in _undouble_braces(text)]
    bases = [*unfenced, *doubled]
    steps = [raw, *bases, *(_drop_trailing_commas(t) for t in bases)]
    return [c for i, c in enumerate(steps) if c and c not in steps[:i]]


def _literal(text: str) -> Any:
    """A safe Python literal, also when it uses JSON's ``true``/``false``/``null``."""
    try:
        return parse_literal(text)
    except ArgumentsParseError:
        if len(text) > MAX_LITERAL_CHARS or not _JSON_CONSTANTS.search(text):
            raise
    pythonic = _rewrite_outside_strings(
        text, lambda s: _JSON_CONSTANTS.sub(lambda m: _PYTHON_CONSTANTS[m.group()], s)
    )
    return parse_literal(pythonic)


def parse_arguments(raw: str | None) -> dict[str, Any]:
    """Parse tool-call arguments into a dict. Empty text means no arguments."""
    if not raw or raw.isspace():
        return {}
    try:  # strict JSON parsed in Rust: fast for the usual, well-formed case
        value = from_json(raw, cache_strings="keys")
    except ValueError:
        try:
            value = json.loads(raw)  # what from_json refuses but Python reads (lone surrogates)
        except (ValueError, RecursionError) as json_exc:
            value = _repaired(raw, json_exc)
    if not isinstance(value, dict):
        raise ArgumentsParseError(f"arguments must be a JSON object, got {type(value).__name__}")
    return value


def _repaired(raw: str, json_exc: BaseException) -> Any:
    """The first repair that parses, or an :class:`ArgumentsParseError` naming the JSON error.

    Every repaired text is tried as JSON before any is read as a Python literal: a literal
    reads JSON's escapes differently (a ``\\ud83d\\ude00`` pair stays two surrogates)."""
    error = ArgumentsParseError(f"arguments are not valid JSON: {json_exc}. Send a JSON object.")
    if len(raw) > MAX_LITERAL_CHARS:
        raise error from None
    candidates = _repair_candidates(raw)
    for candidate in candidates[1:]:
        try:
            return json.loads(candidate)
        except (ValueError, RecursionError):
            continue
    for candidate in candidates:
        try:
            return _literal(candidate)
        except ArgumentsParseError:
            continue
    raise error from None
