"""The transcript reader and writer: typed errors with positions, fuzzing, round trips."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.errors import ErrorCode, TranscriptError
from app.harmony.ocm.model import OcmMessage, Segment, Terminator, Transcript
from app.harmony.ocm.projection import from_json, to_json
from app.harmony.ocm.reader import check_transcript, read_transcript
from app.harmony.ocm.writer import escape, write_transcript

HEAD = "---\nversion: 2.2\n---\n"


@pytest.mark.parametrize(
    "text, message, line, column",
    [
        ("<|start|>user<|message|>hi<|end|>", "must begin with a YAML header", 1, 1),
        ("---\nmodel: x\n---\n", "no 'version'", 2, 1),
        ("---\nversion: 9.0\n---\n", "unsupported OpenChatML version", 2, 1),
        ("---\nversion: [2.2\n---\n", "not valid YAML", 3, 1),
        (HEAD + "<|start|>robot<|message|>x<|end|>", "unknown role 'robot'", 4, 10),
        (HEAD + "<|start|>assistant<|channel|>bogus<|message|>x<|end|>", "unknown channel 'bogus'", 4, 30),
        (HEAD + "<|start|>assistant colour=red<|message|>x<|end|>", "unknown header attribute 'colour'", 4, 10),
        (HEAD + "<|start|>assistant intent=shout<|message|>x<|end|>", "intent must be one of", 4, 10),
        (HEAD + "<|start|>tool<|message|>x<|end|>", "needs name=", 4, 10),
        (HEAD + "<|start|>user<|message|>a<|start|>user<|message|>b<|end|>", "<|start|> inside a message body", 4, 26),
        (HEAD + "<|start|>user<|message|>x<|literal|>open", "has no <|endliteral|>", 4, 26),
        (HEAD + "stray text\n<|start|>user<|message|>x<|end|>", "text outside a message", 4, 1),
        (HEAD + "<|start|>user to=a to=b<|message|>x<|end|>", "given twice", 4, 10),
    ],
)
def test_fatal_problems_are_typed_and_positioned(text: str, message: str, line: int, column: int) -> None:
    with pytest.raises(TranscriptError) as info:
        read_transcript(text)
    error = info.value
    assert message in error.detail
    assert error.code is ErrorCode.PARSE_HEADER
    assert (error.line, error.column) == (line, column)
    assert error.offset == len(text[: _index(text, line, column)].encode())


def _index(text: str, line: int, column: int) -> int:
    lines = text.split("\n")
    return sum(len(x) + 1 for x in lines[: line - 1]) + column - 1


def test_byte_offsets_count_utf8_bytes() -> None:
    text = HEAD + "<|start|>user<|message|>日本<|end|>\n<|start|>robot<|message|>x<|end|>"
    with pytest.raises(TranscriptError) as info:
        read_transcript(text)
    assert info.value.line == 5 and info.value.offset == len(text[: text.index("robot")].encode())


def test_header_without_closing_dashes_ends_at_first_start() -> None:
    t = read_transcript("---\nversion: 2.2\nmodel: m\n<|start|>user<|message|>hi<|end|>\n")
    assert t.header == {"version": "2.2", "model": "m"} and t.messages[0].text == "hi"


def test_unknown_header_keys_are_kept_not_fatal() -> None:
    t = read_transcript("---\nversion: 2.2\nfuture_feature: {a: 1}\n---\n")
    assert t.header["future_feature"] == {"a": 1}
    assert "future_feature" in write_transcript(t)


def test_to_after_the_channel_is_accepted_and_written_canonically() -> None:
    t = read_transcript(HEAD + '<|start|>assistant call_id=c<|channel|>commentary to=functions.f<|constrain|>json<|message|>{}<|call|>')
    assert t.messages[0].recipient == "functions.f"
    assert "<|start|>assistant to=functions.f call_id=c<|channel|>commentary" in write_transcript(t)


def test_missing_channel_under_the_harmony_profile() -> None:
    text = "---\nversion: 2.2\nprofiles: {harmony: {enabled: true, require_channels: [final]}}\n---\n<|start|>assistant<|message|>x<|end|>\n"
    assert [p.code for p in check_transcript(text)] == [ErrorCode.PARSE_CHANNEL_MISSING]


def test_cut_off_last_frame_is_kept_and_reported() -> None:
    text = HEAD + "<|start|>assistant<|channel|>final<|message|>Half an ans"
    t = read_transcript(text)
    assert t.messages[0].text == "Half an ans" and t.messages[0].terminator is None
    assert [p.code for p in t.problems] == [ErrorCode.STREAM_TRUNCATED]
    assert write_transcript(t).endswith("Half an ans")


def test_check_goes_on_after_a_bad_frame() -> None:
    text = HEAD + "<|start|>robot<|message|>x<|end|>\n<|start|>user<|message|>fine<|end|>\n<|start|>assistant<|channel|>nope<|message|>y<|end|>"
    problems = check_transcript(text)
    assert [p.line for p in problems] == [4, 6]


def test_escaping_rules() -> None:
    assert escape("a <|end|> b <<|start|>") == "a <<|end|> b <<<|start|>"
    t = read_transcript(HEAD + "<|start|>user<|message|>x <<|end|> y <<<|call|> z<|end|>")
    assert t.messages[0].text == "x <|end|> y <<|call|> z"


# --- fuzzing and round trips ---------------------------------------------------------------

MARKERS = ["<|start|>", "<|channel|>", "<|message|>", "<|call|>", "<|constrain|>", "<|return|>", "<|end|>",
           "<|literal|>", "<|endliteral|>", "<", "<<", "---\n", "\n", " ", "to=", "call_id=", "name=", "intent=",
           "user", "assistant", "tool", "functions.f", "analysis", "final", "commentary", "json", "{", "}", ":",
           "version: 2.2\n", "version: 1.0\n", "ok"]
fuzz_text = st.lists(st.one_of(st.sampled_from(MARKERS), st.text(max_size=5)), max_size=40).map("".join)


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=fuzz_text, with_header=st.booleans())
def test_reader_gives_a_transcript_or_a_typed_error(body: str, with_header: bool) -> None:
    text = (HEAD if with_header else "") + body
    try:
        t = read_transcript(text)
    except TranscriptError as exc:
        assert exc.code in ErrorCode and exc.line >= 1
    else:
        written = write_transcript(t)
        assert read_transcript(written) == t
    for problem in check_transcript(text):
        assert problem.line >= 1 and problem.column >= 1


safe_value = st.from_regex(r"[A-Za-z0-9_.]{1,12}", fullmatch=True)
body_text = st.lists(st.one_of(st.sampled_from(MARKERS), st.text(max_size=8)), max_size=10).map("".join)


@st.composite
def ocm_messages(draw: st.DrawFn) -> OcmMessage:
    role = draw(st.sampled_from(["system", "developer", "user", "assistant", "tool"]))
    segments = tuple(
        Segment(t, lit) for t, lit in draw(st.lists(st.tuples(body_text, st.booleans()), max_size=3)) if t
    )
    return OcmMessage(
        role=role,
        body=segments,
        channel=draw(st.sampled_from([None, "analysis", "commentary", "final"])),
        recipient=draw(st.one_of(st.none(), safe_value)),
        call_id=draw(st.one_of(st.none(), safe_value)),
        name=draw(safe_value) if role == "tool" else draw(st.one_of(st.none(), safe_value)),
        intent=draw(st.sampled_from([None, "preamble", "status", "debug"])),
        content_type=draw(st.one_of(st.none(), safe_value)),
        constrain=draw(st.one_of(st.none(), st.just("json"), safe_value)),
        terminator=draw(st.sampled_from(list(Terminator))),
    )


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=st.lists(ocm_messages(), max_size=6), truncated=st.booleans())
def test_write_read_round_trip(messages: list[OcmMessage], truncated: bool) -> None:
    if truncated and messages:
        from dataclasses import replace

        messages[-1] = replace(messages[-1], terminator=None)
    t = Transcript(header={"version": "2.2", "model": "m"}, messages=tuple(messages))
    text = write_transcript(t)
    back = read_transcript(text)
    assert [m.text for m in back.messages] == [m.text for m in t.messages]
    assert [_fields(m) for m in back.messages] == [_fields(m) for m in t.messages]
    assert write_transcript(back) == text
    assert from_json(to_json(back)) == back


def _fields(m: OcmMessage) -> tuple[object, ...]:
    return (m.role, m.channel, m.recipient, m.call_id, m.name, m.intent, m.content_type, m.constrain, m.terminator)


def test_header_values_may_spell_markers_and_bodies_may_hold_dashes() -> None:
    t = Transcript(header={"version": "2.2", "note": "x <|start|> y"},
                   messages=(OcmMessage(role="user", body=(Segment("a\n---\nb"),)),))
    assert read_transcript(write_transcript(t)) == t
    unclosed = "---\nversion: 2.2\n<|start|>user<|message|>a\n---\nb<|end|>\n"
    assert read_transcript(unclosed).messages[0].text == "a\n---\nb"
