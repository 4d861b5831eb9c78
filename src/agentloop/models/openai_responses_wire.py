"""Items to Responses API request bodies, and responses back to items.

agentloop's items *are* the Open Responses item model, so the input is mostly
:func:`~agentloop.items.item_to_dict` with ``wire=True``. Item ids are left out: they are ours
(or were stored by the API) and the API rejects ids it does not know when ``store`` is off.
Reasoning items go back only when they carry ``encrypted_content`` (then with their id, which
the API requires); a reasoning item without it could not be resolved by the API. Asking for
``reasoning`` settings also asks for ``reasoning.encrypted_content``, so reasoning survives
across turns without server-side state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from openai.types.responses import Response, ResponseUsage

from agentloop.errors import InvalidItem, ModelError
from agentloop.items import (
    FunctionCall,
    Item,
    Message,
    OutputText,
    Reasoning,
    Usage,
    item_from_dict,
    item_to_dict,
)
from agentloop.models.base import FinishReason, ModelRequest, ModelResponse
from agentloop.models.openai_tools import StrictTools, output_format, prepare_tools

__all__ = ["build_responses_body", "parse_response", "responses_input", "responses_usage"]

_OUTPUT_TYPES = frozenset({"message", "function_call", "reasoning"})
ENCRYPTED_REASONING = "reasoning.encrypted_content"


def build_responses_body(
    model: str, request: ModelRequest, *, strict_tools: bool
) -> tuple[dict[str, Any], StrictTools]:
    """The JSON body of ``POST /responses`` (without ``stream``), and what was strict."""
    body: dict[str, Any] = {"model": model, "input": responses_input(request.items)}
    if request.instructions:
        body["instructions"] = request.instructions
    prepared, strict = prepare_tools(request.tools, strict_tools=strict_tools)
    if prepared:
        # strict must always be explicit: the Responses API defaults it to true
        body["tools"] = [
            {
                "type": "function",
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
                "strict": tool.strict,
            }
            for tool in prepared
        ]
        choice = request.tool_choice
        body["tool_choice"] = (
            choice
            if choice in ("auto", "required", "none")
            else {"type": "function", "name": choice}
        )
        body["parallel_tool_calls"] = request.parallel_tool_calls
    settings = request.settings
    if settings.temperature is not None:
        body["temperature"] = settings.temperature
    if settings.top_p is not None:
        body["top_p"] = settings.top_p
    if settings.max_output_tokens is not None:
        body["max_output_tokens"] = settings.max_output_tokens
    if settings.reasoning is not None:
        body["reasoning"] = dict(settings.reasoning)
        body["include"] = [ENCRYPTED_REASONING]
    if request.output_schema is not None:
        body["text"] = {
            "format": {"type": "json_schema", **output_format(request.output_schema, strict)}
        }
    body.update(settings.extra)
    return body, strict


def responses_input(items: Sequence[Item]) -> list[dict[str, Any]]:
    """The conversation as Responses input items."""
    out: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, Reasoning):
            if item.encrypted_content is None:
                continue
            data = item_to_dict(item, wire=True)
            if data.get("id") is None:
                del data["id"]
            out.append(data)
            continue
        data = item_to_dict(item, wire=True)
        data.pop("id", None)
        data.pop("status", None)
        if isinstance(item, Message):
            data["content"] = [_clean(part) for part in data["content"]]
        out.append(data)
    return out


def _clean(part: Mapping[str, Any]) -> dict[str, Any]:
    """A content part without null fields (an image given by file id has no URL)."""
    return {k: v for k, v in part.items() if v is not None}


def responses_usage(usage: ResponseUsage | None) -> Usage:
    """Usage with cached-input and reasoning tokens."""
    if usage is None:
        return Usage()
    inp = usage.input_tokens_details
    out = usage.output_tokens_details
    return Usage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        total_tokens=usage.total_tokens or usage.input_tokens + usage.output_tokens,
        cached_input_tokens=(getattr(inp, "cached_tokens", 0) or 0) if inp else 0,
        reasoning_tokens=(getattr(out, "reasoning_tokens", 0) or 0) if out else 0,
    )


def _finish(response: Response, items: Sequence[Item]) -> FinishReason:
    if response.status == "incomplete":
        details = response.incomplete_details
        reason = details.reason if details is not None else None
        return "content_filter" if reason == "content_filter" else "length"
    return "tool_calls" if any(isinstance(i, FunctionCall) for i in items) else "stop"


def parse_output(output: Sequence[Any], strict: StrictTools) -> tuple[Item, ...]:
    """Message, function-call and reasoning output items; other kinds (hosted tools) are
    skipped."""
    items: list[Item] = []
    for raw in output:
        if getattr(raw, "type", None) not in _OUTPUT_TYPES:
            continue
        data = raw.model_dump(mode="json", exclude_none=True)
        try:
            item = item_from_dict(data)
        except InvalidItem as exc:
            raise ModelError(
                f"the Responses API returned an unreadable output item: {exc}"
            ) from None
        items.append(item)
    has_calls = any(isinstance(i, FunctionCall) for i in items)
    return tuple(_fix(i, strict, has_calls) for i in items)


def _fix(item: Item, strict: StrictTools, has_calls: bool) -> Item:
    if isinstance(item, FunctionCall):
        return strict.fix(item)
    if isinstance(item, Message) and strict.output is not None and not has_calls:
        parts = tuple(
            replace(p, text=strict.fix_output(p.text)) if isinstance(p, OutputText) else p
            for p in item.content
        )
        return replace(item, content=parts)
    return item


def parse_response(response: Response, strict: StrictTools) -> ModelResponse:
    """A :class:`ModelResponse` from a complete Responses API response object."""
    items = parse_output(response.output, strict)
    return ModelResponse(
        items=items,
        usage=responses_usage(response.usage),
        finish_reason=_finish(response, items),
        model=response.model,
    )
