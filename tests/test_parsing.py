"""The one argument parser: JSON first, then a safe literal parser, then lenient repairs."""

from __future__ import annotations

import json
import time
import warnings
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentloop.parsing import (
    MAX_LITERAL_CHARS,
    ArgumentsParseError,
    parse_arguments,
    split_strings,
    unfence,
)

# --- behaviour -------------------------------------------------------------------------------


def test_json_is_parsed_first() -> None:
    assert parse_arguments('{"path": "a.txt", "n": 2, "ok": true, "x": null}') == {
        "path": "a.txt",
        "n": 2,
        "ok": True,
        "x": None,
    }


def test_empty_text_means_no_arguments() -> None:
    assert parse_arguments(None) == {}
    assert parse_arguments("  \n") == {}


def test_single_quoted_python_dict_is_repaired() -> None:
    assert parse_arguments("{'path': 'a.txt', 'force': True, 'n': None}") == {
        "path": "a.txt",
        "force": True,
        "n": None,
    }


def test_python_dict_with_json_constants_is_repaired() -> None:
    assert parse_arguments("{'force': true, 'n': null, 'off': false}") == {
        "force": True,
        "n": None,
        "off": False,
    }


def test_json_constants_inside_strings_are_left_alone() -> None:
    assert parse_arguments("{'text': 'true or null', 'ok': true}") == {
        "text": "true or null",
        "ok": True,
    }


def test_trailing_commas_are_removed() -> None:
    assert parse_arguments('{"a": [1, 2,], "b": {"c": true,},}') == {"a": [1, 2], "b": {"c": True}}


def test_trailing_comma_inside_a_string_is_kept() -> None:
    assert parse_arguments('{"a": "x,}", "b": 1,}') == {"a": "x,}", "b": 1}


@pytest.mark.parametrize(
    "raw",
    [
        '```json\n{"path": "a.txt"}\n```',
        '```\n{"path": "a.txt"}\n```',
        '  ```JSON\n{"path": "a.txt"}```  ',
        '```json\n{"path": "a.txt"}',  # unclosed fence (truncated answer)
        "```python\n{'path': 'a.txt',}\n```",
    ],
)
def test_fenced_block_is_unwrapped(raw: str) -> None:
    assert parse_arguments(raw) == {"path": "a.txt"}


@pytest.mark.parametrize(
    "raw",
    [
        '{{"path": "a.txt"}}',
        '{{"path": "a.txt", "opts": {"deep": 1}}}',
        '{{"path": "a.txt", "opts": {{"deep": 1}}}}',
    ],
)
def test_doubled_braces_are_halved(raw: str) -> None:
    value = parse_arguments(raw)
    assert value["path"] == "a.txt"
    assert value.get("opts", {"deep": 1}) == {"deep": 1}


def test_doubled_braces_inside_strings_are_kept() -> None:
    assert parse_arguments('{{"fmt": "{{name}}"}}') == {"fmt": "{{name}}"}


def test_repairs_combine() -> None:
    assert parse_arguments("```json\n{{'a': [1, 2,], 'b': true,}}\n```") == {"a": [1, 2], "b": True}


def test_valid_json_is_never_reinterpreted() -> None:
    raw = json.dumps({"code": "```json\n{'a': 1,}\n```", "t": "{{x}}"})
    assert parse_arguments(raw) == json.loads(raw)


def test_non_object_is_an_error() -> None:
    with pytest.raises(ArgumentsParseError, match="must be a JSON object, got list"):
        parse_arguments("[1, 2]")


def test_invalid_text_names_the_json_error() -> None:
    with pytest.raises(ArgumentsParseError) as info:
        parse_arguments('{"path": "a.txt"')
    message = str(info.value)
    assert message.startswith("arguments are not valid JSON: Expecting")
    assert message.endswith("Send a JSON object.")


def test_code_is_never_run() -> None:
    for raw in ("__import__('os').system('echo hi')", "{'a': (lambda: 1)()}", "{'a': x}"):
        with pytest.raises(ArgumentsParseError):
            parse_arguments(raw)


def test_values_that_are_not_json_are_rejected() -> None:
    for raw in ("{'a': {1, 2}}", "{'a': 1j}", "{1: 'a'}", "{'a': b'x'}", "{'a': 1e999}"):
        with pytest.raises(ArgumentsParseError):
            parse_arguments(raw)


def test_deep_nesting_is_refused_without_recursion_errors() -> None:
    for raw in ("[" * 100_000, "{'a': " * 70 + "1" + "}" * 70, "{{" * 50_000 + "}}" * 50_000):
        with pytest.raises(ArgumentsParseError):
            parse_arguments(raw)


def test_huge_input_is_refused_quickly() -> None:
    raw = "{'a': '" + "x" * (MAX_LITERAL_CHARS * 5) + "',}"
    started = time.perf_counter()
    with pytest.raises(ArgumentsParseError):
        parse_arguments(raw)
    assert time.perf_counter() - started < 5  # generous: guards against quadratic repairs


def test_split_strings_handles_escapes_and_unclosed_strings() -> None:
    text = """{"a\\"b": 'c', "d}"""
    segments = [(text[a:b], s) for a, b, s in split_strings(text)]
    assert segments == [("{", False), ('"a\\"b"', True), (": ", False), ("'c'", True),
                        (", ", False), ('"d}', True)]  # fmt: skip


def test_unfence_leaves_plain_text_alone() -> None:
    assert unfence('  {"a": 1} ') == '{"a": 1}'
    assert unfence('```json\n{"a": 1}\n```') == '{"a": 1}'


# --- fuzz ------------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)  # fmt: skip
json_objects = st.dictionaries(st.text(max_size=8), json_values, max_size=5)
round_trips = settings(max_examples=60)


def _with_trailing_commas(value: Any) -> str:
    """JSON with a trailing comma after every non-empty object and array."""
    if isinstance(value, dict) and value:
        inner = "".join(f"{json.dumps(k)}: {_with_trailing_commas(v)}," for k, v in value.items())
        return "{" + inner + "}"
    if isinstance(value, list) and value:
        return "[" + "".join(f"{_with_trailing_commas(v)}," for v in value) + "]"
    return json.dumps(value)


def _parse_or_own_error(raw: str) -> dict[str, Any] | None:
    try:
        return parse_arguments(raw)
    except ArgumentsParseError:
        return None


@given(st.text(max_size=400))
def test_fuzz_arbitrary_text_raises_only_its_own_error(raw: str) -> None:
    _parse_or_own_error(raw)


jsonish = st.text(alphabet="{}[]()\"'\\,:`.0123456789 \n\tabeflnrstuxTFN_-#", max_size=300)


@given(jsonish)
def test_fuzz_jsonish_text_raises_only_its_own_error(raw: str) -> None:
    _parse_or_own_error(raw)


WRAPPINGS = {
    "plain": "{}",
    "fenced": "```json\n{}\n```",
    "doubled braces": "{{{}}}",
    "fenced doubled braces": "```\n{{{}}}\n```",
}


@round_trips
@given(json_objects, st.sampled_from(sorted(WRAPPINGS)))
def test_fuzz_nested_json_in_any_wrapping_round_trips(value: dict[str, Any], wrapping: str) -> None:
    raw = WRAPPINGS[wrapping].format(json.dumps(value))
    assert parse_arguments(raw) == value


@round_trips
@given(json_objects)
def test_fuzz_python_repr_round_trips(value: dict[str, Any]) -> None:
    assert parse_arguments(repr(value)) == value


@round_trips
@given(json_objects)
def test_fuzz_trailing_commas_round_trip(value: dict[str, Any]) -> None:
    assert parse_arguments(_with_trailing_commas(value)) == value


@round_trips
@given(json_objects.map(json.dumps), st.text(max_size=40))
def test_fuzz_json_with_garbage_raises_only_its_own_error(raw: str, garbage: str) -> None:
    _parse_or_own_error(raw + garbage)
    _parse_or_own_error(garbage + raw)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(["[", "{", "(", "{'a': ", '{"a": ', "{{", "'", '"', "```", ",", "\\"]),
    st.integers(min_value=1, max_value=60_000),
    st.sampled_from(["", "]", "}", ")", "1}", "'}", ",}"]),
)
def test_fuzz_huge_and_deep_inputs_raise_only_its_own_error(
    unit: str, count: int, tail: str
) -> None:
    _parse_or_own_error(unit * count + tail * min(count, 1000))


def test_fence_inside_a_string_and_two_fenced_blocks() -> None:
    assert parse_arguments('```json\n{"note": "```"}\n```') == {"note": "```"}
    assert parse_arguments('```json\n{"a": 1}\n```\nand\n```json\n{"b": 2}\n```') == {"a": 1}


def test_repairing_a_literal_with_odd_escapes_emits_no_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert parse_arguments("{'pattern': '\\[a-z\\]+'}") == {"pattern": "\\[a-z\\]+"}
