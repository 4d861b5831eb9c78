"""The response object (``ResponseResource``): every field the spec requires, always.

The static part (what the request asked for) is computed once per request as
:class:`ResponseMeta`; :func:`snapshot` adds the dynamic part (status, output, usage, error).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentloop.gateway.wire import AllowedToolsParam, CreateResponseBody, SpecificFunctionParam
from agentloop.items import Item, Usage, item_to_dict
from agentloop.models.base import ToolSchema

# How a run's status maps to the response status and terminal streaming event.
TERMINAL_EVENT = {
    "completed": "response.completed",
    "requires_action": "response.completed",
    "incomplete": "response.incomplete",
    "cancelled": "response.incomplete",
    "failed": "response.failed",
}


def tool_choice_wire(body: CreateResponseBody) -> Any:
    choice = body.tool_choice
    if choice is None:
        return "auto"
    if isinstance(choice, str):
        return choice
    if isinstance(choice, SpecificFunctionParam):
        return {"type": "function", "name": choice.name}
    assert isinstance(choice, AllowedToolsParam)
    return {
        "type": "allowed_tools",
        "tools": [{"type": "function", "name": t.name} for t in choice.tools],
        "mode": choice.mode,
    }


def text_wire(body: CreateResponseBody) -> dict[str, Any]:
    fmt: dict[str, Any] = {"type": "text"}
    verbosity = None
    if body.text is not None:
        verbosity = body.text.verbosity
        f = body.text.format
        if f is not None and f.type == "json_schema":
            # The spec's JsonSchemaResponseFormat carries ``schema: null`` in responses.
            fmt = {
                "type": "json_schema",
                "name": f.name,
                "description": f.description,
                "schema": None,
                "strict": bool(f.strict),
            }
    out: dict[str, Any] = {"format": fmt}
    if verbosity is not None:
        out["verbosity"] = verbosity
    return out


def tool_wire(schema: ToolSchema) -> dict[str, Any]:
    return {
        "type": "function",
        "name": schema.name,
        "description": schema.description,
        "parameters": dict(schema.parameters),
        "strict": schema.strict,
    }


@dataclass(frozen=True, kw_only=True, slots=True)
class ResponseMeta:
    """The request-determined fields of a response object, in the spec's order."""

    id: str
    created_at: int
    base: dict[str, Any]

    @classmethod
    def build(
        cls,
        *,
        response_id: str,
        created_at: int,
        model: str,
        body: CreateResponseBody,
        tools: Sequence[ToolSchema],
    ) -> ResponseMeta:
        reasoning = None
        if body.reasoning is not None:
            reasoning = {"effort": body.reasoning.effort, "summary": body.reasoning.summary}
        base: dict[str, Any] = {
            "id": response_id,
            "object": "response",
            "created_at": created_at,
            "model": model,
            "previous_response_id": body.previous_response_id,
            "instructions": body.instructions,
            "tools": [tool_wire(s) for s in tools],
            "tool_choice": tool_choice_wire(body),
            "truncation": body.truncation,
            "parallel_tool_calls": (
                True if body.parallel_tool_calls is None else body.parallel_tool_calls
            ),
            "text": text_wire(body),
            "top_p": 1.0 if body.top_p is None else body.top_p,
            "presence_penalty": body.presence_penalty or 0.0,
            "frequency_penalty": body.frequency_penalty or 0.0,
            "top_logprobs": body.top_logprobs or 0,
            "temperature": 1.0 if body.temperature is None else body.temperature,
            "reasoning": reasoning,
            "max_output_tokens": body.max_output_tokens,
            "max_tool_calls": body.max_tool_calls,
            "store": body.store,
            "background": body.background,
            "service_tier": body.service_tier or "default",
            "metadata": dict(body.metadata or {}),
            "safety_identifier": body.safety_identifier,
            "prompt_cache_key": body.prompt_cache_key,
        }
        return cls(id=response_id, created_at=created_at, base=base)


ENCRYPTED_REASONING = "reasoning.encrypted_content"


def wire_item(item: Item, *, encrypted: bool = False) -> dict[str, Any]:
    """An item as it goes on the wire. Encrypted reasoning is shown only when the request
    asked for it (``include: ["reasoning.encrypted_content"]``); it is always kept in the store,
    so that continuing the conversation passes it back to the provider."""
    return wire_stored(item_to_dict(item, wire=True), encrypted=encrypted)


def wire_stored(data: dict[str, Any], *, encrypted: bool = False) -> dict[str, Any]:
    """A stored item (lossless form) as it goes on the wire."""
    hide = {"is_error"} if encrypted else {"is_error", "encrypted_content"}
    if hide & data.keys():
        data = {k: v for k, v in data.items() if k not in hide}
    return data


def snapshot(
    meta_base: dict[str, Any],
    *,
    status: str,
    output: list[dict[str, Any]],
    usage: Usage | None = None,
    error: dict[str, str] | None = None,
    incomplete_reason: str | None = None,
    completed_at: int | None = None,
) -> dict[str, Any]:
    """A full response object."""
    return {
        **meta_base,
        "status": status,
        "completed_at": completed_at,
        "incomplete_details": (
            {"reason": incomplete_reason} if incomplete_reason is not None else None
        ),
        "error": error,
        "output": output,
        "usage": usage.to_dict() if usage is not None else None,
    }


def without_output(resource: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in resource.items() if k != "output"}
