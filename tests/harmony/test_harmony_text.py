"""Harmony markup arriving as text, in any chunking, read by the same token parser as local
ids: for every case of the research catalogue the messages, lanes and diagnostics are those of
the token parser."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.domain.events import MessageDone, ParseIssue
from app.domain.visibility import Lane
from app.harmony import encoding as enc
from app.harmony.encoding import HarmonyEncoding
from app.harmony.parser import StreamParser
from app.harmony.text_stream import HarmonyText
from tests.harmony.test_parser_catalogue import CASES, KNOWN, TOOLS

REPLY = (
    "<|channel|>analysis<|message|>Think <b>bold</b> about it.<|end|>"
    "<|start|>assistant<|channel|>commentary to=functions.weather <|constrain|>json<|message|>"
    '{"city":"Oslo"}<|call|>'
)


def read(chunks: list[str], complete: bool = True, tools: Any = ()) -> list[tuple[Any, ...]]:
    reader = HarmonyText(known_tools=tools)
    events = [e for c in chunks for e in reader.feed(c)] + reader.finish(complete)
    return [(e.lane, e.message.channel, e.message.recipient, e.message.text, e.complete)
            for e in events if isinstance(e, MessageDone)]


def test_headers_bodies_and_ends_are_read() -> None:
    assert read([REPLY]) == [
        (Lane.ANALYSIS, "analysis", None, "Think <b>bold</b> about it.", True),
        (Lane.TOOL_CALL, "commentary", "functions.weather", '{"city":"Oslo"}', True),
    ]


@given(st.lists(st.integers(min_value=1, max_value=len(REPLY) - 1), max_size=30))
def test_any_chunking_gives_the_same_messages(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    chunks = [REPLY[a:b] for a, b in zip([0, *points], [*points, len(REPLY)], strict=True)]
    assert read(chunks) == read([REPLY])


def test_a_cut_message_and_a_dropped_stop_token() -> None:
    assert read(["<|channel|>final<|message|>Par"], complete=False) == [
        (Lane.ANSWER, "final", None, "Par", False)]
    assert read(["<|channel|>final<|message|>Paris."], complete=True) == [
        (Lane.ANSWER, "final", None, "Paris.", True)]  # servers drop <|return|>


@pytest.mark.parametrize("case_id", sorted(c for c in CASES if "⟦" not in CASES[c].wild))
def test_every_catalogue_case_reads_as_the_token_parser_reads_it(
        case_id: str, encoding: HarmonyEncoding) -> None:
    wild = CASES[case_id].wild
    tools = KNOWN.get(case_id, TOOLS | {"python"})
    tokens = encoding.encode_with_specials(wild)
    stop = next((i + 1 for i, t in enumerate(tokens) if t in (enc.RETURN, enc.CALL)), len(tokens))
    tokens = tokens[:stop]  # where a local generation stops
    local = StreamParser(encoding, known_tools=tools)
    events = local.feed_many(tokens) + local.finish()
    expected = [(e.lane, e.message.channel, e.message.recipient, e.message.text, e.complete)
                for e in events if isinstance(e, MessageDone)]
    chunks = [wild[i:i + 7] for i in range(0, len(wild), 7)]  # a server's arbitrary chunks
    reader = HarmonyText(encoding, known_tools=tools)
    remote = [e for c in chunks for e in reader.feed(c)] + reader.finish(complete=False)
    assert [(e.lane, e.message.channel, e.message.recipient, e.message.text, e.complete)
            for e in remote if isinstance(e, MessageDone)] == expected
    assert {i.code for i in remote if isinstance(i, ParseIssue)} == {i.code for i in local.issues}


def test_text_with_no_header_is_the_answer_when_the_stream_ends_normally() -> None:
    # A server that parses Harmony itself sends gpt-oss's answer as plain text.
    assert read(["The capital ", "is Paris."], complete=True) == [
        (Lane.ANSWER, "final", None, "The capital is Paris.", True)]
    reader = HarmonyText()
    events = reader.feed("<|channel|>final<|message|>Paris.<|end|>")  # a whole marker: not held
    assert [e.message.text for e in events if isinstance(e, MessageDone)] == ["Paris."]
