"""strict_schema(): ordinary JSON Schemas rewritten for OpenAI strict mode, and back."""

from __future__ import annotations

from typing import Any, Literal

import pydantic
import pytest

from agentloop.models.strict_schema import (
    StrictSchemaError,
    drop_added_nulls,
    is_strict_compatible,
    strict_schema,
)


class Address(pydantic.BaseModel):
    street: str
    zip: str | None = None


class Order(pydantic.BaseModel):
    item: str
    quantity: int = 1
    note: str | None = None
    ship_to: Address
    bill_to: Address | None = None
    mode: Literal["fast", "slow"] = "slow"


def test_optional_properties_become_required_and_nullable() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "integer", "default": 3}},
        "required": ["a"],
    }
    assert strict_schema(schema) == {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": ["integer", "null"]}},
        "required": ["a", "b"],
        "additionalProperties": False,
    }


def test_the_input_schema_is_not_modified() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"a": {"type": "string"}}}
    strict_schema(schema)
    assert schema == {"type": "object", "properties": {"a": {"type": "string"}}}


def test_a_pydantic_schema_with_refs_and_unions() -> None:
    result = strict_schema(Order.model_json_schema())
    assert result["required"] == ["item", "quantity", "note", "ship_to", "bill_to", "mode"]
    assert result["additionalProperties"] is False
    props = result["properties"]
    assert props["quantity"] == {"title": "Quantity", "type": ["integer", "null"]}
    # already nullable: left as it is, minus the default
    assert props["note"] == {"anyOf": [{"type": "string"}, {"type": "null"}], "title": "Note"}
    assert props["ship_to"] == {"$ref": "#/$defs/Address"}
    assert props["mode"] == {
        "anyOf": [{"enum": ["fast", "slow"], "title": "Mode", "type": "string"}, {"type": "null"}]
    }
    address = result["$defs"]["Address"]
    assert address["required"] == ["street", "zip"]
    assert address["additionalProperties"] is False


def test_a_ref_with_siblings_is_inlined() -> None:
    schema = {
        "type": "object",
        "properties": {"to": {"$ref": "#/$defs/P", "description": "Recipient"}},
        "required": ["to"],
        "$defs": {
            "P": {
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
            }
        },
    }
    to = strict_schema(schema)["properties"]["to"]
    assert to == {
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "required": ["name"],
        "additionalProperties": False,
        "description": "Recipient",
    }


def test_one_of_becomes_any_of() -> None:
    schema = {
        "type": "object",
        "properties": {"v": {"oneOf": [{"type": "string"}, {"type": "integer"}]}},
        "required": ["v"],
    }
    assert strict_schema(schema)["properties"]["v"] == {
        "anyOf": [{"type": "string"}, {"type": "integer"}]
    }


def test_a_tool_without_parameters() -> None:
    assert strict_schema({"type": "object"}) == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }


def test_strict_schema_is_idempotent() -> None:
    once = strict_schema(Order.model_json_schema())
    assert strict_schema(once) == once


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"m": {"type": "object", "additionalProperties": True}}},
        {"type": "object", "properties": {"m": {"type": "object"}}},
        {"type": "object", "additionalProperties": {"type": "integer"}},
        {"type": "object", "properties": {"x": {"$ref": "https://example.com/s.json"}}},
    ],
)
def test_free_form_objects_cannot_be_strict(schema: dict[str, Any]) -> None:
    with pytest.raises(StrictSchemaError):
        strict_schema(schema)
    assert not is_strict_compatible(schema)


def test_added_nulls_are_dropped_but_allowed_nulls_kept() -> None:
    schema = Order.model_json_schema()
    value = {
        "item": "pen",
        "quantity": None,
        "note": None,
        "ship_to": {"street": "Main St", "zip": None},
        "bill_to": None,
        "mode": None,
    }
    assert drop_added_nulls(schema, value) == {
        "item": "pen",
        "note": None,
        "ship_to": {"street": "Main St", "zip": None},
        "bill_to": None,
    }
    # and the result validates against the original model, defaults filled in
    order = Order.model_validate(drop_added_nulls(schema, value))
    assert order.quantity == 1 and order.mode == "slow"


def test_nothing_to_drop_returns_the_same_object() -> None:
    value = {"item": "pen", "ship_to": {"street": "x"}}
    assert drop_added_nulls(Order.model_json_schema(), value) is value


def test_nulls_inside_arrays_of_objects_are_dropped() -> None:
    schema = {
        "type": "object",
        "properties": {
            "rows": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"k": {"type": "string"}, "n": {"type": "integer"}},
                    "required": ["k"],
                },
            }
        },
        "required": ["rows"],
    }
    value = {"rows": [{"k": "a", "n": None}, {"k": "b", "n": 2}]}
    assert drop_added_nulls(schema, value) == {"rows": [{"k": "a"}, {"k": "b", "n": 2}]}
