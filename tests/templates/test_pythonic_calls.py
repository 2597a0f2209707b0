"""Pythonic tool calls (LFM2 / LFM2.5: `<|tool_call_start|>[f(a='x')]<|tool_call_end|>`) are read
safely and keep the reader's promises, their grammar holds calls to the tools, and the LFM2
templates' own calls read back through `replay --template` (gpt-oss's Jinja template:
`test_gpt_oss_jinja.py`).

The parser cases marked "llama.cpp" are ported from llama.cpp's tests/test-chat.cpp
(`test_lfm2_parser`), MIT licence, Copyright (c) 2023-2026 The ggml authors.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.domain.events import ContentDelta, ParseEvent, ParseIssue
from app.domain.visibility import Lane
from app.errors import ErrorCode
from app.templates.calls import detect as detect_module
from app.templates.calls.format import CallSyntaxError, ToolCall, recipient_of
from app.templates.calls.pythonic import Pythonic, read_calls, speaks_pythonic
from app.templates.jinja import GgufJinja
from app.templates.text_output import TextOutputParser
from tests.templates.grammar_check import accepts, grammar_of
from tests.templates.read_back import folded
from tests.templates.replay_calls import read_calls as replay_read_calls
from tests.templates.replay_calls import rendered, replayed

TEMPLATES = Path(__file__).resolve().parents[1] / "fixtures" / "llama_templates"
FMT = Pythonic()
START, END = "<|tool_call_start|>", "<|tool_call_end|>"


def _read(text: str, chunk: int = 1) -> tuple[str, str, list[tuple[str, Any]], list[ParseIssue]]:
    """(answer, thinking, calls, issues) of `text` fed `chunk` bytes a token."""
    data = text.encode()
    pieces = [data[i : i + chunk] for i in range(0, len(data), chunk)]
    parser = TextOutputParser(pieces, [], FMT)
    events: list[ParseEvent] = [e for i in range(len(pieces)) for e in parser.feed(i)]
    got = folded(events + parser.finish())
    streamed = "".join(
        e.text for e in events if isinstance(e, ContentDelta) and e.lane is Lane.ANSWER
    )
    assert streamed == got["answer"]  # a call held back whole, token by token: no markup leaked
    return got["answer"], got["thinking"], got["calls"], got["issues"]


def _call(name: str, **args: Any) -> tuple[str, Any]:
    return (recipient_of(name), args)


LLAMA_CPP = [  # (text, answer, calls) — llama.cpp's test_lfm2_parser
    (f"{START}[special_function(arg1=1)]{END}", "", [_call("special_function", arg1=1)]),
    (f'{START}[get_time(city="XYZCITY")]{END}', "", [_call("get_time", city="XYZCITY")]),
    (f"{START}[toggle(enabled=True)]{END}", "", [_call("toggle", enabled=True)]),
    (f"{START}[set_nullable(value=None)]{END}", "", [_call("set_nullable", value=None)]),
    (
        f'{START}[set_config(config={{"enabled": True, "count": 3}})]{END}',
        "",
        [_call("set_config", config={"enabled": True, "count": 3})],
    ),
    (
        f'{START}[set_config(config={{"enabled": true, "note": null}})]{END}',
        "",
        [_call("set_config", config={"enabled": True, "note": None})],
    ),
    (
        f'{START}[Calendar.create_event(title="demo", participants=["Alice", "Bob"], '
        f'metadata={{"priority": "high", "reminder": true}})]{END}',
        "",
        [
            _call(
                "Calendar.create_event",
                title="demo",
                participants=["Alice", "Bob"],
                metadata={"priority": "high", "reminder": True},
            )
        ],
    ),
    (
        "Use this format: [link text](url). Example: [Wikipedia](https://www.wikipedia.org).",
        "Use this format: [link text](url). Example: [Wikipedia](https://www.wikipedia.org).",
        [],
    ),
    (
        f"{START}[python(code=\"def hello():\\n    print('hey')\")]{END}",
        "",
        [_call("python", code="def hello():\n    print('hey')")],
    ),
    (
        f'{START}[python(code="First line\\nSecond line\\tindented")]{END}',
        "",
        [_call("python", code="First line\nSecond line\tindented")],
    ),
    (f'{START}[python(code="print(\\"hi\\")")]{END}', "", [_call("python", code='print("hi")')]),
    (
        f'Let me check the time.{START}[get_time(city="Paris")]{END}',
        "Let me check the time.",
        [_call("get_time", city="Paris")],
    ),
    (
        f"{START}[special_function(arg1=1), special_function_with_opt(arg1=1, arg2=2)]{END}",
        "",
        [_call("special_function", arg1=1), _call("special_function_with_opt", arg1=1, arg2=2)],
    ),
    (f"{START}[empty_args()]{END}", "", [_call("empty_args")]),
]


@pytest.mark.parametrize(("text", "answer", "calls"), LLAMA_CPP)
@pytest.mark.parametrize("chunk", [1, 3, 64])
def test_llama_cpp_lfm2_cases_read_as_llama_cpp_reads_them(
    text: str, answer: str, calls: list[tuple[str, Any]], chunk: int
) -> None:
    assert _read(text, chunk) == (answer, "", calls, [])


def test_a_call_inside_a_think_block_stays_thinking() -> None:  # llama.cpp, LFM2.5 thinking
    fake = f"{START}[special_function(arg1=1)]{END}"
    answer, thinking, calls, issues = _read(f"<think>Let me think about {fake} hmm</think>{fake}")
    assert thinking == f"Let me think about {fake} hmm"
    assert (answer, calls, issues) == ("", [_call("special_function", arg1=1)], [])


def test_lists_in_a_row_and_a_missing_closing_marker_at_the_end_are_all_read() -> None:
    text = f"Sure. {START}[a(x=1)]{END}\n{START}[b(y='two'), c()]"
    assert _read(text) == ("Sure. ", "", [_call("a", x=1), _call("b", y="two"), _call("c")], [])


def test_single_quotes_negative_numbers_tuples_and_unicode_are_literals() -> None:
    text = f"{START}[f(s='caf\\u00e9 \\'q\\'', n=-2.5, t=(1, 2), u='日本', e='')]{END}"
    args = {"s": "café 'q'", "n": -2.5, "t": [1, 2], "u": "日本", "e": ""}
    assert _read(text) == ("", "", [_call("f", **args)], [])


def test_an_apostrophe_the_lfm2_template_leaves_unescaped_is_read() -> None:
    text = f"{START}[search(query='what's new', where='Paris'), other(q='it's')]{END}"
    calls = [_call("search", query="what's new", where="Paris"), _call("other", q="it's")]
    assert _read(text) == ("", "", calls, [])


@pytest.mark.parametrize(
    ("body", "name"),
    [
        ("[f(x=__import__('os').system('touch /tmp/pwned'))]", "f"),  # never evaluated
        ("[f(x=open)]", "f"),
        ("[f(1, 2)]", "f"),
        ("[f(**{'a': 1})]", "f"),
        ("[f(x=1 + 2)]", "f"),
        ("[f(x={1: 2})]", "f"),
        ("[f(x=1e999)]", "f"),
        ("[f(x='unterminated)]", "f"),
        ("[42]", ""),
        ("[(lambda: 1)()]", ""),
        ("[f(x=f'{y}')]", "f"),
        ("[" * 500 + "]" * 500, ""),
    ],
)
def test_anything_but_literals_is_a_call_syntax_error_naming_the_tool(body: str, name: str) -> None:
    with pytest.raises(CallSyntaxError) as caught:
        read_calls(body)
    assert caught.value.name == name
    assert caught.value.code is ErrorCode.CALL_SCHEMA


def test_a_malformed_call_is_a_notice_never_dropped_and_the_next_call_stands() -> None:
    bad = f"{START}[get_time(city=Paris)]{END}"
    answer, _, calls, issues = _read(f"Checking.{bad}{START}[get_time(city='Oslo')]{END}")
    assert answer == "Checking." and calls == [_call("get_time", city="Oslo")]
    assert [i.code for i in issues] == [ErrorCode.CALL_SCHEMA]
    assert "get_time" in issues[0].message and "city=Paris" in issues[0].message


def test_a_marker_split_anywhere_is_held_back_until_known() -> None:
    text = f"Answer <|tool_call_st{START}[f(a=1)]{END}"
    for chunk in range(1, len(text)):
        assert _read(text, chunk) == ("Answer <|tool_call_st", "", [_call("f", a=1)], [])


VALUES: list[Any] = [
    'it\'s a "test"\\ with\nnew lines\tand \x01 control',
    "日本語 ✓",
    0,
    -17,
    3.25,
    True,
    False,
    None,
    ["a", "b'c", 1, None, True, {"k": [1]}],
    {"nested": {"deep": ["x", False, None]}, "quote": "'"},
    [],
    {},
]


@pytest.mark.parametrize("value", VALUES)
def test_what_the_format_writes_it_reads_back(value: Any) -> None:
    calls = [ToolCall("first", json.dumps({"v": value, "n": 1})), ToolCall("ns.second", "{}")]
    text = "".join(p.text for p in FMT.write(calls))
    assert text.startswith(START + "[first(") and text.endswith(")]" + END)
    assert _read(text) == ("", "", [_call("first", v=value, n=1), _call("ns.second")], [])


def test_the_prompt_side_writes_as_the_lfm2_template_does() -> None:
    call = ToolCall("get_weather", json.dumps({"city": "Paris", "days": 3, "opts": {"a": True}}))
    text = "".join(p.text for p in FMT.write([call]))
    assert text == f"{START}[get_weather(city='Paris', days=3, opts={{\"a\": true}})]{END}"
    assert [p.markup for p in FMT.write([call])] == [True, False, True, False, True, True]
    assert FMT.declare([]) == "List of tools: []" and FMT.result("f", "<x>")[0].markup is False


def test_another_family_reuses_the_syntax_with_its_own_markers() -> None:
    class Bracketed(Pythonic):
        name = "bracketed"
        open = "<calls>"
        close = "</calls>"

    fmt = Bracketed()
    assert (
        fmt.triggers == ("<calls>",)
        and fmt.closers == ">"
        and fmt.markers() == ("<calls>", "</calls>")
    )
    assert fmt.read("<calls>[f(a='x')]</calls> after", final=False) == (
        [ToolCall("f", '{"a": "x"}')],
        25,
    )
    assert fmt.read("<calls>[f(a='x')]", final=False) is None


# --- grammar ------------------------------------------------------------------------------

GRAMMAR_TOOLS: dict[str, Any] = {
    "get_weather": {
        "type": "object",
        "properties": {
            "unit": {"type": "string", "enum": ["c", "f"]},
            "city": {"type": "string"},
            "days": {"type": "integer"},
            "exact": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["city"],
    },
    "no_args": {"type": "object", "properties": {}},
    "anything": None,
}


def _written(*calls: tuple[str, dict[str, Any]]) -> str:
    return "".join(p.text for p in FMT.write([ToolCall(n, json.dumps(a)) for n, a in calls]))


@pytest.mark.parametrize(
    ("calls", "ok"),
    [
        ([("get_weather", {"city": "Paris"})], True),
        (
            [
                (
                    "get_weather",
                    {"unit": "c", "city": "it's", "days": 3, "exact": True, "tags": ["a"]},
                )
            ],
            True,
        ),
        ([("get_weather", {"city": "Paris"}), ("no_args", {}), ("anything", {"x": [1]})], True),
        ([("anything", {"s": "text", "b": False, "n": None})], True),
        ([("get_weather", {"days": 3})], False),  # city is required
        ([("get_weather", {"city": "Paris", "days": "3"})], False),  # days is an integer
        ([("get_weather", {"unit": "k", "city": "Paris"})], False),  # not in the enum
        ([("get_weather", {"city": "Paris", "extra": 1})], False),  # not a parameter
        ([("get_weather", {"days": 3, "city": "Paris"})], False),  # out of declared order
        ([("nope", {})], False),
        ([("no_args", {"x": 1})], False),
    ],
)
def test_the_grammar_holds_names_parameters_and_types(calls: list[Any], ok: bool) -> None:
    assert accepts(grammar_of(FMT, GRAMMAR_TOOLS, "required"), _written(*calls)) is ok


def test_the_lazy_grammar_leaves_text_free_until_the_marker() -> None:
    auto = grammar_of(FMT, GRAMMAR_TOOLS, "auto")
    none = grammar_of(FMT, GRAMMAR_TOOLS, "none")
    call = _written(("get_weather", {"city": "Paris"}))
    assert accepts(auto, "Free [text](url) f(x=1).")
    assert accepts(auto, "Let me check. " + call)
    assert not accepts(auto, "Let me check. " + _written(("nope", {})))
    assert accepts(none, "Just text.") and not accepts(none, call)


# --- the LFM2 templates' own calls --------------------------------------------------------


@pytest.fixture
def with_pythonic(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The format registered as `formats.py` registers it (detection cached afresh)."""
    from app.templates.calls import formats

    monkeypatch.setitem(formats.FORMATS, FMT.name, FMT)
    detect_module.detect.cache_clear()
    yield
    detect_module.detect.cache_clear()


def test_the_lfm2_templates_are_told_by_their_tool_list_markup() -> None:
    found = {
        p.stem for p in TEMPLATES.glob("*.jinja") if speaks_pythonic(p.read_text(encoding="utf-8"))
    }
    assert found == {"LFM2-8B-A1B", "LFM2.5-Instruct", "LFM2.5-8B-A1B"}


def test_the_lfm2_template_s_own_calls_read_back(
    with_pythonic: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    path = TEMPLATES / "LFM2.5-8B-A1B.jinja"  # the one LFM2 template that writes calls
    source = path.read_text(encoding="utf-8")
    assert isinstance(GgufJinja(source).call_format(), Pythonic)
    weather: tuple[str, Any]
    time: tuple[str, Any]
    weather, time = (
        ("get_weather", {"city": "Saint-Malo's port", "days": 3}),
        ("get_time", {"city": "CET"}),
    )
    cases: list[tuple[list[tuple[str, Any]], str]] = [
        ([weather], ""),
        ([weather, time], ""),
        ([weather], "Let me check."),
    ]
    outs = replayed(path, rendered(source, cases), monkeypatch, capsys)
    for (calls, prose), out in zip(cases, outs, strict=True):
        got, answer = replay_read_calls(out)
        assert got == [(f"functions.{n}", a) for n, a in calls]
        assert (answer, out["errors"]) == (prose, [])
