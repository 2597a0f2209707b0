"""A held call wakes only when a piece can complete it, and hands on exactly what it would
hand on if every piece with a closer character were read.

The scanner asks a held call's reader (`reading.Waking.wakes`) before reading it: Gemma 4's
`<|"|>` quotes hold a `>` but cannot end a call whose arguments have not closed, and a learned
format's markup is full of `>` that are not its closing word. These tests run every format
whose held calls have a reader of their own (the built-in `Remembering` ones and the learned
formats of the bench), piece by piece, against the same format with no reader (every piece
with a closer character read afresh): what each piece hands on must be the same, piece for
piece, with the closing word split across two pieces at every position, and the text given a
character at a time. They also count the reads: a quote or a `>` inside the markup costs none.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from app.templates.calls.derived import DerivedFormat
from app.templates.calls.derived_read import HeldCall
from app.templates.calls.format import CallFormat, ToolCall
from app.templates.calls.formats import FORMATS
from app.templates.calls.gemma4 import CLOSE, Gemma4
from app.templates.calls.gemma4_values import QUOTE, Unreadable, _object, read_object
from app.templates.calls.reading import CallReader, Memo, Read, Remembering
from app.templates.calls.scanner import CallScanner, Scanned
from tests.templates.call_samples import prose_then, written
from tests.templates.no_reader import Afresh
from tests.templates.test_learned_reading import SHAPES, learned

CALLS = [
    ToolCall("get_weather", '{"city": "Oslo, Norway", "days": 3, "units": "metric"}'),
    ToolCall("get_time", '{"zone": "Europe/Oslo"}'),
]
PROSE = "Let me look that up.\n"


def _formats() -> dict[str, CallFormat]:
    found: dict[str, CallFormat] = {
        n: f for n, f in FORMATS.items() if isinstance(f, Remembering | DerivedFormat)
    }
    for name in SHAPES:
        fmt = learned(name)
        if fmt is not None:
            found[f"learned:{name}"] = fmt
    return found


FORMS = _formats()


def _per_piece(fmt: CallFormat, pieces: Sequence[str]) -> list[list[str | Scanned]]:
    """What the scanner hands on for each piece, then at the end."""
    scanner = CallScanner(fmt)
    return [scanner.feed(p) for p in pieces] + [scanner.finish()]


def _closing_word(fmt: CallFormat) -> str:
    if isinstance(fmt, Gemma4):
        return CLOSE
    if isinstance(fmt, DerivedFormat):
        return fmt._reader.closing
    return ""


def _texts(fmt: CallFormat) -> list[str]:
    both = written(fmt, CALLS)
    return [written(fmt, CALLS[:1]), both, prose_then(fmt, PROSE, CALLS), both[: len(both) // 2]]


def test_the_formats_under_test_include_gemma4_and_the_learned_bench_shapes() -> None:
    assert "gemma4" in FORMS
    assert {f"learned:{n}" for n in SHAPES} <= set(FORMS), sorted(FORMS)


@pytest.mark.parametrize("name", sorted(FORMS))
def test_each_piece_hands_on_what_reading_every_closer_piece_hands_on(name: str) -> None:
    fmt = FORMS[name]
    every = Afresh(fmt)
    for text in _texts(fmt):
        by_char = list(text)
        assert _per_piece(fmt, by_char) == _per_piece(every, by_char), (name, text)
        for cut in range(1, len(text)):
            pieces = [text[:cut], text[cut:]]
            assert _per_piece(fmt, pieces) == _per_piece(every, pieces), (name, text, cut)


@pytest.mark.parametrize("name", sorted(n for n in FORMS if _closing_word(FORMS[n])))
def test_a_closing_word_split_across_pieces_at_every_position_is_found(name: str) -> None:
    fmt = FORMS[name]
    word = _closing_word(fmt)
    text = prose_then(fmt, PROSE, CALLS)
    at = text.rfind(word)
    assert at > 0, (name, text)
    head, tail = text[:at], text[at + len(word) :]
    whole = _per_piece(Afresh(fmt), [text])[0] + _per_piece(fmt, [text])[1]
    for cut in range(1, len(word)):
        pieces = [head, word[:cut], word[cut:], tail]
        got = _per_piece(fmt, pieces)
        assert got == _per_piece(Afresh(fmt), pieces), (name, cut)
        handed = [x for step in got for x in step]
        calls = [c for x in handed if isinstance(x, Scanned) for c in x.calls]
        assert calls == [c for x in whole if isinstance(x, Scanned) for c in x.calls], cut
        assert not got[-1] or all(isinstance(x, str) and not x.strip() for x in got[-1]), (
            f"the call was read only at the end (cut {cut})"
        )


class CountingGemma4(Gemma4):
    """Gemma 4, counting the reads the scanner asks of its held calls' readers."""

    def __init__(self) -> None:
        self.reads: list[str] = []

    def reader(self) -> CallReader:
        held = super().reader()
        read = held.read

        def counted(text: str, final: bool) -> Read:
            self.reads.append(text)
            return read(text, final)

        setattr(held, "read", counted)  # noqa: B010 (a method of this one reader)
        return held


def test_gemma4_quotes_cost_no_read_of_a_held_call() -> None:
    fmt = CountingGemma4()
    text = written(fmt, CALLS[:1])
    pieces = text.replace(QUOTE, "\0" + QUOTE + "\0").replace(CLOSE, "\0" + CLOSE).split("\0")
    assert pieces.count(QUOTE) == 4, pieces
    scanner = CallScanner(fmt)
    handed = [x for p in pieces if p for x in scanner.feed(p)] + scanner.finish()
    assert [c for x in handed if isinstance(x, Scanned) for c in x.calls] == CALLS[:1]
    assert not [t for t in fmt.reads if t.endswith(QUOTE)], fmt.reads
    assert len(fmt.reads) == 3, fmt.reads  # at its trigger, its `}` and its close


@pytest.mark.parametrize("name", [f"learned:{n}" for n in SHAPES if f"learned:{n}" in FORMS])
def test_a_learned_call_is_read_only_at_its_trigger_and_its_closing_word(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fmt = FORMS[name]
    reads: list[str] = []
    read = HeldCall.read

    def counted(self: HeldCall, text: str, final: bool) -> Read:
        reads.append(text)
        return read(self, text, final)

    monkeypatch.setattr(HeldCall, "read", counted)
    text = written(fmt, CALLS[:1])
    scanner = CallScanner(fmt)
    handed = [x for c in text for x in scanner.feed(c)] + scanner.finish()
    assert [c.name for x in handed if isinstance(x, Scanned) for c in x.calls] == [CALLS[0].name]
    word = _closing_word(fmt)
    assert reads and reads[0] in fmt.triggers, reads[:1]  # read once as its trigger comes
    early = [t for t in reads[1:] if not t.endswith(word)]
    assert not early, (name, early[:3])  # then only as its closing word comes


def test_memo_wakes_once_a_needle_comes_split_or_not_and_sleeps_again_on_wait() -> None:
    memo = Memo()
    text = "<|tool_call>call:f{a:"
    assert memo.woken(text)  # nothing awaited: any text may complete the call
    memo.wait_for(text, "}", CLOSE)
    assert not memo.woken(text + QUOTE)
    for cut in range(1, len(CLOSE)):
        memo.wait_for(text, "}", CLOSE)
        grown = text + QUOTE + CLOSE[:cut]
        assert not memo.woken(grown), cut
        assert memo.woken(grown + CLOSE[cut:]), cut
        assert memo.woken(grown + CLOSE[cut:] + "x")  # it stays woken until the next wait
    memo.wait_for(text, "}", CLOSE)
    assert not memo.woken(text + "b")
    assert memo.woken(text + "b" + "1}" + "c")  # a needle in text it was not asked about
    assert not memo.waiting(text + "b1}c")


@pytest.mark.parametrize(
    "text",
    [
        "{k:" + QUOTE + "a" + QUOTE + "b" + QUOTE + "}",  # text after a closing quote
        "{k:" + QUOTE + "a<b|c" + QUOTE + ",n:2}",  # a `<` that starts no quote
        "{k:" + QUOTE + "line\nnext" + QUOTE + "}",
    ],
)
def test_gemma4_flat_object_reads_a_string_to_its_first_closing_quote(text: str) -> None:
    """The one-match reading of a flat object ends a string where `_object` does: at its first
    closing quote (the text after it must be `,` or `}`)."""
    got = read_object(text, 0)
    try:
        want: object = _object(text, 0)
    except ValueError as exc:
        want = Unreadable(str(exc))
    assert got == want
