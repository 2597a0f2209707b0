"""Every tool-call format in FORMATS keeps the reader's promises, read through the real text
parser: text before a call stays answer text; several calls are read; a call inside a think
block stays thinking, and think tags inside a call are its text; a marker split across any two stream pieces is held back, never shown,
and read; a malformed call becomes an E-CALL-SCHEMA notice that holds what was written, never
dropped. Each format's own `write` gives its call markup (what its template writes), so a
format added to the registry is covered at collection time.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from app.domain.events import ContentDelta, ParseEvent, ParseIssue
from app.domain.visibility import Lane
from app.errors import ErrorCode
from app.templates.calls.format import CallFormat, ToolCall, name_of
from app.templates.calls.formats import FORMATS
from app.templates.text_output import TextOutputParser
from tests.templates.call_samples import after_text, after_think, at_start, prose_then, written

NAMES = sorted(FORMATS)
WEATHER = ToolCall("get_weather", '{"city": "Paris, France", "days": 3}')
TIME = ToolCall("get_time", '{"zone": "CET"}')
PROSE = "Let me check the weather in Paris for you.\n"
THOUGHT = "The user wants the weather; I could call "
AFTER = "It will be sunny."


@dataclass(frozen=True)
class Read:
    """What the parser made of one stream."""

    answer: str  # the answer messages' text
    streamed: list[str]  # the answer text each piece let through, piece by piece
    calls: list[tuple[str, Any]]
    issues: list[ParseIssue]
    thought: str


def read(fmt: CallFormat, pieces: Sequence[str], control: bool = False) -> Read:
    """`pieces` fed one token each; `control`: each of the format's markers that is a piece
    of its own is a control token (its table entry empty, its text spelled)."""
    markers = set(fmt.markers()) if control else set()
    table = [b"" if p in markers else p.encode() for p in pieces]
    spelled = {i: p for i, p in enumerate(pieces) if p in markers}
    parser = TextOutputParser(table, [], fmt, spelled=spelled)
    steps: list[list[ParseEvent]] = [parser.feed(i) for i in range(len(pieces))]
    steps.append(parser.finish())
    events = [e for step in steps for e in step]
    return Read(
        answer="".join(m.text for m in parser.messages if m.channel == "final" and not m.recipient),
        streamed=[_answer_text(step) for step in steps],
        calls=[(name_of(m.recipient), json.loads(m.text)) for m in parser.messages if m.recipient],
        issues=[e for e in events if isinstance(e, ParseIssue)],
        thought="".join(m.text for m in parser.messages if m.channel == "analysis"),
    )


def _answer_text(events: list[ParseEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, ContentDelta) and e.lane is Lane.ANSWER)


def want(*calls: ToolCall) -> list[tuple[str, Any]]:
    return [(c.name, json.loads(c.arguments)) for c in calls]


def by_marker(fmt: CallFormat, text: str) -> list[str]:
    """`text` cut so that each of the format's markers is one piece, every other character
    a piece of its own."""
    markers = sorted(fmt.markers(), key=len, reverse=True)
    out: list[str] = []
    i = 0
    while i < len(text):
        m = next((m for m in markers if m and text.startswith(m, i)), text[i])
        out.append(m)
        i += len(m)
    return out


# --- text before a call -----------------------------------------------------------------


def _prose_end(text: str) -> int:
    """Where the prose ends in a stream of prose then calls."""
    return text.index(PROSE) + len(PROSE)


@pytest.mark.parametrize("name", NAMES)
def test_text_before_a_call_stays_answer_text(name: str) -> None:
    fmt = FORMATS[name]
    got = read(fmt, [prose_then(fmt, PROSE, [WEATHER])])
    assert got.answer == PROSE and "".join(got.streamed) == PROSE
    assert got.calls == want(WEATHER) and got.issues == []


@pytest.mark.parametrize("name", NAMES)
def test_text_before_a_call_streams_before_the_call_is_whole(name: str) -> None:
    """The prose is shown as it comes, not held until the call is read."""
    fmt = FORMATS[name]
    text = prose_then(fmt, PROSE, [WEATHER])
    end = _prose_end(text)
    half = (end + len(text)) // 2
    got = read(fmt, [text[:end], text[end:half], text[half:]])
    assert got.streamed[0] == PROSE
    assert got.calls == want(WEATHER)


# --- several calls ----------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_several_calls_are_read(name: str) -> None:
    fmt = FORMATS[name]
    text = at_start(fmt, [WEATHER, TIME])
    if TIME.name not in text:
        pytest.skip(f"{name} writes one call a turn")
    for pieces in ([text], list(text), by_marker(fmt, text)):
        got = read(fmt, pieces, control=True)
        assert got.calls == want(WEATHER, TIME) and got.issues == []
        assert got.answer.strip() == ""


@pytest.mark.parametrize("name", NAMES)
def test_several_calls_after_prose_are_read(name: str) -> None:
    fmt = FORMATS[name]
    text = prose_then(fmt, PROSE, [WEATHER, TIME])
    if TIME.name not in text:
        pytest.skip(f"{name} writes one call a turn")
    got = read(fmt, by_marker(fmt, text), control=True)
    assert got.answer == PROSE and got.calls == want(WEATHER, TIME) and got.issues == []


# --- think blocks -----------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_a_call_inside_a_think_block_stays_thinking(name: str) -> None:
    fmt = FORMATS[name]
    start, end = fmt.think
    call = written(fmt, [WEATHER])
    text = start + THOUGHT + call + end + after_think(fmt, AFTER)
    for pieces in ([text], list(text)):
        got = read(fmt, pieces)
        assert got.calls == [] and got.issues == []
        assert THOUGHT + call in got.thought
        assert got.answer.strip() == AFTER


@pytest.mark.parametrize("name", NAMES)
def test_a_call_after_a_think_block_is_read(name: str) -> None:
    fmt = FORMATS[name]
    start, end = fmt.think
    text = start + THOUGHT + "get_weather." + end + written(fmt, [WEATHER])
    got = read(fmt, list(text))
    assert got.thought.startswith(THOUGHT) and got.calls == want(WEATHER)
    assert got.issues == [] and got.answer.strip() == ""


@pytest.mark.parametrize("name", NAMES)
def test_think_tags_inside_a_call_are_the_calls_text(name: str) -> None:
    """A call whose argument holds the think tags (code that prints them) reads back whole:
    they neither open reasoning nor are dropped, and the answer after the call is read."""
    fmt = FORMATS[name]
    start, end = fmt.think
    code = f"print('{start}hi{end}') if x < 2 else print('{end}')"
    call = ToolCall("python_run", json.dumps({"code": code}))
    text = prose_then(fmt, PROSE, [call])
    if code not in text:
        pytest.skip(f"{name} writes the value otherwise")
    for pieces in ([text], list(text), by_marker(fmt, text)):
        got = read(fmt, pieces)
        assert got.calls == want(call) and got.issues == [], pieces[:3]
        assert got.thought == "" and got.answer == PROSE


# --- split markers ----------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_a_marker_split_across_two_pieces_is_held_back_and_read(name: str) -> None:
    fmt = FORMATS[name]
    text = prose_then(fmt, PROSE, [WEATHER])
    lead = text.index(PROSE)  # what the format writes before answer text
    longest = max(map(len, fmt.triggers))
    for cut in range(1, len(text)):
        got = read(fmt, [text[:cut], text[cut:]])
        where = f"cut at {cut}: {text[:cut]!r} | {text[cut:]!r}"
        assert got.calls == want(WEATHER) and got.issues == [], where
        assert got.answer == PROSE and "".join(got.streamed) == PROSE, where  # no markup shown
        shown = got.streamed[0]
        fed = PROSE[: max(0, min(cut - lead, len(PROSE)))]  # of the prose, in the first piece
        assert fed.startswith(shown) and len(fed) - len(shown) < longest, where


@pytest.mark.parametrize("name", NAMES)
def test_every_piece_a_character_or_a_control_token_reads_the_same(name: str) -> None:
    fmt = FORMATS[name]
    text = prose_then(fmt, PROSE, [WEATHER])
    for pieces, control in ((list(text), False), (by_marker(fmt, text), True)):
        got = read(fmt, pieces, control)
        assert got.calls == want(WEATHER) and got.issues == []
        assert got.answer == PROSE and "".join(got.streamed) == PROSE


# --- malformed calls --------------------------------------------------------------------


def _kept(got: Read, bad: str) -> None:
    """One notice; what of `bad` (written after the prose) is not shown as answer text after
    the prose is in it."""
    assert got.calls == [] and got.answer.startswith(PROSE)
    assert [i.code for i in got.issues] == [ErrorCode.CALL_SCHEMA]
    shown = got.answer[len(PROSE) :]
    assert bad.endswith(shown), got.answer
    assert bad[: len(bad) - len(shown)].strip() in got.issues[0].message


@pytest.mark.parametrize("name", NAMES)
def test_a_call_cut_off_in_its_arguments_is_a_notice_never_dropped(name: str) -> None:
    fmt = FORMATS[name]
    text = prose_then(fmt, PROSE, [WEATHER])
    end = _prose_end(text)
    text = text[: text.index("city", end) + 2]  # the answer ends there
    for pieces in ([text], list(text)):
        got = read(fmt, pieces)
        assert got.answer == PROSE
        _kept(got, text[end:])  # what the model wrote is kept, not dropped
        assert WEATHER.name in got.issues[0].message  # it names the tool


@pytest.mark.parametrize("name", NAMES)
def test_a_trigger_followed_by_no_call_is_a_notice_never_dropped(name: str) -> None:
    fmt = FORMATS[name]
    text = prose_then(fmt, PROSE, [WEATHER])
    end = _prose_end(text)
    named = text.index(WEATHER.name, end)
    trigger = max((text.rfind(t, end, named), t) for t in fmt.triggers)  # the call's own
    text = text[: trigger[0] + len(trigger[1])] + " ??? "
    for pieces in ([text[:end], text[end:]], list(text)):
        _kept(read(fmt, pieces), text[end:])


def _broken(text: str) -> str:
    """`text` with the first `days` value after the prose written `3,,`."""
    at = text.index("3", text.index("days", _prose_end(text)))
    return text[:at] + "3,," + text[at + 1 :]


@pytest.mark.parametrize("name", NAMES)
def test_a_malformed_call_then_a_good_one_keeps_both(name: str) -> None:
    """The notice takes the bad call only: the good call written after it is still read."""
    fmt = FORMATS[name]
    alone = _broken(prose_then(fmt, PROSE, [WEATHER]))
    got = read(fmt, [alone])
    if got.calls == [(WEATHER.name, {"city": "Paris, France", "days": "3,,"})]:
        pytest.skip(f"{name} reads a value as raw text: no value is malformed")
    _kept(got, alone[_prose_end(alone) :])
    if fmt.opening:  # each call a message of its own, as the template writes them
        text = _broken(prose_then(fmt, PROSE, [WEATHER, TIME]))
    else:  # a block of its own: a list whose first entry is bad is bad as a whole
        text = alone + "\n" + after_text(fmt, [TIME])
    if TIME.name not in text:
        pytest.skip(f"{name} writes one call a turn")
    got = read(fmt, by_marker(fmt, text), control=True)
    assert [i.code for i in got.issues] == [ErrorCode.CALL_SCHEMA]
    assert WEATHER.name in got.issues[0].message
    assert got.calls == want(TIME)
    assert got.answer == PROSE
