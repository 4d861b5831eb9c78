"""What a text-mode (ReAct) model is shown: the tool protocol and the conversation as text.

Tools are described in the instructions (name, description, JSON Schema of the arguments) with
the exact reply format. The history is rendered as plain messages: a tool call becomes the
assistant's ``Action:`` / ``Action Input:`` text with its arguments written by ``json.dumps``, a
tool output becomes a user message starting with ``Observation:``. Arguments the model once
wrote as a Python dict therefore come back to it as JSON: the model never learns single quotes.

:data:`PARSE_ERROR_TOOL` is the name of the pseudo-call that stands for a reply whose action could
not be parsed (see :mod:`agentloop.models.text_mode`); its observation is replaced here by the
reason and the expected format.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from agentloop.items import (
    FunctionCall,
    FunctionCallOutput,
    InputText,
    Item,
    Message,
    OutputText,
    Reasoning,
)
from agentloop.models.base import ToolChoice, ToolSchema
from agentloop.parsing import ArgumentsParseError, parse_arguments

PARSE_ERROR_TOOL = "text_format_error"
"""Reserved name of the pseudo-call recorded for an unparseable action."""

_EXAMPLE_VALUES: dict[str, Any] = {
    "string": "...",
    "integer": 1,
    "number": 1.5,
    "boolean": True,
    "array": [],
    "object": {},
}


def dumps(value: Any) -> str | None:
    """``json.dumps`` for the model's eyes, or None when the value cannot be written."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return None


def example_arguments(parameters: Mapping[str, Any]) -> str:
    """A JSON example of a tool's arguments: its required (else first) properties with
    placeholder values of the right type."""
    props = parameters.get("properties")
    if not isinstance(props, Mapping) or not props:
        return "{}"
    required = [p for p in parameters.get("required") or () if p in props]
    names = required or list(props)[:2]
    example: dict[str, Any] = {}
    for name in names[:4]:
        spec = props[name]
        kind = spec.get("type") if isinstance(spec, Mapping) else None
        example[str(name)] = _EXAMPLE_VALUES.get(kind if isinstance(kind, str) else "", "...")
    return dumps(example) or "{}"


def format_help(tools: Sequence[ToolSchema], tool_name: str | None = None) -> str:
    """The expected reply format, shown to the model after a reply it could not be parsed from."""
    names = ", ".join(t.name for t in tools) or "(none)"
    chosen = next((t for t in tools if t.name == tool_name), tools[0] if tools else None)
    example = example_arguments(chosen.parameters) if chosen else "{}"
    return (
        "Reply in exactly this format:\n"
        "Thought: <your reasoning>\n"
        f"Action: <one tool name: {names}>\n"
        f"Action Input: <the arguments as one JSON object with double quotes, e.g. {example}>\n"
        "or, when you have the answer:\n"
        "Final Answer: <your answer>"
    )


def _describe_tool(tool: ToolSchema) -> str:
    schema = dumps(dict(tool.parameters)) or "{}"
    description = tool.description.strip() or "(no description)"
    return f"### {tool.name}\n{description}\nArguments (JSON Schema): {schema}"


def protocol_instructions(
    tools: Sequence[ToolSchema],
    *,
    tool_choice: ToolChoice = "auto",
    parallel_tool_calls: bool = True,
    output_schema: Mapping[str, Any] | None = None,
) -> str:
    """The instructions that describe the tools and the exact reply protocol."""
    names = ", ".join(t.name for t in tools)
    example = example_arguments(tools[0].parameters) if tools else "{}"
    first = tools[0].name if tools else "tool_name"
    lines = [
        "## Tools",
        "You can use the tools below. A tool is used only by replying in the format described "
        "here; you cannot call tools any other way.",
        "",
        *(_describe_tool(t) + "\n" for t in tools),
        "## How to use a tool",
        "Reply in exactly this format, then stop and wait for the result:",
        "",
        "Thought: <what you need to do next and why>",
        f"Action: <the tool name, exactly one of: {names}>",
        "Action Input: <the arguments as one JSON object>",
        "",
        f"For example:\nThought: I need to use {first}.\nAction: {first}\nAction Input: {example}",
        "",
        "Instead of the Action lines you may write one fenced block:",
        f'```json\n{{"tool": "{first}", "arguments": {example}}}\n```',
        "",
        "Write the arguments as strict JSON: double quotes around keys and strings, no single "
        "quotes, no trailing commas, no comments.",
        'The result comes back to you in a message that starts with "Observation:". Never '
        "write an Observation yourself.",
    ]
    if parallel_tool_calls:
        lines.append(
            "To use several tools at once, write several Action / Action Input pairs in one "
            "reply; the observations come back numbered, in the same order."
        )
    else:
        lines.append("Use at most one tool per reply.")
    lines += [
        "",
        "## How to answer",
        "When you have the answer, or need no tool, reply:",
        "",
        "Thought: <your reasoning>",
        "Final Answer: <your answer to the user>",
    ]
    if output_schema is not None:
        schema = dumps(dict(output_schema)) or "{}"
        lines.append(f"The Final Answer must be JSON that matches this JSON Schema: {schema}")
    if tool_choice == "required":
        lines.append("\nYou must use a tool in your next reply.")
    elif tool_choice == "none":
        lines.append("\nDo not use any tool now: reply with a Final Answer.")
    elif tool_choice != "auto":
        lines.append(f"\nYou must use the tool {tool_choice} in your next reply.")
    return "\n".join(lines)


# --- history -----------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1024)
def render_action(name: str, arguments: str) -> tuple[str, bool]:
    """A call as the assistant's Action text, and whether its arguments failed to parse.

    Cached: the same calls are rendered again on every turn of a run."""
    if name == PARSE_ERROR_TOOL:
        try:
            recorded = parse_arguments(arguments).get("text")
        except ArgumentsParseError:
            recorded = None
        return (recorded if isinstance(recorded, str) else arguments), True
    try:
        text = dumps(parse_arguments(arguments))
    except ArgumentsParseError:
        text = None
    if text is None:
        return f"Action: {name}\nAction Input: {arguments}", True
    return f"Action: {name}\nAction Input: {text}", False


def _parse_error_reason(call: FunctionCall) -> str:
    try:
        reason = parse_arguments(call.arguments).get("error")
    except ArgumentsParseError:
        reason = None
    return reason if isinstance(reason, str) else "the action could not be parsed"


def _is_assistant_side(item: Item) -> bool:
    if isinstance(item, Message):
        return item.role == "assistant"
    return isinstance(item, FunctionCall | Reasoning)


def _render_assistant(group: Sequence[Item], react: bool) -> Message | None:
    has_calls = any(isinstance(i, FunctionCall) for i in group)
    parts: list[str] = []
    for item in group:
        if isinstance(item, FunctionCall):
            parts.append(render_action(item.name, item.arguments)[0])
        elif isinstance(item, Reasoning):
            thought = "\n".join(item.content or item.summary).strip()
            if thought:
                parts.append(f"Thought: {thought}" if react else thought)
        elif isinstance(item, Message) and item.text.strip():
            text = item.text.strip()
            if react:
                text = f"Thought: {text}" if has_calls else f"Final Answer: {text}"
            parts.append(text)
    if not parts:
        return None
    return Message(role="assistant", content=(OutputText(text="\n".join(parts)),))


def _render_outputs(
    group: Sequence[FunctionCallOutput],
    calls: Mapping[str, FunctionCall],
    tools: Sequence[ToolSchema],
) -> Message:
    parts: list[str] = []
    for number, output in enumerate(group, start=1):
        call = calls.get(output.call_id)
        name = call.name if call else "unknown"
        label = "Observation" if len(group) == 1 else f"Observation {number} ({name})"
        if call is not None and call.name == PARSE_ERROR_TOOL:
            body = (
                f"Error: your reply could not be parsed: {_parse_error_reason(call)}.\n\n"
                + format_help(tools)
            )
        elif output.is_error:
            body = f"Error: {output.output}"
            if call is not None and render_action(call.name, call.arguments)[1]:
                body += "\n\n" + format_help(tools, call.name)
        else:
            body = output.output
        parts.append(f"{label}: {body}")
    return Message(role="user", content=(InputText(text="\n\n".join(parts)),))


def render_history(
    items: Sequence[Item], tools: Sequence[ToolSchema], *, react: bool = True
) -> list[Item]:
    """The conversation as plain messages for a model without function calling.

    Consecutive assistant-side items (text, reasoning, calls) become one assistant message;
    consecutive tool outputs become one user message of observations. ``react`` labels the
    assistant's text ``Thought:`` / ``Final Answer:`` as the protocol does.
    """
    calls: dict[str, FunctionCall] = {}
    out: list[Item] = []
    i, n = 0, len(items)
    while i < n:
        item = items[i]
        if _is_assistant_side(item):
            j = i
            while j < n and _is_assistant_side(items[j]):
                candidate = items[j]
                if isinstance(candidate, FunctionCall):
                    calls[candidate.call_id] = candidate
                j += 1
            message = _render_assistant(items[i:j], react)
            if message is not None:
                out.append(message)
            i = j
        elif isinstance(item, FunctionCallOutput):
            j = i
            group: list[FunctionCallOutput] = []
            while j < n and isinstance(items[j], FunctionCallOutput):
                output = items[j]
                assert isinstance(output, FunctionCallOutput)
                group.append(output)
                j += 1
            out.append(_render_outputs(group, calls, tools))
            i = j
        else:
            out.append(item)
            i += 1
    return out
