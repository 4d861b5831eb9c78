"""The item model's JSON form round-trips and rejects malformed input clearly."""

from __future__ import annotations

import os
import re
import warnings
from concurrent.futures import ThreadPoolExecutor

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
    new_id,
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


def test_new_ids_are_prefixed_random_hex_and_unique_across_draws() -> None:
    ids = [new_id("fc") for _ in range(2000)]  # several draws of the token pool
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"fc_[0-9a-f]{24}", i) for i in ids)


def test_new_ids_are_unique_across_threads() -> None:
    def make() -> list[str]:
        return [new_id("x") for _ in range(3000)]

    with ThreadPoolExecutor(max_workers=4) as pool:
        batches = list(pool.map(lambda _: make(), range(4)))
    ids = [i for batch in batches for i in batch]
    assert len(set(ids)) == len(ids)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_does_not_repeat_the_parents_ids() -> None:
    new_id("warm")  # the parent holds a partly used pool of tokens
    read, write = os.pipe()
    with warnings.catch_warnings():  # 3.12+ warns about forking with threads; the child only
        warnings.simplefilter("ignore", DeprecationWarning)  # writes to a pipe and exits
        pid = os.fork()
    if pid == 0:  # the child: report its next ids and leave at once
        os.close(read)
        os.write(write, " ".join(new_id("c") for _ in range(50)).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child = {i.split("_")[1] for i in pipe.read().split()}
    os.waitpid(pid, 0)
    parent = {new_id("p").split("_")[1] for _ in range(50)}
    assert len(child) == 50 and not child & parent
