"""The Llama 3 reader finds a bare `{"name"` call only where llama.cpp's Llama 3.x parser does:
at the start of the answer (past blank space and a think block), or right after another call.
The same JSON after answer text is answer text, passed on as it streams; a `<|python_tag|>`
call is read wherever it starts. Each text goes through the real text parser, fed in pieces.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.domain.events import ContentDelta, ParseIssue
from app.domain.visibility import Lane
from app.errors import ErrorCode
from app.templates.calls.format import name_of
from app.templates.calls.formats import FORMATS
from app.templates.calls.llama3 import PYTHON_TAG
from app.templates.text_output import TextOutputParser

LLAMA3 = FORMATS["llama3"]
CALL = '{"name": "get_weather", "parameters": {"city": "Oslo"}}'
OTHER = '{"name": "get_time", "parameters": {"zone": "CET"}}'
WEATHER = ("get_weather", {"city": "Oslo"})
TIME = ("get_time", {"zone": "CET"})


def _read(pieces: list[str]) -> tuple[str, list[tuple[str, Any]], list[ParseIssue], str, list[str]]:
    """(answer, calls, issues, thinking, the answer deltas as fed) of `pieces`, one a token."""
    parser = TextOutputParser([p.encode() for p in pieces], [], LLAMA3)
    per_piece = [parser.feed(i) for i in range(len(pieces))]
    events = [e for step in per_piece for e in step] + parser.finish()
    answer = "".join(m.text for m in parser.messages if m.channel == "final" and not m.recipient)
    thought = "".join(m.text for m in parser.messages if m.channel == "analysis")
    calls = [(name_of(m.recipient), json.loads(m.text)) for m in parser.messages if m.recipient]
    issues = [e for e in events if isinstance(e, ParseIssue)]
    fed = ["".join(e.text for e in step if isinstance(e, ContentDelta) and e.lane is Lane.ANSWER)
           for step in per_piece]  # fmt: skip
    return answer, calls, issues, thought, fed


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


@pytest.mark.parametrize("size", [1, 3, 7, 1000])
@pytest.mark.parametrize("text", [CALL, "\n  " + CALL, '{ "name": "get_weather", "parameters": {"city": "Oslo"}}',
                                  '{"type": "function", "name": "get_weather", "parameters": {"city": "Oslo"}}'])  # fmt: skip
def test_a_bare_call_where_the_answer_begins_is_read(text: str, size: int) -> None:
    answer, calls, issues, _, _ = _read(_pieces(text, size))
    assert calls == [WEATHER] and not issues
    assert not answer.strip()


@pytest.mark.parametrize("size", [1, 4, 1000])
def test_a_bare_call_after_a_think_block_is_read_and_the_thinking_kept(size: int) -> None:
    answer, calls, issues, thought, _ = _read(
        _pieces("<think>Oslo, so the weather tool.</think>\n" + CALL, size)
    )
    assert calls == [WEATHER] and not issues and not answer.strip()
    assert thought == "Oslo, so the weather tool."


@pytest.mark.parametrize("size", [1, 5, 1000])
@pytest.mark.parametrize("prose", ["Let me check.\n", "Call it like this: ", "x"])
def test_the_same_json_after_answer_text_is_answer_text(prose: str, size: int) -> None:
    answer, calls, issues, _, _ = _read(_pieces(prose + CALL, size))
    assert answer == prose + CALL
    assert calls == [] and issues == []


def test_json_after_answer_text_streams_as_it_comes() -> None:
    """Once the answer has begun, a `{` cannot start a bare call: nothing is held back."""
    pieces = ["Quoting a call: ", '{"', "name", '": "get_weather"', "}"]
    *_, fed = _read(pieces)
    assert fed == pieces


def test_the_start_of_a_bare_call_is_held_until_it_is_known() -> None:
    _, calls, _, _, fed = _read(['{"', "na", 'me": "get_weather", "parameters": {"city": "Oslo"}}'])
    assert fed == ["", "", ""] and calls == [WEATHER]
    answer, calls, _, _, fed = _read(['{"', "x", '": 1}'])  # JSON that is no call: an answer
    assert answer == '{"x": 1}' and calls == [] and "".join(fed) == '{"x": 1}'


@pytest.mark.parametrize("size", [1, 6, 1000])
@pytest.mark.parametrize("between", ["\n", "; ", " ;\n"])
def test_a_bare_call_right_after_a_call_is_read(between: str, size: int) -> None:
    answer, calls, issues, _, _ = _read(_pieces(CALL + between + OTHER, size))
    assert calls == [WEATHER, TIME] and not issues and not answer.strip()


def test_a_bare_call_after_text_that_follows_a_call_is_answer_text() -> None:
    answer, calls, _, _, _ = _read([CALL, "\nDone. Next time send ", OTHER])
    assert calls == [WEATHER]
    assert answer == "Done. Next time send " + OTHER


@pytest.mark.parametrize("size", [1, 4, 1000])
def test_a_python_tag_call_after_answer_text_is_read(size: int) -> None:
    prose = 'Quoting {"name": "x"} first. '
    answer, calls, issues, _, _ = _read(_pieces(prose + PYTHON_TAG + CALL, size))
    assert answer == prose and calls == [WEATHER] and not issues
    answer, calls, _, _, _ = _read(_pieces(prose + PYTHON_TAG + 'get_time.call(zone="CET")', size))
    assert answer == prose and calls == [TIME]


def test_a_malformed_bare_call_at_the_start_is_a_notice_naming_the_tool() -> None:
    answer, calls, issues, _, _ = _read(
        _pieces('{"name": "get_weather", "parameters": {"city": "Oslo",}}', 3)
    )
    assert calls == [] and answer == ""
    assert [i.code for i in issues] == [ErrorCode.CALL_SCHEMA] and "get_weather" in issues[
        0
    ].message
