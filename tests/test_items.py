"""The item model's JSON form round-trips and rejects malformed input clearly."""

from __future__ import annotations

import pytest

from agentloop.errors import InvalidItem
from agentloop.items import (
    FunctionCall,
    FunctionCallOutput,
    InputImage,
    InputText,
    Message,
    OutputText,
    Reasoning,
    Usage,
    item_from_dict,
    item_to_dict,
    to_items,
)

ITEMS = [
    Message(role="user", content=(InputText(text="hi"), InputImage(image_url="data:x"))),
    Message(role="assistant", content=(OutputText(text="yo"),), id="msg_1"),
    FunctionCall(call_id="c", name="f", arguments='{"a": 1}', id="fc_1"),
    FunctionCallOutput(call_id="c", output="boom", id="fco_1", is_error=True),
    Reasoning(id="rs_1", summary=("think",), encrypted_content="xyz"),
]


@pytest.mark.parametrize("item", ITEMS)
def test_round_trip(item: object) -> None:
    assert item_from_dict(item_to_dict(item)) == item  # type: ignore[arg-type]


def test_wire_form_drops_extensions() -> None:
    wire = item_to_dict(ITEMS[3], wire=True)
    assert "is_error" not in wire and wire["status"] == "completed"


def test_string_content_and_ids() -> None:
    items = to_items([{"role": "assistant", "content": "x"}, {"role": "user", "content": "y"}])
    assert isinstance(items[0], Message) and isinstance(items[0].content[0], OutputText)
    assert all(i.id for i in items)
    assert to_items("hello")[0].text == "hello"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("nope", "must be an object"),
        ({"type": "wat"}, "unsupported item type"),
        ({"type": "message", "role": "robot", "content": "x"}, "role"),
        ({"type": "function_call", "name": "f", "arguments": "{}"}, "call_id"),
        ({"type": "function_call", "call_id": "c", "name": "f", "arguments": {}}, "JSON string"),
        ({"type": "message", "role": "user", "content": [{"type": "input_image"}]}, "image_url"),
        ({"type": "message", "role": "user", "content": "x", "status": "odd"}, "status"),
    ],
)
def test_invalid_items_say_what_is_wrong(data: object, message: str) -> None:
    with pytest.raises(InvalidItem, match=message):
        item_from_dict(data)


def test_usage_adds_up_and_has_the_wire_shape() -> None:
    total = Usage.of(10, 5, cached_input_tokens=2) + Usage.of(1, 1, reasoning_tokens=1)
    assert total.total_tokens == 17
    assert total.to_dict()["input_tokens_details"] == {"cached_tokens": 2}
    assert Usage.from_dict(total.to_dict()) == total
