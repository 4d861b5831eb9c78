"""Tool schemas and output schemas as both OpenAI APIs want them, strict where asked.

A tool is sent strict when its :class:`~agentloop.models.base.ToolSchema` says so (then a schema
that cannot be strict is a :class:`~agentloop.models.strict_schema.StrictSchemaError`) or when
the model was built with ``strict_tools=True`` (then such a tool quietly goes non-strict).
:class:`StrictTools` remembers the original schemas so that the nulls strict mode adds for
left-out optional arguments can be removed from the calls that come back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from agentloop.items import FunctionCall
from agentloop.models.base import ToolSchema
from agentloop.models.strict_schema import StrictSchemaError, drop_added_nulls, strict_schema

__all__ = ["PreparedTool", "StrictTools", "output_format", "prepare_tools"]

_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@dataclass(frozen=True, kw_only=True, slots=True)
class PreparedTool:
    """A tool's wire-ready pieces: parameters (strict-rewritten if strict) and the flag."""

    name: str
    description: str
    parameters: dict[str, Any]
    strict: bool


@dataclass(kw_only=True, slots=True)
class StrictTools:
    """Original schemas of the tools sent strict, by name; fixes up their calls."""

    originals: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    output: Mapping[str, Any] | None = None
    """The original output schema, when it was sent strict."""

    def fix(self, call: FunctionCall) -> FunctionCall:
        """``call`` without the nulls strict mode added for optional arguments left out."""
        schema = self.originals.get(call.name)
        if schema is None:
            return call
        try:
            value = json.loads(call.arguments)
        except ValueError:
            return call
        cleaned = drop_added_nulls(schema, value)
        if cleaned is value:
            return call
        return replace(call, arguments=json.dumps(cleaned, ensure_ascii=False))

    def fix_output(self, text: str) -> str:
        """The final JSON text without the nulls a strict output schema added."""
        if self.output is None:
            return text
        try:
            value = json.loads(text)
        except ValueError:
            return text
        cleaned = drop_added_nulls(self.output, value)
        return text if cleaned is value else json.dumps(cleaned, ensure_ascii=False)


def prepare_tools(
    tools: Sequence[ToolSchema], *, strict_tools: bool
) -> tuple[list[PreparedTool], StrictTools]:
    """Each tool's parameters and strict flag, plus the bookkeeping to undo strict nulls."""
    prepared: list[PreparedTool] = []
    strict = StrictTools()
    for tool in tools:
        parameters = dict(tool.parameters)
        is_strict = False
        if tool.strict or strict_tools:
            try:
                parameters = strict_schema(tool.parameters)
                is_strict = True
            except StrictSchemaError as exc:
                if tool.strict:
                    raise StrictSchemaError(f"tool {tool.name!r}: {exc}") from None
        if is_strict:
            strict.originals[tool.name] = tool.parameters
        prepared.append(
            PreparedTool(
                name=tool.name,
                description=tool.description,
                parameters=parameters,
                strict=is_strict,
            )
        )
    return prepared, strict


def output_format(schema: Mapping[str, Any], strict: StrictTools) -> dict[str, Any]:
    """The ``json_schema`` format object (``name``, ``schema``, ``strict``) for an output
    schema: strict when the schema allows it (then ``strict`` remembers the original)."""
    title = schema.get("title")
    name = title if isinstance(title, str) and _NAME.match(title) else "output"
    try:
        rewritten = strict_schema(schema)
    except StrictSchemaError:
        return {"name": name, "schema": dict(schema), "strict": False}
    strict.output = schema
    return {"name": name, "schema": rewritten, "strict": True}
