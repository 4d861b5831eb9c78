"""JSON Schema -> Gemini schema: refs inlined, unsupported keywords rewritten or dropped."""

from __future__ import annotations

import copy
from typing import Any, Literal

from google.genai import types as gt
from pydantic import BaseModel, Field

from agentloop.models.gemini_schema import to_gemini_schema


def test_basic_types_are_upper_case_and_unsupported_keys_dropped() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Args",
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Name", "minLength": 1, "examples": ["x"]},
            "count": {"type": "integer", "minimum": 0, "exclusiveMaximum": 10},
            "ratio": {"type": "number", "format": "double"},
            "flag": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
        },
        "required": ["name", "missing"],
        "additionalProperties": False,
    }
    assert to_gemini_schema(schema) == {
        "type": "OBJECT",
        "properties": {
            "name": {"type": "STRING", "minLength": 1},
            "count": {"type": "INTEGER", "minimum": 0},
            "ratio": {"type": "NUMBER", "format": "double"},
            "flag": {"type": "BOOLEAN"},
            "tags": {"type": "ARRAY", "items": {"type": "STRING"}, "maxItems": 3},
        },
        "required": ["name"],
    }


def test_refs_to_defs_are_inlined_with_sibling_keywords_kept() -> None:
    schema = {
        "type": "object",
        "properties": {
            "home": {"$ref": "#/$defs/Address", "description": "Where they live"},
            "work": {"$ref": "#/definitions/Address"},
        },
        "$defs": {"Address": {"type": "object", "properties": {"city": {"type": "string"}},
                              "required": ["city"]}},
        "definitions": {"Address": {"type": "object", "properties": {"zip": {"type": "string"}}}},
    }  # fmt: skip
    out = to_gemini_schema(schema)
    assert out["properties"]["home"] == {
        "type": "OBJECT",
        "properties": {"city": {"type": "STRING"}},
        "required": ["city"],
        "description": "Where they live",
    }
    assert out["properties"]["work"] == {
        "type": "OBJECT",
        "properties": {"zip": {"type": "STRING"}},
    }
    assert "$defs" not in out and "definitions" not in out


def test_recursive_refs_stop_at_the_recursion() -> None:
    schema = {
        "$ref": "#/$defs/Node",
        "$defs": {"Node": {"type": "object", "properties": {
            "name": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
        }}},
    }  # fmt: skip
    out = to_gemini_schema(schema)
    children = out["properties"]["children"]
    assert children["type"] == "ARRAY"
    assert children["items"]["type"] == "OBJECT"
    assert "properties" not in children["items"]


def test_nullable_forms_become_nullable() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"anyOf": [{"type": "integer"}, {"type": "null"}], "description": "A"},
            "b": {"type": ["string", "null"]},
            "c": {"oneOf": [{"$ref": "#/$defs/X"}, {"type": "null"}]},
            "d": {"enum": ["x", "y", None]},
        },
        "$defs": {"X": {"type": "object", "properties": {"v": {"type": "number"}}}},
    }
    props = to_gemini_schema(schema)["properties"]
    assert props["a"] == {"type": "INTEGER", "nullable": True, "description": "A"}
    assert props["b"] == {"type": "STRING", "nullable": True}
    assert props["c"] == {
        "type": "OBJECT",
        "properties": {"v": {"type": "NUMBER"}},
        "nullable": True,
    }
    assert props["d"] == {"type": "STRING", "enum": ["x", "y"], "nullable": True}


def test_unions_become_any_of() -> None:
    schema = {
        "type": "object",
        "properties": {
            "u": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "t": {"type": ["string", "integer"]},
        },
    }
    props = to_gemini_schema(schema)["properties"]
    assert props["u"] == {"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}]}
    assert props["t"] == {"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}]}


def test_all_of_is_merged() -> None:
    schema = {
        "allOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"properties": {"b": {"type": "integer"}}, "required": ["b"]},
        ]
    }
    assert to_gemini_schema(schema) == {
        "type": "OBJECT",
        "properties": {"a": {"type": "STRING"}, "b": {"type": "INTEGER"}},
        "required": ["a", "b"],
    }


def test_const_enums_formats_and_defaults_become_enum_or_hints() -> None:
    schema = {
        "type": "object",
        "properties": {
            "mode": {"const": "fast"},
            "level": {"type": "integer", "enum": [1, 2, 3], "description": "Level"},
            "url": {"type": "string", "format": "uri"},
            "when": {"type": "string", "format": "date-time"},
            "size": {"type": "integer", "default": 10},
            "on": {"const": True},
        },
    }
    props = to_gemini_schema(schema)["properties"]
    assert props["mode"] == {"type": "STRING", "enum": ["fast"]}
    assert props["level"] == {"type": "INTEGER", "description": "Level (one of: 1, 2, 3)"}
    assert props["url"] == {"type": "STRING", "description": "Format: uri"}
    assert props["when"] == {"type": "STRING", "format": "date-time"}
    assert props["size"] == {"type": "INTEGER", "description": "Default: 10"}
    assert props["on"] == {"type": "BOOLEAN", "description": "One of: true"}


def test_free_form_objects_lose_additional_properties() -> None:
    schema = {"type": "object", "properties": {"meta": {"type": "object",
              "additionalProperties": {"type": "string"}}}}  # fmt: skip
    assert to_gemini_schema(schema)["properties"]["meta"] == {"type": "OBJECT"}


def test_input_is_not_modified() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"x": {"$ref": "#/$defs/X"}},
        "$defs": {"X": {"type": "string"}},
    }
    before = copy.deepcopy(schema)
    to_gemini_schema(schema)
    assert schema == before


class Address(BaseModel):
    street: str
    zip: int | None = None


class Order(BaseModel):
    """An order."""

    ship_to: Address = Field(description="Delivery address")
    bill_to: Address | None = None
    lines: list[dict[str, float]]
    priority: Literal["low", "high"] = "low"


def test_pydantic_schemas_convert_into_valid_sdk_schemas() -> None:
    out = to_gemini_schema(Order.model_json_schema())
    gt.Schema.model_validate(out)  # the SDK accepts every keyword we produce
    assert out["properties"]["ship_to"]["description"] == "Delivery address"
    assert out["properties"]["bill_to"]["nullable"] is True
    assert out["properties"]["lines"] == {"type": "ARRAY", "items": {"type": "OBJECT"}}
    assert out["properties"]["priority"] == {
        "type": "STRING",
        "enum": ["low", "high"],
        "description": 'Default: "low"',
    }
    assert out["required"] == ["ship_to", "lines"]
