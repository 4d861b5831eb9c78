"""JSON Schema and argument validation for tools, derived from a function's signature.

Type hints become a pydantic model (so validation and schema always agree); the docstring
(Google, NumPy, reST or Epydoc style) gives the tool description and per-parameter descriptions.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, get_type_hints

import docstring_parser
import pydantic
from pydantic import BaseModel, ConfigDict, Field
from pydantic_core import SchemaValidator

from agentloop.errors import ConfigError


@dataclass(frozen=True, kw_only=True, slots=True)
class Signature:
    """What a tool function looks like to the model."""

    description: str
    parameters: dict[str, Any]
    args_model: type[BaseModel]
    context_param: str | None


def _strip_titles(schema: Any) -> Any:
    """Drop pydantic's auto-generated ``title`` keys: noise for the model, tokens for us."""
    if isinstance(schema, dict):
        out = {}
        for key, value in schema.items():
            if key == "title" and isinstance(value, str):
                continue
            if key == "properties" and isinstance(value, dict):
                out[key] = {name: _strip_titles(sub) for name, sub in value.items()}
            else:
                out[key] = _strip_titles(value)
        return out
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


def _is_context(annotation: Any) -> bool:
    from agentloop.tools.context import ToolContext

    return annotation is ToolContext or getattr(annotation, "__origin__", None) is ToolContext


def describe_function(
    fn: Callable[..., Any],
    *,
    name: str,
    description: str | None,
    localns: Mapping[str, Any] | None = None,
) -> Signature:
    """Build the schema, validator and description of ``fn``; a bad signature is a ConfigError.

    ``localns`` resolves string annotations naming classes local to the defining function."""
    try:
        hints = get_type_hints(fn, localns=dict(localns or {}), include_extras=True)
    except Exception as exc:  # unresolvable forward references and the like
        raise ConfigError(f"tool {name!r}: cannot resolve type hints ({exc})") from None
    doc = docstring_parser.parse(inspect.getdoc(fn) or "")
    param_docs = {p.arg_name: p.description for p in doc.params if p.description}
    fields: dict[str, Any] = {}
    context_param: str | None = None
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ConfigError(f"tool {name!r}: *args and **kwargs cannot be described to a model")
        annotation = hints.get(param.name, Any)
        if _is_context(annotation):
            context_param = param.name
            continue
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (annotation, Field(default, description=param_docs.get(param.name)))
    try:
        model = pydantic.create_model(
            f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields
        )
        schema = _strip_titles(model.model_json_schema())
    except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError, TypeError) as exc:
        raise ConfigError(f"tool {name!r}: cannot build a JSON Schema ({exc})") from None
    schema.setdefault("properties", {})
    text = description
    if text is None:
        text = "\n\n".join(p for p in (doc.short_description, doc.long_description) if p)
    return Signature(
        description=text or "",
        parameters=schema,
        args_model=model,
        context_param=context_param,
    )


def format_validation_error(exc: pydantic.ValidationError, *, subject: str) -> str:
    """One readable line per problem, each naming the field path."""
    lines = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"]) or "(root)"
        lines.append(f"- {loc}: {err['msg']}")
    return f"Invalid {subject}:\n" + "\n".join(lines)


def fields_validator(model: type[BaseModel]) -> SchemaValidator | None:
    """A validator of ``model``'s fields alone, whose output is the dict of field values: what
    validating the model and reading the instance's fields gives, without building the instance.
    None when the model's core schema is not a plain model (model-level validators, recursive
    definitions): validate with the model then."""
    schema = model.__pydantic_core_schema__
    if schema["type"] != "model" or schema["schema"]["type"] != "model-fields":
        return None
    return SchemaValidator(schema["schema"], schema.get("config"))
