"""Gemma 4 and Nemotron Nano v2 tool calls: each format reads one call, several calls, text
then a call, a think block as thinking, a malformed call as an `E-CALL-SCHEMA` notice, and
holds markers split across tokens back; `detect` picks each for its official template, and
the grammar accepts the format's own calls.

Several cases are ported from llama.cpp's `tests/test-chat.cpp` (Gemma 4 and
NVIDIA-Nemotron-Nano-v2 sections), © the llama.cpp authors, MIT licence (the text is in
tests/fixtures/llama_templates/LICENSE).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.errors import ErrorCode
from app.templates.calls.format import ToolCall
from app.templates.calls.formats import FORMATS
from app.templates.calls.gemma4_values import gemma_value, read_object
from tests.templates.call_samples import detected
from tests.templates.grammar_check import accepts, grammar_of, weather_schema
from tests.templates.read_back import assert_one_bad_call, read_back


def _read(name: str, text: str) -> dict[str, Any]:
    """`text` read back through the format (a lone `</think>`: the prompt opened the block)."""
    return read_back(name, text, thinking="</think>" in text and "<think>" not in text)


Q = '<|"|>'
GEMMA4_CASES = [  # (text, calls, answer, thinking); from llama.cpp's Gemma 4 cases
    (
        f"<|tool_call>call:get_time{{city:{Q}London{Q}}}<tool_call|>",
        [("get_time", {"city": "London"})],
        "",
        "",
    ),
    (
        f"<|tool_call>call:get_time{{city:{Q}San Francisco{Q}}}<tool_call|>",
        [("get_time", {"city": "San Francisco"})],
        "",
        "",
    ),
    ("<|tool_call>call:empty_args{}<tool_call|>", [("empty_args", {})], "", ""),
    (
        f"Hello, world!\nWhat's up?<|tool_call>call:get_time{{city:{Q}Paris{Q}}}<tool_call|>",
        [("get_time", {"city": "Paris"})],
        "Hello, world!\nWhat's up?",
        "",
    ),
    (
        f"<|tool_call>call:get_time{{city:{Q}London{Q}}}<tool_call|><|tool_call>call:get_weather{{city:{Q}Paris{Q}}}<tool_call|>",
        [("get_time", {"city": "London"}), ("get_weather", {"city": "Paris"})],
        "",
        "",
    ),
    (
        "<|tool_call>call:special_function{arg1:-7}<tool_call|>",
        [("special_function", {"arg1": -7})],
        "",
        "",
    ),
    ("<|tool_call>call:amount{orig:1.5e10}<tool_call|>", [("amount", {"orig": 1.5e10})], "", ""),
    (
        "<|tool_call>call:toggle{enabled:false}<tool_call|>",
        [("toggle", {"enabled": False})],
        "",
        "",
    ),
    (
        "<|tool_call>call:set_nullable{value:null}<tool_call|>",
        [("set_nullable", {"value": None})],
        "",
        "",
    ),
    (
        f"<|tool_call>call:todo_list{{todos:[{Q}buy milk{Q},{Q}walk dog{Q}]}}<tool_call|>",
        [("todo_list", {"todos": ["buy milk", "walk dog"]})],
        "",
        "",
    ),
    (
        f"<|tool_call>call:set_config{{config:{{theme:{Q}dark{Q},count:3}}}}<tool_call|>",
        [("set_config", {"config": {"theme": "dark", "count": 3}})],
        "",
        "",
    ),
    (
        f"<|channel>thought\nI'm\nthinking<channel|><|tool_call>call:get_time{{city:{Q}Paris{Q}}}<tool_call|>",
        [("get_time", {"city": "Paris"})],
        "",
        "\nI'm\nthinking",
    ),
    (
        "<|channel>thought\nI'm\nthinking<channel|>Hello, world!",
        [],
        "Hello, world!",
        "\nI'm\nthinking",
    ),
    # a call written inside the thought stays thinking
    (
        "<|channel>thought\n<|tool_call>call:t{a:1}<tool_call|><channel|>Done.",
        [],
        "Done.",
        "\n<|tool_call>call:t{a:1}<tool_call|>",
    ),
    # the hand-over after the calls ends the turn; a string may hold braces and quotes
    (
        f'<|tool_call>call:f{{s:{Q}a{{b}}"c"{Q}}}<tool_call|><|tool_response>',
        [("f", {"s": 'a{b}"c"'})],
        "",
        "",
    ),
    # a call whose close is missing at the end of the answer still counts
    ("<|tool_call>call:f{n:1}", [("f", {"n": 1})], "", ""),
]

NEMOTRON_CASES = [  # from llama.cpp's Nemotron Nano v2 cases, and the template's own shapes
    (
        'I\'m\nthinking\n</think>\n<TOOLCALL>[{"name": "special_function", "arguments": {"arg1": 1}}]</TOOLCALL>',
        [("special_function", {"arg1": 1})],
        "",
        "I'm\nthinking\n",
    ),
    (
        'I\'m\nthinking\n</think>\n\n<TOOLCALL>[{"name": "special_function", "arguments": {"arg1": 1}}]</TOOLCALL>\n',
        [("special_function", {"arg1": 1})],
        "",
        "I'm\nthinking\n",
    ),
    (
        '</think>Let me check.\n<TOOLCALL>[{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {}}]</TOOLCALL><SPECIAL_12>\n\n',
        [("a", {"x": 1}), ("b", {})],
        "Let me check.",
        "",
    ),
    (
        '</think>Let me check.\n<SPECIAL_12>\n<SPECIAL_11>Assistant\n<TOOLCALL>[{"name": "a", "arguments": {"x": 1}}]</TOOLCALL>',
        [("a", {"x": 1})],
        "Let me check.",
        "",
    ),
    ('</think><TOOLCALL>[{"name": "a", "parameters": "{\\"x\\": 2}"}]', [("a", {"x": 2})], "", ""),
    ('<TOOLCALL>[{"name": "a", "arguments": {}}]</TOOLCALL>', [("a", {})], "", ""),
    (
        '<think>\n<TOOLCALL>[{"name": "a", "arguments": {}}]</TOOLCALL></think>Done.',
        [],
        "Done.",
        '\n<TOOLCALL>[{"name": "a", "arguments": {}}]</TOOLCALL>',
    ),
]


def _check(name: str, text: str, calls: list[Any], answer: str, thinking: str) -> None:
    got = _read(name, text)
    assert got["calls"] == [(f"functions.{n}", a) for n, a in calls]
    assert got["answer"].strip() == answer
    assert got["thinking"] == thinking
    assert got["issues"] == []


@pytest.mark.parametrize(("text", "calls", "answer", "thinking"), GEMMA4_CASES)
def test_gemma4_reads_its_calls(text: str, calls: list[Any], answer: str, thinking: str) -> None:
    _check("gemma4", text, calls, answer, thinking)


@pytest.mark.parametrize(("text", "calls", "answer", "thinking"), NEMOTRON_CASES)
def test_nemotron_reads_its_calls(text: str, calls: list[Any], answer: str, thinking: str) -> None:
    _check("nemotron", text, calls, answer, thinking)


@pytest.mark.parametrize(
    ("name", "text", "tool"),
    [
        ("gemma4", '<|tool_call>call:f{a:<|"|>x<|"|> b:2}<tool_call|>After.', "f"),
        ("gemma4", "<|tool_call>call:f{a:nope}<tool_call|>After.", "f"),
        ("gemma4", "<|tool_call>oops<tool_call|>After.", ""),
        ("nemotron", '<TOOLCALL>[{"name": "f", "arguments": {"a": }]</TOOLCALL>After.', "f"),
        ("nemotron", '<TOOLCALL>[{"arguments": {}}]</TOOLCALL>After.', ""),
    ],
)
def test_a_malformed_call_is_a_notice_never_dropped(name: str, text: str, tool: str) -> None:
    got = _read(name, text)
    assert_one_bad_call(got, tool)
    assert got["answer"] == "After."  # the text after the bad call is still the answer


def test_nemotron_keeps_the_calls_before_a_bad_entry() -> None:
    got = _read("nemotron", '<TOOLCALL>[{"name": "a", "arguments": {}}, 5]</TOOLCALL>')
    assert got["calls"] == [("functions.a", {})]
    assert [i.code for i in got["issues"]] == [ErrorCode.CALL_SCHEMA]


@pytest.mark.parametrize(
    ("name", "text"),
    [
        (
            "gemma4",
            'Sure.<|tool_call>call:get_time{city:<|"|>Oslo<|"|>}<tool_call|><|tool_response>',
        ),
        (
            "nemotron",
            'Sure.\n<SPECIAL_12>\n<SPECIAL_11>Assistant\n<TOOLCALL>[{"name": "get_time", "arguments": {"city": "Oslo"}}]</TOOLCALL>',
        ),
    ],
)
def test_split_markers_are_held_back_at_every_cut(name: str, text: str) -> None:
    """Fed in two pieces cut anywhere (inside every marker), no markup reaches the answer."""
    for cut in range(1, len(text)):
        got = read_back(name, text[:cut], text[cut:])
        answer, calls = got["answer"], [args for _, args in got["calls"]]
        assert answer.strip() == "Sure." and calls == [{"city": "Oslo"}], cut


@pytest.mark.parametrize(
    ("template", "name"),
    [
        ("google-gemma-4-31B-it", "gemma4"),
        ("google-gemma-4-31B-it-interleaved", "gemma4"),
        ("NVIDIA-Nemotron-Nano-v2", "nemotron"),
    ],
)
def test_detect_picks_the_format_for_its_template(template: str, name: str) -> None:
    detected(template, name)


def test_gemma4_values_round_trip() -> None:
    value = {"b": [1, 2.5, True, None, "x"], "a": {"k": "v: {w}"}, "c": ""}
    text = gemma_value(value)
    assert text == '{a:{k:<|"|>v: {w}<|"|>},b:[1,2.5,true,null,<|"|>x<|"|>],c:<|"|><|"|>}'
    assert read_object(text + "tail", 0) == (value, len(text))


SCHEMA = weather_schema(exact={"type": "boolean"})


@pytest.mark.parametrize(
    ("args", "ok"),
    [
        ({"city": "Paris, France", "days": 3}, True),
        ({"unit": "c", "exact": True}, True),
        ({"days": "three"}, False),  # a string where the schema wants an integer
        ({"unit": "k"}, False),  # not one of the enum's values
        ({"town": "Paris"}, False),  # not one of the tool's properties
    ],
)
def test_gemma4_grammar_holds_arguments_to_the_schema(args: dict[str, Any], ok: bool) -> None:
    grammar = grammar_of(FORMATS["gemma4"], {"get_weather": SCHEMA}, "required")
    text = "".join(
        p.text for p in FORMATS["gemma4"].write([ToolCall("get_weather", json.dumps(args))])
    )
    assert accepts(grammar, text) is ok


def test_nemotron_grammar_takes_several_calls_in_one_array() -> None:
    fmt = FORMATS["nemotron"]
    grammar = grammar_of(fmt, {"get_weather": SCHEMA, "other": None}, "auto")
    two = [ToolCall("get_weather", '{"city":"Oslo"}'), ToolCall("other", '{"x":1}')]
    text = "Let me look.\n" + "".join(p.text for p in fmt.write(two))
    assert accepts(grammar, text)
    assert not accepts(grammar, text.replace("other", "nope"))
