"""Harmony markup arriving as text, in any chunking."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from app.harmony.text_stream import Ended, HarmonyText, Piece, Started, Text

REPLY = (
    "<|channel|>analysis<|message|>Think <b>bold</b> about it.<|end|>"
    "<|start|>assistant<|channel|>commentary to=functions.weather <|constrain|>json<|message|>"
    '{"city":"Oslo"}<|call|>'
)


def merged(pieces: list[Piece]) -> list[Piece]:
    out: list[Piece] = []
    for p in pieces:
        if isinstance(p, Text) and out and isinstance(out[-1], Text):
            out[-1] = Text(out[-1].text + p.text)
        else:
            out.append(p)
    return out


def read(chunks: list[str]) -> list[Piece]:
    reader = HarmonyText()
    pieces = [p for c in chunks for p in reader.feed(c)]
    return merged(pieces + reader.finish())


def test_headers_bodies_and_ends_are_read() -> None:
    assert read([REPLY]) == [
        Started("analysis", None, None),
        Text("Think <b>bold</b> about it."),
        Ended(True),
        Started("commentary", "functions.weather", "<|constrain|>json"),
        Text('{"city":"Oslo"}'),
        Ended(True),
    ]


@given(st.lists(st.integers(min_value=1, max_value=len(REPLY) - 1), max_size=30))
def test_any_chunking_gives_the_same_pieces(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    chunks = [REPLY[a:b] for a, b in zip([0, *points], [*points, len(REPLY)], strict=True)]
    assert read(chunks) == read([REPLY])


def test_a_cut_message_and_plain_text_without_the_format() -> None:
    assert read(["<|channel|>final<|message|>Par"]) == [Started("final", None, None), Text("Par"), Ended(False)]
    reader = HarmonyText()
    assert merged(reader.feed("Just an answer.") + reader.finish(complete=True)) == [
        Started("final", None, None), Text("Just an answer."), Ended(True)]
