"""The quick paths of call reading read exactly what the slow ones do.

`pythonic_fast.fast_calls` against Python's own parser (`ast`, as `read_calls` used it before),
Gemma 4's one-match reading of a flat object against its item-by-item reader, and `JsonEnd`
(which skips whole strings in one step) against a character-by-character scan, each on text
built from the pieces that make such markup (hypothesis), fed whole and cut anywhere. Where a
quick path answers, its answer is the slow path's, value types included.
"""

from __future__ import annotations

import ast
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from app.templates.calls import gemma4_values, pythonic
from app.templates.calls.format import ToolCall
from app.templates.calls.pythonic_fast import fast_calls
from app.templates.calls.reading import JsonEnd
from tests.templates.test_incremental_reading import _plain_json_end

PY_PIECES = [
    "[", "]", "(", ")", ",", " ", "\n", "=", "get_weather", "a.b", "x", "city", "'Oslo'",
    '"Oslo"', "'a\"b'", "\"a'b\"", "'", '"', "3", "-3", "0", "01", "1.5", "1e5", "1e400",
    "-0.0", "True", "None", "true", "null", "class", "if", "\\", "'\\n'", "\t", "#", "é",
    "3j", "_", "match", "1_0", "..", "*", "\r", "\x00",
]  # fmt: skip
PY_VALUES = [
    "'Oslo, Norway'", '"x y"', "3", "-2.5", "1e2", "True", "false", "None", "null", "''",
    "'é€'", "0", "-0", "12345678901234567890", "'a\"b'", '"a\'b"', "1E+2", "1e-3", "'a\\'b'",
    "-0.0", "1e999", "'x' 'y'", "[1, 'a']",
]  # fmt: skip
G4_PIECES = [
    "{", "}", ",", ":", " ", "\n", "city", "days", '<|"|>', "Oslo", "3", "-0", "1.5e3",
    "true", "nul", "null", "x y", "[", "]", "<", "01", "-", "e",
]  # fmt: skip
G4_VALUES = [
    '<|"|>a,b}<|"|>', "3", "-2.5", "1e2", "true", "false", "null", '<|"|><|"|>', "0", "-0",
    "1E+2", "[1]", "{a:1}",
]  # fmt: skip
JSON_PIECES = ["{", "}", "[", "]", '"', "\\", "a", " ", ",", ":", "\n", '\\"', '"}"']


def _by_ast(text: str) -> list[ToolCall] | str:
    """What `read_calls` reads with `ast` alone (before the quick path): the calls, or "bad"."""
    try:
        try:
            node = pythonic._parsed(text.strip())
        except SyntaxError:
            node = pythonic._parsed(pythonic.requoted(text.strip()))
        items = node.elts if isinstance(node, ast.List | ast.Tuple) else [node]
        return [pythonic._call(item) for item in items]
    except (SyntaxError, pythonic._NotALiteral):
        return "bad"


@st.composite
def _python_call_lists(draw: st.DrawFn) -> str:
    calls = []
    for _ in range(draw(st.integers(1, 3))):
        keys = draw(
            st.lists(st.sampled_from(["city", "days", "x", "_y", "match", "None"]), max_size=3)
        )
        gap = draw(st.sampled_from(["", " ", "\n "]))
        args = ("," + gap).join(f"{k}={draw(st.sampled_from(PY_VALUES))}" for k in keys)
        name = draw(st.sampled_from(["get_weather", "ns.tool", "f", "def", "a.True"]))
        calls.append(f"{name}({args}{draw(st.sampled_from(['', ',', ' ']))})")
    head = draw(st.sampled_from(["[", "[ ", "", "(", "[\n"]))
    return head + ", ".join(calls) + draw(st.sampled_from(["]", " ]", ",]", "", ")"]))


@settings(max_examples=400, deadline=None)
@given(
    st.one_of(_python_call_lists(), st.lists(st.sampled_from(PY_PIECES), max_size=14).map("".join))
)
def test_pythonic_quick_path_reads_what_ast_reads(text: str) -> None:
    quick = fast_calls(text.strip())
    if quick is not None:
        assert quick == _by_ast(text), text


def test_pythonic_quick_path_takes_the_common_list() -> None:
    text = "[get_weather(city='Oslo, Norway', days=3, units=\"metric\"), f(on=True, x=-1.5)]"
    assert fast_calls(text) == [
        ToolCall("get_weather", '{"city": "Oslo, Norway", "days": 3, "units": "metric"}'),
        ToolCall("f", '{"on": true, "x": -1.5}'),
    ]
    assert fast_calls(text) == _by_ast(text)


def _item_by_item(text: str) -> Any:
    try:
        return gemma4_values._object(text, 0)
    except gemma4_values._More:
        return None
    except gemma4_values._Unreadable as exc:
        return gemma4_values.Unreadable(str(exc))


@st.composite
def _gemma4_objects(draw: st.DrawFn) -> str:
    items = []
    for _ in range(draw(st.integers(0, 4))):
        key = draw(st.sampled_from(["a", "b_c", "k.1", "x-y", "_", "my key", '<|"|>q<|"|>']))
        space = draw(st.sampled_from(["", " ", "\n"]))
        items.append(f"{key}{space}:{space}{draw(st.sampled_from(G4_VALUES))}{space}")
    text = draw(st.sampled_from(["{", "{ "])) + ",".join(items)
    text += draw(st.sampled_from(["}", "", " }", "}x"]))
    return text[: draw(st.integers(1, len(text)))]


@settings(max_examples=400, deadline=None)
@given(
    st.one_of(
        _gemma4_objects(),
        st.lists(st.sampled_from(G4_PIECES), max_size=12).map(lambda parts: "{" + "".join(parts)),
    )
)
def test_gemma4_flat_objects_read_as_item_by_item(text: str) -> None:
    quick, slow = gemma4_values.read_object(text, 0), _item_by_item(text)
    assert quick == slow, text
    if isinstance(quick, tuple):
        assert [type(v) for v in quick[0].values()] == [type(v) for v in slow[0].values()]


def test_gemma4_flat_object_is_read_in_one_go() -> None:
    text = '{city:<|"|>Oslo, Norway<|"|>,days:3,ok:true,x:-1.5e2} rest'
    assert gemma4_values._flat_object(text, 0) == (
        {"city": "Oslo, Norway", "days": 3, "ok": True, "x": -150.0},
        text.index(" rest"),
    )


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(JSON_PIECES), max_size=30).map("".join), st.data())
def test_json_end_skips_strings_as_a_scan_by_character(body: str, data: st.DataObject) -> None:
    text = "xx{" + body
    cuts = sorted([*data.draw(st.lists(st.integers(3, len(text)), max_size=4)), len(text)])
    scan = JsonEnd(2)
    for cut in cuts:
        assert scan.end(text[:cut]) == _plain_json_end(text[:cut], 2), (text, cut)
