"""Lazy grammars' triggers: where a constraint switches on mid-answer (app/constrain/triggers)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.constrain.triggers import Fired, Trigger, TriggerWatch

CALL = Trigger(word=b"<tool_call>")
TAG = Trigger(token=151657)


def fed(watch: TriggerWatch, pieces: list[bytes]) -> list[Fired | None]:
    return [watch.feed(1000 + i, p) for i, p in enumerate(pieces)]


def test_a_word_split_over_tokens_fires_at_the_token_that_completes_it() -> None:
    watch = TriggerWatch([CALL])
    out = fed(watch, [b"Let me check. <to", b"ol_", b"call>", b'{"name"'])
    assert out[:2] == [None, None]
    assert out[2] == Fired(CALL, 2, len(b"Let me check. "))
    assert out[3] is out[2]  # fired once, stays fired


def test_a_token_trigger_fires_at_its_token_before_its_text_is_read() -> None:
    watch = TriggerWatch([CALL, TAG])
    assert watch.feed(5, b"Sure. ") is None
    assert watch.feed(151657, b"<tool_call>") == Fired(TAG, 1, len(b"Sure. "))


def test_the_earliest_word_wins_when_two_end_in_one_token() -> None:
    late, early = Trigger(word=b"[TOOL_CALLS]"), Trigger(word=b"<tool_call>")
    watch = TriggerWatch([late, early])
    assert watch.feed(1, b"x <tool_call>[TOOL_CALLS]") == Fired(early, 0, 2)


def test_text_that_only_looks_like_a_trigger_never_fires() -> None:
    watch = TriggerWatch([CALL])
    assert fed(watch, [b"<tool", b"_cal", b"l", b" >", b"<tool_cal"]) == [None] * 5
    assert watch.held() == len(b"<tool_cal")  # it may still become one: held back


def test_held_counts_only_a_possible_beginning() -> None:
    watch = TriggerWatch([CALL])
    watch.feed(1, b"a < b")
    assert watch.held() == 0
    watch.feed(2, b" <")
    assert watch.held() == 1


def test_a_trigger_is_a_word_or_a_token_and_a_watch_needs_one() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        Trigger()
    with pytest.raises(ValueError, match="exactly one"):
        Trigger(word=b"x", token=3)
    with pytest.raises(ValueError, match="at least one"):
        TriggerWatch([])


@given(st.binary(max_size=40), st.binary(max_size=40), st.lists(st.integers(1, 9), max_size=12))
def test_a_word_is_found_however_the_text_is_cut(before: bytes, after: bytes, cuts: list[int]) -> None:
    text = before + CALL.word + after
    expected = text.find(CALL.word)
    pieces, at = [], 0
    for n in cuts:
        pieces.append(text[at : at + n])
        at += n
    pieces.append(text[at:])
    watch = TriggerWatch([CALL])
    fired = next((f for f in fed(watch, pieces) if f is not None), None)
    assert fired is not None and fired.offset == expected
    assert sum(map(len, pieces[: fired.token_index + 1])) >= expected + len(CALL.word)
    assert sum(map(len, pieces[: fired.token_index])) < expected + len(CALL.word)
