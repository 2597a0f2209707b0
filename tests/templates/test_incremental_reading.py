"""Reading held calls incrementally reads exactly what reading afresh reads, and Llama 3's
`auto` grammar holds a bare JSON call only where its reader reads one.

Every format that gives a reader of its own (`Remembering`) is run through the scanner twice
on the same text split at every position: once with its reader (searches remembered between
pieces) and once through a wrapper that reads each held call afresh from its start; the pieces
the two hand on (text, calls, notices and their raw text) must be the same. The texts are what
each format writes (one call, several calls, prose then calls), the same cut short, and bad
markup, so the error paths are covered too. `JsonEnd` is checked against a plain scan of every
prefix of JSON values with strings, escapes and brackets inside strings, and a think tag's held
tail against its definition on any text.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.harmony import encoding as enc
from app.templates.calls.format import CallFormat, ToolCall
from app.templates.calls.formats import FORMATS
from app.templates.calls.reading import JsonEnd, Memo, Remembering, json_end
from app.templates.calls.scanner import Scanned
from app.templates.text_output import Tag
from tests.templates.call_samples import at_start, said, scanned
from tests.templates.grammar_check import accepts, grammar_of
from tests.templates.no_reader import Afresh

CALLS = [
    ToolCall("get_weather", '{"city": "Oslo, Norway", "days": 3, "tags": ["a}", "b]"]}'),
    ToolCall("get_time", '{"zone": "Europe/Oslo", "nested": {"x": [1, {"y": "q\\"}"}]}}'),
]
REMEMBERING = sorted(n for n, f in FORMATS.items() if isinstance(f, Remembering))


def _texts(fmt: CallFormat) -> list[str]:
    one, both = at_start(fmt, CALLS[:1]), at_start(fmt, CALLS)
    prose = said(fmt, 'Let me check {"name": not a call} first.\n') + fmt.opening + both
    texts = [one, both, prose, both[: len(both) * 2 // 3], one[: len(one) // 2]]
    marker = fmt.triggers[0]
    texts.append(said(fmt, "Here: ") + fmt.opening + marker + '{"name": oops] trailing text')
    return texts


@pytest.mark.parametrize("name", REMEMBERING)
def test_a_remembering_reader_reads_what_a_fresh_read_reads_at_every_split(name: str) -> None:
    fmt = FORMATS[name]
    afresh = Afresh(fmt)
    for text in _texts(fmt):
        whole = scanned(afresh, [text])
        assert whole == scanned(fmt, [text])
        for cut in range(1, len(text)):
            pieces = [text[:cut], text[cut:]]
            assert scanned(fmt, pieces) == scanned(afresh, pieces), (name, text, cut)
        by_char = list(text)
        assert scanned(fmt, by_char) == scanned(afresh, by_char), (name, text)


@pytest.mark.parametrize("name", REMEMBERING)
def test_every_call_written_is_read_back_through_the_reader(name: str) -> None:
    fmt = FORMATS[name]
    calls = [
        c
        for piece in scanned(fmt, list(at_start(fmt, CALLS)))
        if isinstance(piece, Scanned)
        for c in piece.calls
    ]
    written = CALLS if len(calls) > 1 else CALLS[:1]
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [
        (c.name, json.loads(c.arguments)) for c in written
    ]


VALUES = [
    '{"a": "}", "b": ["]", {"c": "\\\\"}], "d": "\\"{"}',
    '[1, [2, [3]], "x]"]',
    '{"k": "\\\\\\""} tail',
]


@pytest.mark.parametrize("value", VALUES)
def test_json_end_remembers_how_far_itscanned(value: str) -> None:
    text = "pre " + value
    scan = JsonEnd(4)
    for n in range(5, len(text) + 1):
        assert scan.end(text[:n]) == _plain_json_end(text[:n], 4), (value, n)
    assert json_end(text, 4) == 4 + len(value.removesuffix(" tail"))


def _plain_json_end(text: str, start: int) -> int | None:
    """Character by character: the reference `JsonEnd` is checked against."""
    depth, in_string, escaped = 0, False, False
    for i in range(start, len(text)):
        c = text[i]
        if in_string:
            escaped, in_string = (False, True) if escaped else (c == "\\", c != '"')
            continue
        if c == '"':
            in_string = True
        elif c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def test_memo_finds_a_needle_split_across_pieces_and_waits_for_it() -> None:
    memo = Memo()
    text = "abc</tool"
    assert memo.find(text, "</tool_call>") == -1
    assert memo.find(text + "_call> more", "</tool_call>") == 3
    memo.wait_for(text, "</x>")
    assert memo.waiting(text + " still open")
    assert memo.waiting(text + " still open </")
    assert not memo.waiting(text + " still open </x>")


# --- Llama 3's `auto` grammar ------------------------------------------------------------

TOOLS = {
    "special_function": {
        "type": "object",
        "properties": {"arg1": {"type": "integer"}},
        "required": ["arg1"],
    }
}
GOOD = '{"name": "special_function", "parameters": {"arg1":1}}'
BAD = '{"name": "nope", "parameters": {"arg1":1}}'


@pytest.mark.parametrize(
    ("text", "accepted"),
    [
        (GOOD, True),  # a bare call where the answer begins is held to the tools
        ("  \n" + GOOD, True),
        (BAD, False),
        ("\n " + BAD, False),
        (GOOD + "; " + GOOD, True),  # right after a call, another
        (GOOD + "; " + BAD, False),
        (GOOD + "\n" + BAD, False),
        ("As text: " + BAD + " is how a call looks.", True),  # anywhere else it is text
        ("Plain answer.", True),
        ("Sure. <|python_tag|>" + GOOD, True),  # behind the tag a call starts anywhere
        ("Sure. <|python_tag|>" + BAD, False),
        ("<|python_tag|>" + GOOD + " Done.", True),
    ],
)
def test_llama3_auto_grammar_holds_a_bare_call_only_where_the_reader_reads_one(
    text: str, accepted: bool
) -> None:
    assert accepts(grammar_of(FORMATS["llama3"], TOOLS, "auto"), text) is accepted
    read = [
        c for p in scanned(FORMATS["llama3"], [text]) if isinstance(p, Scanned) for c in p.calls
    ]
    if accepted and GOOD in text and not text.startswith("As text"):
        assert [c.name for c in read][:1] == ["special_function"]  # the reader reads it as a call
    if text.startswith("As text"):
        assert not read  # and what the grammar left free is no call to the reader either


def test_llama3_auto_grammar_with_the_tag_as_a_control_token() -> None:
    tik = enc.load_encoding()._tik
    token = tik.encode_single_token("<|constrain|>")  # any special token stands in for the tag
    fmt = FORMATS["llama3"]
    grammar = grammar_of(fmt, TOOLS, "auto", {"<|python_tag|>": token})
    assert accepts(grammar, GOOD)
    assert not accepts(grammar, BAD)
    assert accepts(grammar, "As text: " + BAD)
    assert accepts(grammar, "Sure. <|constrain|>" + GOOD)
    assert not accepts(grammar, "Sure. <|constrain|>" + BAD)


# --- the think tag held back at the end of a piece ----------------------------------------

TAGS = [
    "<think>",
    "</think>",
    " to=self<|message|>",
    "<|channel>thought",
    "<mm:think>",
    "ab",
    "aab",
    "x",
]


@given(st.text(alphabet="<>/|thinkab =toself", max_size=24), st.sampled_from(TAGS))
def test_a_tags_tail_is_the_longest_end_that_starts_it(text: str, tag: str) -> None:
    longest = next(
        (n for n in range(min(len(tag) - 1, len(text)), 0, -1) if tag.startswith(text[-n:])), 0
    )
    assert Tag(tag).tail(text) == longest
