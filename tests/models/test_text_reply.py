"""Parsing text-mode (ReAct) replies into thoughts, calls and final answers."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentloop.models.base import ToolSchema
from agentloop.models.text_protocol import PARSE_ERROR_TOOL
from agentloop.models.text_reply import ParsedCall, answer_start, parse_reply

READ = ToolSchema(
    name="read_file",
    description="Read a file.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
ADD = ToolSchema(
    name="add",
    description="Add two numbers.",
    parameters={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
)
TOOLS = (READ, ADD)


def calls(text: str, **kwargs: bool) -> list[tuple[str, object]]:
    reply = parse_reply(text, TOOLS, **kwargs)
    return [(c.name, _args(c)) for c in reply.calls]


def _args(call: ParsedCall) -> object:
    try:
        return json.loads(call.arguments)
    except ValueError:
        return call.arguments


def parse_error(text: str) -> dict[str, str]:
    reply = parse_reply(text, TOOLS)
    assert [c.name for c in reply.calls] == [PARSE_ERROR_TOOL]
    data = json.loads(reply.calls[0].arguments)
    assert isinstance(data, dict)
    return data


def test_thought_action_and_action_input() -> None:
    reply = parse_reply(
        'Thought: I need the file.\nAction: read_file\nAction Input: {"path": "a.txt"}', TOOLS
    )
    assert reply.steps == ("I need the file.", ParsedCall("read_file", '{"path": "a.txt"}'))
    assert reply.answer is None


def test_arguments_are_rewritten_as_json() -> None:
    text = "Action: add\nAction Input: {'a': 1, 'b': 2,}"
    assert parse_reply(text, TOOLS).calls == [ParsedCall("add", '{"a": 1, "b": 2}')]


@pytest.mark.parametrize(
    "action_input",
    [
        '{"a": 1, "b": 2}',
        "{'a': 1, 'b': 2}",
        '{"a": 1, "b": 2,}',
        '{{"a": 1, "b": 2}}',
        '```json\n{"a": 1, "b": 2}\n```',
        '{\n  "a": 1,\n  "b": 2\n}',
    ],
)
def test_lenient_action_inputs(action_input: str) -> None:
    assert calls(f"Thought: add them\nAction: add\nAction Input: {action_input}") == [
        ("add", {"a": 1, "b": 2})
    ]


def test_fenced_json_block_is_a_call() -> None:
    text = 'I will add.\n```json\n{"tool": "add", "arguments": {"a": 1, "b": 2}}\n```\n'
    reply = parse_reply(text, TOOLS)
    assert reply.steps == ("I will add.", ParsedCall("add", '{"a": 1, "b": 2}'))


@pytest.mark.parametrize(
    "blob",
    [
        '{"name": "add", "parameters": {"a": 1, "b": 2}}',
        '{"action": "add", "action_input": {"a": 1, "b": 2}}',
        '{"tool": "add", "arguments": "{\\"a\\": 1, \\"b\\": 2}"}',
        '{"type": "function", "function": {"name": "add", "arguments": {"a": 1, "b": 2}}}',
        "{'tool': 'add', 'arguments': {'a': 1, 'b': 2,},}",
    ],
)
def test_bare_json_call_shapes(blob: str) -> None:
    assert calls(blob) == [("add", {"a": 1, "b": 2})]


def test_json_that_is_not_a_call_is_just_text() -> None:
    text = 'Here is the data:\n```json\n{"name": "Ada", "age": 36}\n```'
    reply = parse_reply(text, TOOLS)
    assert reply.calls == [] and reply.answer == text


def test_final_answer() -> None:
    reply = parse_reply("Thought: I know this.\nFinal Answer: 42 is\nthe answer.", TOOLS)
    assert reply.steps == ("I know this.",)
    assert reply.answer == "42 is\nthe answer."


def test_markdown_labels() -> None:
    text = '**Thought:** hm\n**Action:** `read_file`\n**Action Input:** {"path": "x"}'
    assert calls(text) == [("read_file", {"path": "x"})]
    assert parse_reply("### Final Answer: yes", TOOLS).answer == "yes"


def test_plain_text_is_the_answer() -> None:
    assert parse_reply("Hello there!", TOOLS).answer == "Hello there!"
    assert parse_reply("Thought: Hello there!", TOOLS).answer == "Hello there!"


def test_action_wins_and_an_imagined_observation_is_dropped() -> None:
    text = (
        'Action: read_file\nAction Input: {"path": "a"}\nObservation: made up\n'
        'Action: add\nAction Input: {"a": 1, "b": 2}\nFinal Answer: made up too'
    )
    reply = parse_reply(text, TOOLS)
    assert calls(text) == [("read_file", {"path": "a"})]
    assert reply.answer is None


def test_final_answer_after_an_action_is_dropped() -> None:
    text = 'Action: read_file\nAction Input: {"path": "a"}\nFinal Answer: guess'
    reply = parse_reply(text, TOOLS)
    assert reply.answer is None and len(reply.calls) == 1


def test_several_actions_are_several_calls_in_order() -> None:
    text = (
        'Thought: both\nAction: add\nAction Input: {"a": 1, "b": 2}\n'
        'Thought: and the file\nAction: read_file\nAction Input: {"path": "x"}'
    )
    reply = parse_reply(text, TOOLS)
    assert reply.steps == (
        "both",
        ParsedCall("add", '{"a": 1, "b": 2}'),
        "and the file",
        ParsedCall("read_file", '{"path": "x"}'),
    )
    assert calls(text, parallel_tool_calls=False) == [("add", {"a": 1, "b": 2})]


def test_action_without_input_has_no_arguments() -> None:
    assert calls("Action: add") == [("add", {})]
    assert calls('Action: add\nThought: oops\nAction: read_file\nAction Input: {"path": "p"}') == [
        ("add", {}),
        ("read_file", {"path": "p"}),
    ]


def test_inline_and_next_line_forms() -> None:
    assert calls('Action: read_file {"path": "q"}') == [("read_file", {"path": "q"})]
    assert calls('Action:\nread_file\nAction Input: {"path": "n"}') == [
        ("read_file", {"path": "n"})
    ]


def test_tool_names_are_matched_leniently() -> None:
    assert calls('Action: Read_File\nAction Input: {"path": "a"}') == [("read_file", {"path": "a"})]
    assert calls('Action: read_file(path)\nAction Input: {"path": "a"}') == [
        ("read_file", {"path": "a"})
    ]
    assert calls("Action: delete_all") == [("delete_all", {})]  # the loop answers: unknown tool


def test_bare_value_for_a_one_parameter_tool() -> None:
    assert calls("Action: read_file\nAction Input: a.txt") == [("read_file", {"path": "a.txt"})]
    assert calls('Action: read_file\nAction Input: "a b.txt"') == [
        ("read_file", {"path": "a b.txt"})
    ]


def test_unparseable_arguments_stay_raw_for_the_loop_to_reject() -> None:
    assert calls('Action: add\nAction Input: {"a": 1, "b": }') == [("add", '{"a": 1, "b": }')]
    assert calls("Action: add\nAction Input: 3 and 4") == [("add", "3 and 4")]


def test_action_naming_no_tool_is_a_parse_error() -> None:
    data = parse_error('Thought: hm\nAction:\nAction Input: {"a": 1}')
    assert data["error"] == "the Action line names no tool"
    assert data["text"] == 'Action:\nAction Input: {"a": 1}'


def test_action_input_without_action_is_a_parse_error() -> None:
    data = parse_error('Action Input: {"a": 1}')
    assert "without an Action line" in data["error"]


def test_broken_json_call_block_is_a_parse_error() -> None:
    data = parse_error('```json\n{"tool": "add", "arguments": {"a": 1,\n```')
    assert "could not be parsed" in data["error"] and '"tool": "add"' in data["text"]


def test_final_answer_as_a_json_action() -> None:
    assert parse_reply('{"action": "Final Answer", "action_input": "done"}', TOOLS).answer == "done"


def test_answer_start_is_stable_as_the_reply_grows() -> None:
    full = "Thought: easy\nFinal Answer: **4**, of course."
    start = answer_start(full, TOOLS)
    assert start is not None and full[start:] == "**4**, of course."
    for cut in range(len(full)):
        at = answer_start(full[:cut], TOOLS)
        assert at is None or at == start or not full[at:cut].strip(" \t*_")
    assert answer_start("Action: add\nFinal Answer: no", TOOLS) is None


# --- fuzz ------------------------------------------------------------------------------------

LABELS = [
    *("Thought: ", "Action: ", "Action Input: ", "Observation: ", "Final Answer: "),
    *("**Action:** ", "```json\n", "```", "\n", "add", "read_file", PARSE_ERROR_TOOL),
]
reply_text = st.lists(
    st.one_of(
        st.sampled_from(LABELS),
        st.text(max_size=30),
        st.text(alphabet="{}[]\"':,` \n", max_size=20),
        st.builds(json.dumps, st.dictionaries(st.sampled_from(["tool", "a", "path", "arguments",
                                                                "name"]),
                                              st.integers() | st.text(max_size=5), max_size=3)),
    ),
    max_size=14,
).map("".join)  # fmt: skip


@given(reply_text)
def test_fuzz_parser_never_raises_and_is_consistent(text: str) -> None:
    reply = parse_reply(text, TOOLS)
    assert (reply.answer is None) == bool(reply.calls)
    for call in reply.calls:
        assert call.name
    start = answer_start(text, TOOLS)
    if start is not None:
        assert reply.answer == text[start:].strip()


@given(st.text(max_size=300))
def test_fuzz_arbitrary_text_never_raises(text: str) -> None:
    parse_reply(text, TOOLS)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(["Action: add\nAction Input: ", "```json\n", "Thought: ", "Action: "]),
    st.sampled_from(["{", "[", "{'a': ", '{"tool": ', "```", "Action: add\n", "'"]),
    st.integers(min_value=1, max_value=50_000),
)
def test_fuzz_huge_and_deep_replies_never_raise(prefix: str, unit: str, count: int) -> None:
    parse_reply(prefix + unit * count, TOOLS)
