"""MiniMax-M3 and GigaChat 3 / 3.1 tool calls: each format reads one call, several calls, text
then a call, a think block as thinking, a malformed call as an `E-CALL-SCHEMA` notice (the
calls before it standing), and holds markers split at any point back (detection and grammars:
`test_call_formats_minimax_gigachat_grammar.py`).

Several cases are ported from llama.cpp's `tests/test-chat.cpp` (MiniMax-M3, GigaChat V3 and
GigaChat V3.1 sections), © the llama.cpp authors, MIT licence (the text is in
tests/fixtures/llama_templates/LICENSE).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.errors import ErrorCode
from app.templates.calls.format import ToolCall
from app.templates.calls.formats import FORMATS
from app.templates.calls.minimax import MiniMax
from app.templates.calls.scanner import CallScanner
from app.templates.text_output import TextOutputParser
from tests.templates.read_back import BYTES, folded, read_back

NS = "]<]minimax[>["


def _mm(*calls: str) -> str:
    """A MiniMax-M3 block of `calls` (each `NAME`, then its argument tags)."""
    return f"{NS}<tool_call>\n" + "".join(calls) + f"{NS}</tool_call>"


def _invoke(name: str, *args: tuple[str, str]) -> str:
    tags = "".join(f"{NS}<{k}>{v}{NS}</{k}>" for k, v in args)
    return f'{NS}<invoke name="{name}">{tags}{NS}</invoke>\n'


MINIMAX_CASES = [  # (text, calls, answer, thinking); from llama.cpp's MiniMax-M3 cases
    ("</mm:think>Hello, world!\nWhat's up?", [], "Hello, world!\nWhat's up?", ""),
    (
        "<mm:think>I'm\nthinking</mm:think>Hello, world!\nWhat's up?",
        [],
        "Hello, world!\nWhat's up?",
        "I'm\nthinking",
    ),
    (
        "<mm:think>Let me check the time</mm:think>" + _mm(_invoke("get_time", ("city", "Tokyo"))),
        [("get_time", {"city": "Tokyo"})],
        "",
        "Let me check the time",
    ),
    (
        "</mm:think>" + _mm(_invoke("special_function", ("arg1", "1"))),
        [("special_function", {"arg1": 1})],
        "",
        "",
    ),
    (
        "<mm:think>Let's call a tool:</mm:think>" + _mm(_invoke("empty_args")),
        [("empty_args", {})],
        "",
        "Let's call a tool:",
    ),
    (
        "<mm:think>Calling both</mm:think>"
        + _mm(_invoke("get_time", ("city", "Paris")), _invoke("get_weather", ("city", "Paris"))),
        [("get_time", {"city": "Paris"}), ("get_weather", {"city": "Paris"})],
        "",
        "Calling both",
    ),
    (
        "<mm:think>Thinking about it</mm:think>Let me call the function."
        + _mm(_invoke("special_function", ("arg1", "1"))),
        [("special_function", {"arg1": 1})],
        "Let me call the function.",
        "Thinking about it",
    ),
    (
        "</mm:think>" + _mm(_invoke("magic_int", ("ref", "-14"))),
        [("magic_int", {"ref": -14})],
        "",
        "",
    ),
    (
        "</mm:think>" + _mm(_invoke("amount", ("orig", "3.14"))),
        [("amount", {"orig": 3.14})],
        "",
        "",
    ),
    (
        "</mm:think>" + _mm(_invoke("toggle", ("enabled", "true"))),
        [("toggle", {"enabled": True})],
        "",
        "",
    ),
    # nested values: an array as `item` tags, an object as its keys' tags
    (
        _mm(
            _invoke(
                "todo_list",
                ("todos", f"{NS}<item>buy milk{NS}</item>{NS}<item>walk dog{NS}</item>"),
            )
        ),
        [("todo_list", {"todos": ["buy milk", "walk dog"]})],
        "",
        "",
    ),
    (
        _mm(
            _invoke(
                "set_config", ("config", f"{NS}<theme>dark{NS}</theme>{NS}<count>3{NS}</count>")
            )
        ),
        [("set_config", {"config": {"theme": "dark", "count": 3}})],
        "",
        "",
    ),
    # a string keeps its text as written: markup-like characters, newlines, spaces
    (
        _mm(_invoke("f", ("s", ' a <b> "c"\n'))),
        [("f", {"s": ' a <b> "c"\n'})],
        "",
        "",
    ),
    # a call written inside the think block stays thinking
    (
        "<mm:think>" + _mm(_invoke("t", ("a", "1"))) + "</mm:think>Done.",
        [],
        "Done.",
        _mm(_invoke("t", ("a", "1"))),
    ),
    # a block whose close is missing at the end of the answer still counts
    (
        "</mm:think>" + f"{NS}<tool_call>\n" + _invoke("f", ("n", "1")),
        [("f", {"n": 1})],
        "",
        "",
    ),
    # a lone invoke, without its block
    (_invoke("f", ("n", "2")), [("f", {"n": 2})], "", ""),
]

HEADER = "<|message_sep|>\n\nfunction call<|role_sep|>\n"
CALL = '{"name": "special_function", "arguments": {"arg1": 1}}'
GIGACHAT3_CASES = [  # from llama.cpp's GigaChat V3 cases, and the template's own shapes
    ("Hello, world!\nWhat's up?", [], "Hello, world!\nWhat's up?"),
    (HEADER + CALL, [("special_function", {"arg1": 1})], ""),
    (
        "Hello, world!\nWhat's up?" + HEADER + CALL,
        [("special_function", {"arg1": 1})],
        "Hello, world!\nWhat's up?",
    ),
    # the end of the message after the call; an answer's own end of message
    (HEADER + CALL + "<|message_sep|>\n\n", [("special_function", {"arg1": 1})], ""),
    ("Hello.<|message_sep|>\n\n", [], "Hello."),
    # several calls, each in its own `function call` message; `parameters`, string arguments
    (
        HEADER + CALL + HEADER + '{"name": "b", "parameters": "{\\"x\\": 2}"}',
        [("special_function", {"arg1": 1}), ("b", {"x": 2})],
        "",
    ),
]
GIGACHAT31_CASES = [  # from llama.cpp's GigaChat V3.1 cases
    ("Hello, world!\nWhat's up?", [], "Hello, world!\nWhat's up?"),
    ("<|function_call|>" + CALL, [("special_function", {"arg1": 1})], ""),
    (
        "Hello, world!\nWhat's up?<|function_call|>" + CALL,
        [("special_function", {"arg1": 1})],
        "Hello, world!\nWhat's up?",
    ),
    ("<|function_call|>" + CALL + "<|message_sep|>\n\n", [("special_function", {"arg1": 1})], ""),
    ("Hello.<|message_sep|>\n\n", [], "Hello."),
    (
        "<|function_call|>" + CALL + '<|function_call|>{"name": "b", "arguments": {}}',
        [("special_function", {"arg1": 1}), ("b", {})],
        "",
    ),
]


def _check(fmt: str, text: str, calls: list[Any], answer: str, thinking: str = "") -> None:
    got = read_back(fmt, text)
    assert got["calls"] == [(f"functions.{n}", a) for n, a in calls]
    assert got["answer"].strip() == answer
    assert got["thinking"] == thinking
    assert got["issues"] == []


@pytest.mark.parametrize(("text", "calls", "answer", "thinking"), MINIMAX_CASES)
def test_minimax_reads_its_calls(text: str, calls: list[Any], answer: str, thinking: str) -> None:
    _check("minimax-m3", text, calls, answer, thinking)


@pytest.mark.parametrize(("text", "calls", "answer"), GIGACHAT3_CASES)
def test_gigachat3_reads_its_calls(text: str, calls: list[Any], answer: str) -> None:
    _check("gigachat3", text, calls, answer)


@pytest.mark.parametrize(("text", "calls", "answer"), GIGACHAT31_CASES)
def test_gigachat31_reads_its_calls(text: str, calls: list[Any], answer: str) -> None:
    _check("gigachat3.1", text, calls, answer)


@pytest.mark.parametrize("name", ["gigachat3", "gigachat3.1"])
def test_gigachat_call_in_a_think_block_stays_thinking(name: str) -> None:
    call = FORMATS[name].triggers[0] + CALL
    got = read_back(name, f"<think>{call}</think>Done.")
    assert got["calls"] == [] and got["answer"] == "Done." and got["thinking"] == call


SCHEMAS = {
    "f": {
        "type": "object",
        "properties": {
            "code": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "opts": {"type": "object", "properties": {"item": {"type": "integer"}}},
            "none": {"type": "array"},
        },
    }
}


def test_minimax_types_values_by_the_tools_schema() -> None:
    """With schemas, a string stays text, one `item` is still a list, an object whose key is
    `item` stays an object, an empty array is a list; without, each value is read as JSON."""
    text = _mm(
        _invoke(
            "f",
            ("code", "7"),
            ("tags", f"{NS}<item>true{NS}</item>"),
            ("opts", f"{NS}<item>5{NS}</item>"),
            ("none", ""),
        )
    )
    got = read_back(MiniMax(SCHEMAS), text)
    want = {"code": "7", "tags": ["true"], "opts": {"item": 5}, "none": []}
    assert got["calls"] == [("functions.f", want)] and got["issues"] == []
    loose = read_back("minimax-m3", text)["calls"]
    assert loose == [("functions.f", {"code": 7, "tags": [True], "opts": [5], "none": ""})]


def test_minimax_writes_what_it_reads() -> None:
    fmt = FORMATS["minimax-m3"]
    args = {
        "city": "Paris, France",
        "days": 3,
        "exact": False,
        "skip": None,
        "list": [1, {"a": "b"}],
    }
    text = "".join(p.text for p in fmt.write([ToolCall("get_weather", json.dumps(args))]))
    assert text == _mm(
        _invoke(
            "get_weather",
            ("city", "Paris, France"),
            ("days", "3"),
            ("exact", "false"),
            ("list", f"{NS}<item>1{NS}</item>{NS}<item>{NS}<a>b{NS}</a>{NS}</item>"),
        )
    )
    del args["skip"]  # a null argument is left out, as the template leaves it out
    assert read_back(fmt, text)["calls"] == [("functions.get_weather", args)]


@pytest.mark.parametrize(
    ("name", "text", "tool"),
    [
        ("minimax-m3", _mm(_invoke("f", ("a", f"x{NS}</b>"))) + "After.", "f"),
        ("minimax-m3", _mm(f'{NS}<invoke name="">{NS}</invoke>\n') + "After.", ""),
        ("minimax-m3", _mm(f"stray{NS}</invoke>\n") + "After.", ""),
        ("minimax-m3", _mm(_invoke("f", ("a", f"x{NS}<b>y{NS}</b>"))) + "After.", "f"),
        ("minimax-m3", _invoke("f", ("a", f"x{NS}</b>")) + "After.", "f"),  # a lone invoke
        ("gigachat3", HEADER + '{"name": "f", "arguments": {"a": }}After.', "f"),
        ("gigachat3", HEADER + '{"arguments": {}}After.', ""),
        ("gigachat3.1", '<|function_call|>{"name": "f", "arguments": [1]}After.', "f"),
        ("gigachat3.1", '<|function_call|>{"name": "f", "arguments": {"a": }}After.', "f"),
    ],
)
def test_a_malformed_call_is_a_notice_never_dropped(name: str, text: str, tool: str) -> None:
    got = read_back(name, text)
    assert got["calls"] == []
    assert [i.code for i in got["issues"]] == [ErrorCode.CALL_SCHEMA]
    who = f"call {tool}" if tool else "call a tool"
    assert who in got["issues"][0].message
    assert got["answer"] == "After."  # the text after the bad call is still the answer


def test_minimax_keeps_the_calls_before_a_bad_one() -> None:
    text = _mm(_invoke("a", ("x", "1")), f'{NS}<invoke name="b">{NS}<y>2{NS}</z>{NS}</invoke>\n')
    got = read_back("minimax-m3", text + "After.")
    assert got["calls"] == [("functions.a", {"x": 1})]
    assert [i.code for i in got["issues"]] == [ErrorCode.CALL_SCHEMA]
    assert "call b" in got["issues"][0].message and got["answer"] == "After."


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("minimax-m3", f'{NS}<tool_call>\n{NS}<invoke name="f">{NS}<a>1{NS}</a>'),  # cut off
        ("minimax-m3", f"{NS}<oops>"),  # the namespace token, and no call after it
        ("gigachat3", HEADER + '{"name": "f", "arguments": {'),  # its JSON never closes
        ("gigachat3", "<|message_sep|>\n\nfunction ca"),  # cut off in its header
        ("gigachat3.1", "<|function_call|>oops"),  # no JSON after the marker
    ],
)
def test_markup_that_ends_the_answer_unfinished_is_a_notice(name: str, text: str) -> None:
    got = read_back(name, "Sure." + text)
    assert got["calls"] == [] and got["answer"].startswith("Sure.")
    assert [i.code for i in got["issues"]] == [ErrorCode.CALL_SCHEMA]
    assert NS not in got["answer"] and "<|" not in got["answer"]


SPLIT = [
    (
        "minimax-m3",
        "</mm:think>Sure."
        + _mm(_invoke("get_time", ("city", "Oslo"), ("at", f"{NS}<h>9{NS}</h>")), _invoke("x")),
        [{"city": "Oslo", "at": {"h": 9}}, {}],
    ),
    (
        "gigachat3",
        f"Sure.{HEADER}" + '{"name": "get_time", "arguments": {"city": "Oslo"}}<|message_sep|>\n\n',
        [{"city": "Oslo"}],
    ),
    (
        "gigachat3.1",
        'Sure.<|function_call|>{"name": "get_time", "arguments": {"city": "Oslo"}}<|message_sep|>\n\n',
        [{"city": "Oslo"}],
    ),
]


@pytest.mark.parametrize(("name", "text", "calls"), SPLIT)
def test_split_markers_are_held_back_at_every_cut(name: str, text: str, calls: list[Any]) -> None:
    """Fed in two pieces cut anywhere (inside every marker), no markup reaches the answer."""
    for cut in range(1, len(text)):
        got = read_back(name, text[:cut], text[cut:])
        assert got["answer"].strip() == "Sure.", cut
        assert [a for _, a in got["calls"]] == calls and got["issues"] == [], cut


def test_minimax_reads_the_namespace_token_as_a_control_token() -> None:
    """With `]<]minimax[>[` one control token (no bytes of its own), the parser spells it."""
    ns_id = len(BYTES)
    parser = TextOutputParser([*BYTES, b""], [], FORMATS["minimax-m3"], {ns_id: NS})
    text = "</mm:think>Sure." + _mm(_invoke("get_time", ("city", "Oslo")))
    ids: list[int] = []
    for i, part in enumerate(text.split(NS)):
        ids += ([ns_id] if i else []) + list(part.encode())
    got = folded([e for t in ids for e in parser.feed(t)] + parser.finish())
    assert got["answer"] == "Sure." and got["calls"] == [("functions.get_time", {"city": "Oslo"})]


def test_the_scanner_reads_nothing_of_plain_text() -> None:
    """Text with brackets, `<` and a lone `]` is answer text, held back only at its end."""
    for name in ("minimax-m3", "gigachat3", "gigachat3.1"):
        scanner = CallScanner(FORMATS[name])
        text = "a ] b <x> c [ d <|e|> </mm:thin"
        pieces = scanner.feed(text) + scanner.finish()
        assert pieces and all(isinstance(p, str) for p in pieces)
        assert "".join(p for p in pieces if isinstance(p, str)) == text, name
