"""Structured output: the output tool, its schema, and validation of what the model submits.

With ``Agent(output_type=...)`` the model ends a run by calling an output tool (``final_output``)
whose arguments are the typed result. Validation has two stages: the schema (pydantic for Python
types, ``jsonschema`` for a JSON Schema dict), then the caller's validators in order, any of which
may raise :class:`~agentloop.errors.OutputRejected`. The messages name field paths so the model
can fix exactly what was wrong.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pydantic

from agentloop.errors import ConfigError, OutputRejected
from agentloop.models.base import ToolSchema
from agentloop.models.strict_schema import StrictSchemaError, drop_added_nulls, strict_schema
from agentloop.parsing import ArgumentsParseError, parse_arguments
from agentloop.tools.schema import format_validation_error

OUTPUT_TOOL_NAME = "final_output"
SUBMIT_TOOL_NAME = "submit"
WRAP_KEY = "result"

Validator = Callable[[Any], Any]
Reflector = Callable[[Any], Any]


class OutputInvalid(Exception):
    """The submitted output failed validation; ``errors`` are messages for the model."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors


def _lift_defs(schema: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    defs = schema.pop("$defs", None) or {}
    return schema, defs


@dataclass(frozen=True, kw_only=True)
class OutputSpec:
    """Everything the loop needs to know about the required output."""

    tool: ToolSchema
    submit: ToolSchema | None
    schema: dict[str, Any]
    """The original (non-strict) schema of the output tool's arguments."""
    adapter: pydantic.TypeAdapter[Any] | None
    wrapped: bool
    validators: tuple[Validator, ...]
    reflect: Reflector | None

    @property
    def name(self) -> str:
        return self.tool.name

    def parse(self, raw_arguments: str) -> Any:
        """Arguments text → validated value (typed for Python types, a dict for JSON Schema)."""
        try:
            args = parse_arguments(raw_arguments)
        except ArgumentsParseError as exc:
            raise OutputInvalid([f"- (root): {exc}"]) from None
        args = drop_added_nulls(self.schema, args)
        if self.adapter is None:
            import jsonschema  # only JSON Schema outputs pay for it

            validator = jsonschema.Draft202012Validator(self.schema)
            problems = sorted(validator.iter_errors(args), key=lambda e: list(e.absolute_path))
            if problems:
                raise OutputInvalid(
                    [f"- {_path(e.absolute_path)}: {e.message}" for e in problems[:20]]
                )
            return args
        payload = args.get(WRAP_KEY) if self.wrapped else args
        try:
            return self.adapter.validate_python(payload)
        except pydantic.ValidationError as exc:
            text = format_validation_error(exc, subject="output")
            raise OutputInvalid(text.splitlines()[1:]) from None

    async def check(self, value: Any) -> Any:
        """Run the validators in order; each may return a replacement value."""
        for validator in self.validators:
            try:
                result = validator(value)
                if inspect.isawaitable(result):
                    result = await result
            except OutputRejected as exc:
                raise OutputInvalid([f"- rejected: {exc}"]) from None
            if result is not None:
                value = result
        return value

    async def reflection(self, value: Any) -> str:
        assert self.reflect is not None
        text = self.reflect(value)
        if inspect.isawaitable(text):
            text = await text
        return str(text)


def _path(parts: Sequence[Any]) -> str:
    return ".".join(str(p) for p in parts) or "(root)"


def _schema_for(output_type: Any) -> tuple[dict[str, Any], pydantic.TypeAdapter[Any] | None]:
    if isinstance(output_type, Mapping):
        import jsonschema

        schema = json.loads(json.dumps(output_type))  # a private, JSON-clean copy
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise ConfigError(f"output_type is not a valid JSON Schema: {exc.message}") from None
        return schema, None
    try:
        adapter: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(output_type)
        schema = adapter.json_schema()
    except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError) as exc:
        raise ConfigError(f"output_type {output_type!r} has no JSON Schema: {exc}") from None
    return schema, adapter


def _strip_titles(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            k: _strip_titles(v)
            for k, v in node.items()
            if not (k == "title" and isinstance(v, str))
        }
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
    return node


def build_output_spec(
    output_type: Any,
    *,
    validators: Sequence[Validator] = (),
    reflect: Reflector | None = None,
    tool_name: str = OUTPUT_TOOL_NAME,
    description: str | None = None,
) -> OutputSpec:
    """The output tool (and ``submit`` tool with reflection) for ``output_type``."""
    raw, adapter = _schema_for(output_type)
    raw = _strip_titles(raw) if adapter is not None else raw
    wrapped = raw.get("type") != "object" or "properties" not in raw
    if wrapped and adapter is None and raw.get("type") == "object":
        wrapped = False  # a free-form object schema: keep as is (non-strict)
    if wrapped:
        inner, defs = _lift_defs(dict(raw))
        raw = {"type": "object", "properties": {WRAP_KEY: inner}, "required": [WRAP_KEY]}
        if defs:
            raw["$defs"] = defs
        if adapter is None:
            raise ConfigError("a JSON Schema output_type must describe an object")
    try:
        params, strict = strict_schema(raw), True
    except StrictSchemaError:
        params, strict = raw, False
    text = description or (
        "Give your final answer by calling this tool with the result. "
        + ("Each call returns feedback; call 'submit' when the result is final."
           if reflect else "The run ends when the result is valid.")
    )  # fmt: skip
    submit = None
    if reflect is not None:
        submit = ToolSchema(
            name=SUBMIT_TOOL_NAME,
            description=f"Submit the last result given to '{tool_name}' as final.",
            parameters={"type": "object", "properties": {}, "required": [],
                        "additionalProperties": False},
            strict=True,
        )  # fmt: skip
    return OutputSpec(
        tool=ToolSchema(name=tool_name, description=text, parameters=params, strict=strict),
        submit=submit,
        schema=raw,
        adapter=adapter,
        wrapped=wrapped,
        validators=tuple(validators),
        reflect=reflect,
    )
