"""Parsing a text-mode (ReAct) reply into thoughts, tool calls and a final answer.

Recognised, case-insensitively, at the start of a line (Markdown bold or headings allowed):
``Thought:``, ``Action:``, ``Action Input:``, ``Observation:`` and ``Final Answer:``. A call is
an ``Action:`` (with an optional ``Action Input:``, whose JSON object may span lines or sit in a
fenced block), or a JSON object ``{"tool": name, "arguments": {...}}`` (also ``name`` /
``parameters``, ``action`` / ``action_input``), fenced or bare. Rules:

- Actions win: once a reply asks for a tool, a ``Final Answer`` or ``Observation`` after it is
  the model imagining the result and is dropped, with everything after it.
- ``Final Answer:`` with no action before it: everything after the label is the answer.
- No action and no label: the whole reply is the answer (models often just answer).
- Several actions are several calls, in order (only the first when parallel calls are off).
- Arguments are parsed with :func:`agentloop.parsing.parse_arguments` and re-written with
  ``json.dumps``; arguments that do not parse are kept raw, so the loop's own validation answers
  with the JSON error. A bare value for a tool with exactly one parameter becomes that parameter.
- An action that names no tool, or an unparseable call block, becomes a call to
  :data:`~agentloop.models.text_protocol.PARSE_ERROR_TOOL` recording the reason and the text.

The parser never raises: any text is a valid reply.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from agentloop.models.base import ToolSchema
from agentloop.models.text_protocol import PARSE_ERROR_TOOL, dumps
from agentloop.parsing import ArgumentsParseError, parse_arguments, split_strings, unfence

_MARKER = re.compile(
    r"^[ \t>#*_]*(thought|action[ _]?input|action|observation|final[ _]?answer)[ \t*_]*:"
    r"(?:\*\*|__)?[ \t]*",
    re.I | re.M,
)
FINAL_LABEL = re.compile(r"^[ \t>#*_]*final[ _]?answer[ \t*_]*:", re.I | re.M)
_FENCE = re.compile(r"^[ \t]*```[ \t]*[\w+.-]*[ \t]*\n(.*?)(?:```|\Z)", re.S | re.M)
_FENCE_HERE = re.compile(r"```[ \t]*[\w+.-]*[ \t]*\n?(.*?)(?:```|\Z)", re.S)
_LOOKS_LIKE_CALL = re.compile(r"[\"'](tool|tool_name|action|arguments|action_input)[\"']\s*:")
_BRACES = re.compile(r"[{}]")
_DECORATION = " \t`*\"'.:"
_NAME_KEYS = ("tool", "tool_name", "action", "name")
_ARG_KEYS = ("arguments", "args", "parameters", "action_input", "tool_input", "input")
_ALLOWED_KEYS = frozenset((*_NAME_KEYS, *_ARG_KEYS, "type", "id", "call_id", "thought"))
_FINAL_NAMES = frozenset(("final answer", "final_answer", "finalanswer"))
MAX_RECORDED_CHARS = 4000


@dataclass(frozen=True, slots=True)
class ParsedCall:
    """A tool call found in a reply; ``arguments`` is JSON text (or the raw text if invalid)."""

    name: str
    arguments: str


Step: TypeAlias = str | ParsedCall
"""A thought (text) or a call, in reply order."""


@dataclass(frozen=True, slots=True)
class Reply:
    """A parsed reply: thoughts and calls in order, and the final answer if there is no call."""

    steps: tuple[Step, ...]
    answer: str | None

    @property
    def calls(self) -> list[ParsedCall]:
        return [s for s in self.steps if isinstance(s, ParsedCall)]

    @property
    def thoughts(self) -> list[str]:
        return [s for s in self.steps if isinstance(s, str)]


def parse_error(reason: str, text: str) -> ParsedCall:
    """The pseudo-call standing for an action that could not be parsed."""
    recorded = text.strip()[:MAX_RECORDED_CHARS]
    return ParsedCall(
        name=PARSE_ERROR_TOOL, arguments=dumps({"error": reason, "text": recorded}) or "{}"
    )


# --- arguments ---------------------------------------------------------------------------------


def _single_parameter(tool: ToolSchema | None) -> str | None:
    props = tool.parameters.get("properties") if tool else None
    if isinstance(props, Mapping) and len(props) == 1:
        return str(next(iter(props)))
    return None


def _bare_value(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'`":
        return text[1:-1]
    return text


def _arguments_text(tool: ToolSchema | None, value: Any, raw: str) -> str:
    """Arguments as JSON text; the raw text when they cannot be made into an object."""
    if isinstance(value, str):
        if not value.strip():
            return "{}"
        try:
            return dumps(parse_arguments(value)) or raw
        except ArgumentsParseError:
            single = _single_parameter(tool)
            if single and not unfence(value).startswith(("{", "[")):
                return dumps({single: _bare_value(value)}) or raw
            return value.strip()
    if isinstance(value, dict):
        return dumps(value) or raw
    single = _single_parameter(tool)
    if single is not None:
        return dumps({single: value}) or raw
    return dumps(value) or raw


def _find_tool(name: str, tools: Sequence[ToolSchema]) -> tuple[str, ToolSchema | None]:
    """The tool a written name means: exact, then ignoring case, then its first word."""
    for tool in tools:
        if tool.name == name:
            return name, tool
    folded = name.casefold()
    for tool in tools:
        if tool.name.casefold() == folded:
            return tool.name, tool
    first = re.split(r"[\s(\[{]", name, maxsplit=1)[0].strip(_DECORATION)
    if first and first != name:
        return _find_tool(first, tools)
    return name, None


# --- JSON call blocks ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Answer:
    text: str


def _object_end(text: str, start: int, limit: int) -> int | None:
    """End of the balanced ``{...}`` starting at ``start`` (strings skipped), or None."""
    depth = 0
    segment = text[start:limit]
    for a, b, is_string in split_strings(segment):
        if is_string:
            continue
        for match in _BRACES.finditer(segment, a, b):
            depth += 1 if match.group() == "{" else -1
            if depth == 0:
                return start + match.end()
    return None


def _call_from_object(
    obj: Mapping[str, Any], tools: Sequence[ToolSchema], raw: str
) -> ParsedCall | _Answer | None:
    """A call (or a final answer) if ``obj`` has the shape of one; None for other JSON."""
    function = obj.get("function")
    if isinstance(function, Mapping):
        obj = function
    if not set(obj) <= _ALLOWED_KEYS:
        return None
    key = next((k for k in _NAME_KEYS if isinstance(obj.get(k), str)), None)
    arg_key = next((k for k in _ARG_KEYS if k in obj), None)
    if key is None or (key == "name" and arg_key is None):
        return None
    written = str(obj[key]).strip(_DECORATION)
    value = obj[arg_key] if arg_key else {}
    if written.casefold() in _FINAL_NAMES:
        answer = value if isinstance(value, str) else dumps(value)
        return _Answer(answer or "")
    if not written:
        return parse_error("the tool call block names no tool", raw)
    name, tool = _find_tool(written, tools)
    return ParsedCall(name=name, arguments=_arguments_text(tool, value, raw))


def _block(text: str, tools: Sequence[ToolSchema]) -> ParsedCall | _Answer | None:
    """A JSON call block's meaning; a parse error only if it clearly tried to be a call."""
    try:
        obj = parse_arguments(text)
    except ArgumentsParseError as exc:
        if _LOOKS_LIKE_CALL.search(text):
            return parse_error(f"the JSON tool call block could not be parsed ({exc})", text)
        return None
    return _call_from_object(obj, tools, text)


# --- sections ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Section:
    kind: str  # text, thought, action, input, observation, final
    start: int
    body: int
    end: int


def _kind(label: str) -> str:
    label = label.lower().replace(" ", "").replace("_", "")
    return {"actioninput": "input", "finalanswer": "final"}.get(label, label)


def _input_span(text: str, start: int, limit: int) -> tuple[str, int]:
    """The raw Action Input starting at ``start``: a balanced object or a fenced block (both may
    run past ``limit``, the next label), else the rest of the line."""
    s = start
    while s < len(text) and text[s] in " \t\r\n":
        s += 1
    if text.startswith("```", s):
        fence = _FENCE_HERE.match(text, s)
        if fence is not None:
            return fence.group(1), fence.end()
    if text.startswith("{", s):
        end = _object_end(text, s, len(text))
        if end is not None:
            return text[s:end], end
        return text[s:limit], limit
    line_end = text.find("\n", s, limit)
    line_end = limit if line_end < 0 else line_end
    return text[s:line_end], limit


def _sections(text: str) -> list[_Section]:
    """Labelled sections up to and including the first Final Answer (which runs to the end)."""
    out: list[_Section] = []
    match = _MARKER.search(text)
    first = match.start() if match else len(text)
    if first > 0:
        out.append(_Section("text", 0, 0, first))
    while match is not None:
        kind = _kind(match.group(1))
        if kind == "final":
            out.append(_Section(kind, match.start(), match.end(), len(text)))
            break
        nxt = _MARKER.search(text, match.end())
        end = nxt.start() if nxt else len(text)
        if kind == "input":
            _, span_end = _input_span(text, match.end(), end)
            if span_end > end:
                end = span_end
                nxt = _MARKER.search(text, end)
        out.append(_Section(kind, match.start(), match.end(), end))
        match = nxt
    return out


# --- the reply -----------------------------------------------------------------------------


@dataclass(slots=True)
class _Scan:
    steps: list[Step]
    answer_at: int | None = None
    blob_answer: str | None = None


def _free_text(text: str, a: int, b: int, tools: Sequence[ToolSchema], scan: _Scan) -> None:
    """Text outside Action lines: thoughts, with any fenced or bare JSON call blocks."""
    pos = a
    stripped = a + len(text[a:b]) - len(text[a:b].lstrip())
    if text.startswith("{", stripped):
        end = _object_end(text, stripped, b)
        found = _block(text[stripped:end], tools) if end is not None else None
        if end is not None and found is not None:
            _add_block(found, scan)
            pos = end
    for fence in _FENCE.finditer(text, pos, b):
        found = _block(fence.group(1), tools)
        if found is None:
            continue
        scan.steps.append(text[pos : fence.start()])
        _add_block(found, scan)
        pos = fence.end()
    scan.steps.append(text[pos:b])


def _add_block(found: ParsedCall | _Answer, scan: _Scan) -> None:
    if isinstance(found, _Answer):
        if scan.blob_answer is None:
            scan.blob_answer = found.text
    else:
        scan.steps.append(found)


def _action(text: str, section: _Section, tools: Sequence[ToolSchema]) -> tuple[ParsedCall, str]:
    """An Action section as a call (with no or inline arguments) and its tool's name."""
    body = text[section.body : section.end]
    line, _, rest = body.partition("\n")
    raw_all = text[section.start : section.end]
    offset = section.body
    if not line.strip(_DECORATION) and rest.strip():
        if rest.lstrip().startswith(("{", "```")):
            found = _block(unfence(rest), tools)
            if isinstance(found, ParsedCall):
                return found, found.name
            return parse_error("the Action line names no tool", raw_all), ""
        offset += len(line) + 1 + len(rest) - len(rest.lstrip())
        line = rest.lstrip().partition("\n")[0]
    brace = line.find("{")
    written = (line[:brace] if brace >= 0 else line).strip(_DECORATION)
    if not written:
        return parse_error("the Action line names no tool", raw_all), ""
    name, tool = _find_tool(written, tools)
    if brace >= 0:
        raw, _ = _input_span(text, offset + brace, section.end)
        return ParsedCall(name=name, arguments=_arguments_text(tool, raw, raw)), name
    return ParsedCall(name=name, arguments="{}"), name


def _scan(text: str, tools: Sequence[ToolSchema]) -> _Scan:
    scan = _Scan(steps=[])
    pending: tuple[ParsedCall, str] | None = None
    pending_at = 0

    def attempted() -> bool:
        return pending is not None or any(isinstance(s, ParsedCall) for s in scan.steps)

    for section in _sections(text):
        kind = section.kind
        if kind in ("text", "thought"):
            if pending is not None:
                scan.steps.append(pending[0])
                pending = None
            _free_text(text, section.body, section.end, tools, scan)
        elif kind == "action":
            if pending is not None:
                scan.steps.append(pending[0])
            pending, pending_at = _action(text, section, tools), section.start
        elif kind == "input":
            raw, _ = _input_span(text, section.body, section.end)
            if pending is None:
                reason = "an Action Input came without an Action line naming the tool"
                scan.steps.append(parse_error(reason, text[section.start : section.end]))
            elif not pending[1]:  # the Action named no tool: record the input with it
                reason = "the Action line names no tool"
                scan.steps.append(parse_error(reason, text[pending_at : section.end]))
            elif pending[0].name == PARSE_ERROR_TOOL:
                scan.steps.append(pending[0])
            else:
                name = pending[1]
                tool = next((t for t in tools if t.name == name), None)
                scan.steps.append(ParsedCall(name=name, arguments=_arguments_text(tool, raw, raw)))
            pending = None
        elif kind == "observation":
            if attempted():
                break
        elif kind == "final":
            if not attempted():
                scan.answer_at = section.body
            break
    if pending is not None:
        scan.steps.append(pending[0])
    return scan


def answer_start(text: str, tools: Sequence[ToolSchema]) -> int | None:
    """Where the final answer starts in ``text`` (after its ``Final Answer:`` label), if the
    reply is a final answer so far. Stable as the text grows: a streamed reply can show the
    answer from there on, as :func:`parse_reply` of the whole reply will."""
    if FINAL_LABEL.search(text) is None:
        return None
    return _scan(text, tools).answer_at


def _unlabelled(text: str) -> str:
    match = _MARKER.match(text.lstrip())
    if match and _kind(match.group(1)) in ("thought", "final"):
        return text.lstrip()[match.end() :].strip()
    return text.strip()


def _clean(steps: Sequence[Step]) -> tuple[Step, ...]:
    """Merge neighbouring thoughts, drop empty ones."""
    out: list[Step] = []
    for step in steps:
        if isinstance(step, str):
            step = step.strip()
            if not step:
                continue
            if out and isinstance(out[-1], str):
                out[-1] = f"{out[-1]}\n{step}"
                continue
        out.append(step)
    return tuple(out)


def parse_reply(
    text: str, tools: Sequence[ToolSchema], *, parallel_tool_calls: bool = True
) -> Reply:
    """Parse a whole reply. Never raises."""
    scan = _scan(text, tools)
    steps = _clean(scan.steps)
    if any(isinstance(s, ParsedCall) for s in steps):
        if not parallel_tool_calls:
            first = next(i for i, s in enumerate(steps) if isinstance(s, ParsedCall))
            steps = steps[: first + 1]
        return Reply(steps=steps, answer=None)
    if scan.answer_at is not None:
        return Reply(steps=steps, answer=text[scan.answer_at :].strip())
    if scan.blob_answer is not None:
        return Reply(steps=(), answer=scan.blob_answer.strip())
    return Reply(steps=(), answer=_unlabelled(text))
