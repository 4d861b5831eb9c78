"""The request side of the wire: ``POST /v1/responses`` bodies and the error object.

Pydantic models mirror the spec's ``CreateResponseBody`` (strict types, unknown fields refused)
plus one extension: a tool of type ``agentloop:toolset`` enables a server-side toolset. Errors
are :class:`ApiError`, rendered as ``{"error": {type, code, message, param}}`` (the spec's
``ErrorPayload``).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal
from urllib.parse import parse_qsl

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    field_validator,
)

TOOLSET_TYPE = "agentloop:toolset"

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    409: "conflict_error",
    413: "invalid_request_error",
    415: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
    500: "server_error",
    503: "server_error",
}


class ApiError(Exception):
    """An error answered with the spec's error object and an HTTP status."""

    def __init__(
        self, status: int, message: str, *, code: str | None = None, param: str | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.param = param

    def body(self) -> dict[str, Any]:
        return error_body(self.status, self.message, code=self.code, param=self.param)


def error_body(
    status: int, message: str, *, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    return {
        "error": {
            "type": _ERROR_TYPES.get(status, "invalid_request_error"),
            "code": code,
            "message": message,
            "param": param,
        }
    }


def not_found(kind: str, ident: str) -> ApiError:
    return ApiError(404, f"No {kind} found with id '{ident}'.", code="not_found")


# --- request models ------------------------------------------------------------------------

_STRICT = ConfigDict(extra="forbid", strict=True)


class FunctionToolParam(BaseModel):
    model_config = _STRICT
    type: Literal["function"]
    name: str = Field(min_length=1, max_length=64, pattern=r"^[a-zA-Z0-9_-]+$")
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class ToolsetParam(BaseModel):
    """Extension: enable the server-side toolset ``name`` from the config's ``[toolsets]``."""

    model_config = _STRICT
    type: Literal["agentloop:toolset"]
    name: str = Field(min_length=1, max_length=200)


ToolParam = Annotated[FunctionToolParam | ToolsetParam, Field(discriminator="type")]


class SpecificFunctionParam(BaseModel):
    model_config = _STRICT
    type: Literal["function"]
    name: str = Field(min_length=1)


class AllowedToolsParam(BaseModel):
    model_config = _STRICT
    type: Literal["allowed_tools"]
    tools: list[SpecificFunctionParam] = Field(min_length=1, max_length=128)
    mode: Literal["none", "auto", "required"] = "auto"


def _tool_choice_tag(value: Any) -> str | None:
    if isinstance(value, str):
        return "mode"
    if isinstance(value, dict):
        kind = value.get("type")
        return kind if kind in ("function", "allowed_tools") else None
    return getattr(value, "type", None)


ToolChoiceParam = Annotated[
    Annotated[Literal["none", "auto", "required"], Tag("mode")]
    | Annotated[SpecificFunctionParam, Tag("function")]
    | Annotated[AllowedToolsParam, Tag("allowed_tools")],
    Discriminator(
        _tool_choice_tag,
        custom_error_type="invalid_tool_choice",
        custom_error_message="expected 'none', 'auto', 'required', a function or allowed_tools",
    ),
]


class TextFormatText(BaseModel):
    model_config = _STRICT
    type: Literal["text"]


class TextFormatJsonSchema(BaseModel):
    model_config = _STRICT
    type: Literal["json_schema"]
    name: str = Field(default="output", pattern=r"^[a-zA-Z0-9_-]{1,64}$")
    description: str | None = None
    schema_: dict[str, Any] = Field(alias="schema")
    strict: bool | None = None


class TextParam(BaseModel):
    model_config = _STRICT
    format: Annotated[TextFormatText | TextFormatJsonSchema, Field(discriminator="type")] | None = (
        None
    )
    verbosity: Literal["low", "medium", "high"] | None = None


class ReasoningParam(BaseModel):
    model_config = _STRICT
    effort: Literal["none", "low", "medium", "high", "xhigh"] | None = None
    summary: Literal["concise", "detailed", "auto"] | None = None


class StreamOptionsParam(BaseModel):
    model_config = _STRICT
    include_obfuscation: bool | None = None


class CreateResponseBody(BaseModel):
    """``POST /v1/responses``. Unknown fields and wrong types are refused (400)."""

    model_config = _STRICT

    model: str | None = None
    input: str | list[dict[str, Any]] | None = None
    previous_response_id: str | None = None
    include: list[Literal["reasoning.encrypted_content", "message.output_text.logprobs"]] = []
    tools: list[ToolParam] | None = None
    tool_choice: ToolChoiceParam | None = None
    metadata: dict[str, str] | None = None
    text: TextParam | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    presence_penalty: float | None = Field(default=None, ge=-2, le=2)
    frequency_penalty: float | None = Field(default=None, ge=-2, le=2)
    parallel_tool_calls: bool | None = None
    stream: bool = False
    stream_options: StreamOptionsParam | None = None
    background: bool = False
    max_output_tokens: int | None = Field(default=None, ge=16)
    max_tool_calls: int | None = Field(default=None, ge=1)
    reasoning: ReasoningParam | None = None
    safety_identifier: str | None = Field(default=None, max_length=64)
    prompt_cache_key: str | None = Field(default=None, max_length=64)
    truncation: Literal["auto", "disabled"] = "disabled"
    instructions: str | None = None
    store: bool = True
    service_tier: Literal["auto", "default", "flex", "priority"] | None = None
    top_logprobs: int | None = Field(default=None, ge=0, le=20)

    @field_validator("metadata")
    @classmethod
    def _metadata(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        if value is None:
            return value
        if len(value) > 16:
            raise ValueError("at most 16 metadata pairs are allowed")
        for key, val in value.items():
            if len(key) > 64:
                raise ValueError(f"metadata key {key[:70]!r} is longer than 64 characters")
            if len(val) > 512:
                raise ValueError(f"metadata value for {key!r} is longer than 512 characters")
        return value

    @field_validator("input")
    @classmethod
    def _input(cls, value: str | list[dict[str, Any]] | None) -> Any:
        if isinstance(value, str) and len(value) > 10_485_760:
            raise ValueError("input text is longer than 10485760 characters")
        return value


def _field_names() -> frozenset[str]:
    names: set[str] = set()
    for model in (
        CreateResponseBody,
        FunctionToolParam,
        ToolsetParam,
        SpecificFunctionParam,
        AllowedToolsParam,
        TextParam,
        TextFormatJsonSchema,
        ReasoningParam,
        StreamOptionsParam,
    ):
        for name, info in model.model_fields.items():
            names.add(info.alias or name)
    return frozenset(names)


_FIELDS = _field_names()


def param_path(loc: tuple[int | str, ...]) -> str | None:
    """``("tools", 0, "function", "name")`` -> ``"tools[0].name"`` (union tags dropped)."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in _FIELDS and part not in ("function", "mode", "allowed_tools"):
            out += f".{part}" if out else part
    return out or None


def validation_error(exc: ValidationError) -> ApiError:
    """The first problem of a pydantic error as a 400 naming the parameter."""
    errors = exc.errors(include_url=False)
    err = max(errors, key=lambda e: len(e["loc"]))  # the deepest is the most specific
    loc = tuple(err["loc"])
    param = param_path(loc)
    if err["type"] == "extra_forbidden":
        parent = param_path(loc[:-1])
        param = f"{parent}.{loc[-1]}" if parent else str(loc[-1])
        return ApiError(
            400, f"Unknown parameter: '{param}'.", code="unknown_parameter", param=param
        )
    message = err["msg"]
    if err["type"] in ("union_tag_invalid", "union_tag_not_found"):
        message = "Invalid 'type': " + message
    return ApiError(
        400, f"Invalid value for '{param}': {message}.", code="invalid_value", param=param
    )


def parse_json_body(raw: bytes) -> dict[str, Any]:
    """Decode a request body: strict UTF-8 JSON object, else a 400."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ApiError(
            400, f"The request body is not valid UTF-8 (byte {exc.start}).", code="invalid_body"
        ) from None
    if not text.strip():
        raise ApiError(
            400, "The request body is empty; expected a JSON object.", code="invalid_body"
        )
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ApiError(
            400, f"The request body is not valid JSON: {exc}.", code="invalid_json"
        ) from None
    if not isinstance(data, dict):
        raise ApiError(400, "The request body must be a JSON object.", code="invalid_body")
    return data


def parse_form_body(raw: bytes) -> dict[str, Any]:
    """An ``application/x-www-form-urlencoded`` body (the spec allows it): a JSON object sent
    with that header, or ``key=value`` pairs whose values are decoded as JSON when they are."""
    if raw.lstrip()[:1] == b"{":
        return parse_json_body(raw)
    try:
        pairs = parse_qsl(raw.decode("utf-8"), keep_blank_values=True, strict_parsing=True)
    except (UnicodeDecodeError, ValueError):
        raise ApiError(
            400, "The request body is not a valid form or JSON object.", code="invalid_body"
        ) from None
    data: dict[str, Any] = {}
    for key, value in pairs:
        try:
            decoded: Any = json.loads(value)
        except ValueError:
            decoded = value
        data[key] = value if key in _STRING_FIELDS else decoded
    return data


_STRING_FIELDS = frozenset(
    {"model", "instructions", "previous_response_id", "safety_identifier", "prompt_cache_key"}
)


def parse_create(raw: bytes, *, form: bool = False) -> CreateResponseBody:
    data = parse_form_body(raw) if form else parse_json_body(raw)
    try:
        return CreateResponseBody.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc) from None
