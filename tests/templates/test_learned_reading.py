"""The learned reader reads a held call incrementally and keeps the reader's promises: every
format learned from an official llama.cpp template (tests/fixtures/llama_templates, the
per-family formats switched off) reads prose then its calls the same whole, cut in two at every
position, a character at a time and a control token per marker; a call cut off anywhere after
its trigger is one E-CALL-SCHEMA notice that holds its markup, or (cut where the arguments
written so far may be all of them) a call with those arguments, none of it shown as answer text; a closing word written inside a value does not end the call early; a malformed call
then a good one keeps both; and a held call's markup is read again only when a closing word
comes, not on every piece (so a long call costs in proportion to its length), and answers at
every length the held text grows to what a read afresh answers.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from typing import Any

import pytest

from app.errors import ErrorCode
from app.templates.calls.derived import DerivedFormat
from app.templates.calls.derived_read import MarkupReader
from app.templates.calls.detect import detect
from app.templates.calls.format import CallSyntaxError, ToolCall
from tests.templates.call_samples import after_text, prose_then, said, written
from tests.templates.test_learned_corpus import LEARN_LEFT_OUT
from tests.templates.test_reader_promises import PROSE, TIME, WEATHER, Read, by_marker, read, want
from tests.templates.test_template_corpus import FIXTURES, _templates


@cache
def learned(name: str) -> DerivedFormat | None:
    """The format learned from official template `name` alone (None: not a markup format)."""
    source = (FIXTURES / f"{name}.jinja").read_text(encoding="utf-8")
    fmt = detect(source, families=False).format
    return fmt if isinstance(fmt, DerivedFormat) else None


NAMES = [n for n in _templates() if n not in LEARN_LEFT_OUT and learned(n) is not None]
SHAPES = ["GLM-4.6", "Kimi-K2-Instruct", "ByteDance-Seed-OSS"]  # the bench's learned rows


def _fmt(name: str) -> DerivedFormat:
    fmt = learned(name)
    assert fmt is not None
    return fmt


def _calls(fmt: DerivedFormat) -> list[ToolCall]:
    """Two calls where the format writes them in one turn, else one."""
    return [WEATHER, TIME] if TIME.name in written(fmt, [WEATHER, TIME]) else [WEATHER]


def _same(got: Read, whole: Read, where: str) -> None:
    assert (got.answer, got.calls, got.issues) == (whole.answer, whole.calls, whole.issues), where
    assert "".join(got.streamed) == got.answer, where  # no markup shown and taken back


def test_most_official_templates_are_read_by_a_learned_markup_format() -> None:
    assert len(NAMES) >= 40 and set(SHAPES) <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_prose_then_calls_read_the_same_split_at_every_position(name: str) -> None:
    fmt = _fmt(name)
    calls = _calls(fmt)
    text = prose_then(fmt, PROSE, calls)
    whole = read(fmt, [text])
    assert whole.calls == want(*calls) and whole.issues == [] and whole.answer == PROSE
    for cut in range(1, len(text)):
        _same(read(fmt, [text[:cut], text[cut:]]), whole, f"cut at {cut}: {text[:cut]!r}")
    _same(read(fmt, list(text)), whole, "a character at a time")
    _same(read(fmt, by_marker(fmt, text), control=True), whole, "a control token per marker")


def _outcome(read: Callable[[str, bool], object], text: str, final: bool) -> object:
    """What a read of `text` gives, an error as its message, tool and length."""
    try:
        return read(text, final)
    except CallSyntaxError as exc:
        return (exc.message, exc.name, exc.length, exc.calls)


@pytest.mark.parametrize("name", NAMES)
def test_a_held_call_reads_as_the_format_does_at_every_length(name: str) -> None:
    """The reader that remembers how far it searched answers, at every length the held text
    grows to, what a read afresh of the same text answers (and so at the end)."""
    fmt = _fmt(name)
    closing = fmt._reader.closing or "}"
    odd = ToolCall(WEATHER.name, json.dumps({"city": f"Paris {closing} France", "days": 3}))
    for calls in (_calls(fmt), [odd, TIME]):
        text = written(fmt, calls)
        held = fmt.reader()
        for n in range(1, len(text) + 1):
            got = _outcome(held.read, text[:n], False)
            assert got == _outcome(fmt.read, text[:n], False), f"{text[:n]!r}"
            assert _outcome(held.read, text[:n], True) == _outcome(fmt.read, text[:n], True)
            if got is not None:
                break
        else:
            raise AssertionError(f"{text!r} was never read whole")


def _trigger_end(fmt: DerivedFormat, text: str, after: int) -> int:
    """Where the first trigger after `after` ends."""
    return min((text.find(t, after) + len(t), t) for t in fmt.triggers if t in text[after:])[0]


@pytest.mark.parametrize("name", NAMES)
def test_a_call_cut_off_anywhere_is_read_or_one_notice_that_holds_it(name: str) -> None:
    fmt = _fmt(name)
    text = prose_then(fmt, PROSE, [WEATHER])
    shown = len(said(fmt, PROSE))  # the answer as written (its header on, after an opening)
    closing = fmt._reader.closing
    end = text.rfind(closing) + len(closing) if closing else len(text)  # past the call
    # a lone opening at the end is a message with nothing written yet: no call, no notice
    for cut in range(_trigger_end(fmt, text, shown) + bool(fmt.opening), end):
        got = read(fmt, [text[:cut]])
        where = f"cut at {cut}: {text[shown:cut]!r} read as {got}"
        assert got.answer == PROSE and "".join(got.streamed) == PROSE, where
        if got.issues:
            assert got.calls == [] and len(got.issues) == 1, where
            assert got.issues[0].code is ErrorCode.CALL_SCHEMA, where
            assert text[shown:cut].strip() in got.issues[0].message, where
        else:  # cut where the arguments written so far may be all: a call without its close
            written_args = dict(want(WEATHER)[0][1])
            assert [n for n, _ in got.calls] == [WEATHER.name], where
            assert got.calls[0][1].items() <= written_args.items(), where


def test_a_glm_call_cut_inside_an_argument_name_shows_none_of_its_markup() -> None:
    fmt = _fmt("GLM-4.6")
    text = PROSE + written(fmt, [WEATHER])
    text = text[: text.index("<arg_key>days") + len("<arg_key>da")]
    for pieces in ([text], list(text)):
        got = read(fmt, pieces)
        assert got.answer == PROSE and got.calls == []
        assert [i.code for i in got.issues] == [ErrorCode.CALL_SCHEMA]
        assert "<arg_key>da" in got.issues[0].message and WEATHER.name in got.issues[0].message


@pytest.mark.parametrize("name", NAMES)
def test_a_closing_word_inside_a_value_does_not_end_the_call(name: str) -> None:
    fmt = _fmt(name)
    closing = fmt._reader.closing or "}"
    odd = ToolCall(WEATHER.name, json.dumps({"city": f"Paris {closing} France", "days": 3}))
    text = prose_then(fmt, PROSE, [odd, TIME])
    whole = read(fmt, [text])
    _same(read(fmt, list(text)), whole, "a character at a time")
    _same(read(fmt, by_marker(fmt, text), control=True), whole, "a control token per marker")
    if name in SHAPES:
        assert whole.calls == want(odd, TIME) and whole.issues == [], whole


@pytest.mark.parametrize("name", NAMES)
def test_a_malformed_call_then_a_good_one_keeps_both(name: str) -> None:
    fmt = _fmt(name)
    if fmt.markup.per_key:
        pytest.skip(f"{name} reads a value as raw text: no value is malformed")
    alone = prose_then(fmt, PROSE, [WEATHER])
    at = alone.index("3", alone.index("days", len(PROSE)))
    bad = alone[:at] + "3,," + alone[at + 1 :]
    text = bad + "\n" + after_text(fmt, [TIME])
    for pieces in ([text], by_marker(fmt, text)):
        got = read(fmt, pieces, control=True)
        assert [i.code for i in got.issues] == [ErrorCode.CALL_SCHEMA], got
        assert WEATHER.name in got.issues[0].message and "3,," in got.issues[0].message
        assert got.calls == want(TIME) and got.answer == PROSE, got


@pytest.mark.parametrize("name", SHAPES)
def test_a_long_call_is_read_once_its_closing_word_comes(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fed a character at a time, a call whose value is long and full of `>` (the closers)
    has its markup read a handful of times, not once per piece."""
    fmt = _fmt(name)
    code = "if a > b:\n    print('<b>bold</b>')\n" * 60 + "done()"
    call = ToolCall("run", json.dumps({"code": code}))
    text = prose_then(fmt, PROSE, [call, call])
    parses: list[int] = []
    real = MarkupReader.parse

    def counted(self: MarkupReader, text: str, final: bool) -> Any:
        parses.append(len(text))
        return real(self, text, final)

    monkeypatch.setattr(MarkupReader, "parse", counted)
    got = read(fmt, list(text))
    assert got.calls == want(call, call) and got.issues == [] and got.answer == PROSE
    assert len(text) > 4000 and len(parses) <= 6, parses
