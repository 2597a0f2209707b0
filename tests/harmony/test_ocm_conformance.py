"""OpenChatML 2.2's conformance list (§17), one test each, on fixture files."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.errors import ErrorCode
from app.harmony.encoding import START_OF_TEXT
from app.harmony.ocm.interop import to_conversation
from app.harmony.ocm.model import Terminator, Transcript
from app.harmony.ocm.policy import VisibilityError, display_text, is_visible, tool_reply
from app.harmony.ocm.reader import check_transcript, read_transcript
from app.harmony.ocm.writer import write_transcript
from app.harmony.renderer import Renderer, RenderMode

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ocm"


def load(name: str) -> Transcript:
    return read_transcript((FIXTURES / name).read_text(encoding="utf-8"))


def test_1_legacy_transcript_reads_as_all_final() -> None:
    t = load("01_legacy_1x.ocm")
    assert t.legacy and [m.channel for m in t.messages] == ["final", "final", "final"]
    assert not t.problems
    conversation = to_conversation(t)
    assert [m.channel for m in conversation.messages] == [None, None, "final"]


def test_2_fully_channelled_transcript_ending_in_return() -> None:
    t = load("02_channelled_return.ocm")
    assert [m.channel for m in t.messages] == [None, "analysis", "final"]
    assert t.messages[-1].terminator is Terminator.RETURN and not t.problems
    assert t.header["generation_settings"]["reasoning_effort"] == "low"


def test_3_concurrent_calls_with_echoed_call_ids() -> None:
    t = load("03_concurrent_calls.ocm")
    calls = [m for m in t.messages if m.is_call]
    replies = [m for m in t.messages if m.role == "tool"]
    assert [c.call_id for c in calls] == ["wx1", "wx2"]
    assert [r.call_id for r in replies] == ["wx2", "wx1"]  # any order
    assert {r.call_id for r in replies} == {c.call_id for c in calls}
    assert not t.problems


def test_3b_unmatched_or_duplicate_call_ids_are_call_schema_problems() -> None:
    text = (FIXTURES / "03_concurrent_calls.ocm").read_text()
    text = text.replace("call_id=wx2<|channel|>", "call_id=wx1<|channel|>", 1).replace("call_id=wx2 name", "call_id=zz9 name")
    codes = [p.code for p in check_transcript(text)]
    assert codes.count(ErrorCode.CALL_SCHEMA) == 2


def test_4_tool_error_path() -> None:
    t = load("04_tool_error.ocm")
    reply = tool_reply(t.messages[1])
    assert reply is not None and reply.ok is False
    assert reply.error_code is ErrorCode.TOOL_TIMEOUT
    assert reply.error["message"] == "no answer in 100 ms"


def test_5_literal_block_containing_start() -> None:
    t = load("05_literal_block.ocm")
    (message,) = t.messages
    assert message.text == "Please print these markers exactly:\n\n<|start|><|channel|><|message|><|end|>\n"
    assert [s.literal for s in message.body] == [False, True]
    tokens = Renderer().render(to_conversation(t), RenderMode.PLAIN)
    assert sum(1 for t_ in tokens if t_ >= START_OF_TEXT) == 3  # only the frame: start, message, end
    assert write_transcript(t) == (FIXTURES / "05_literal_block.ocm").read_text()


def test_6_body_violating_constrain_json() -> None:
    t = load("06_constrain_violation.ocm")  # the data is kept...
    assert t.messages[0].text == '{"location": "SF",'
    problems = check_transcript((FIXTURES / "06_constrain_violation.ocm").read_text())
    assert [p.code for p in problems] == [ErrorCode.BODY_CONSTRAINT_VIOLATION]  # ...and reported
    assert (problems[0].line, problems[0].column) == (4, 1)


def test_7_preamble_on_commentary_is_shown_other_commentary_is_not() -> None:
    preamble, note = load("07_preamble.ocm").messages
    assert preamble.intent == "preamble" and is_visible(preamble)
    assert display_text(preamble).startswith("**Plan:**")
    assert not is_visible(note)
    with pytest.raises(VisibilityError) as info:
        display_text(note)
    assert info.value.code is ErrorCode.PERM_VISIBILITY


def test_8_legacy_functions_role_parses_as_tool() -> None:
    t = load("08_legacy_tool_role.ocm")
    reply = t.messages[1]
    assert (reply.role, reply.name, reply.call_id, reply.legacy_role) == ("tool", "functions.search", "q1", True)
    assert not t.problems
    canonical = read_transcript(
        (FIXTURES / "08_legacy_tool_role.ocm").read_text().replace("<|start|>functions.search to=assistant call_id=q1",
                                                                 "<|start|>tool to=assistant call_id=q1 name=functions.search")
    )
    assert to_conversation(canonical) == to_conversation(t)


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.ocm")))
def test_fixtures_are_canonical_or_become_so(name: str) -> None:
    text = (FIXTURES / name).read_text()
    written = write_transcript(read_transcript(text))
    assert write_transcript(read_transcript(written)) == written
    assert read_transcript(written) == read_transcript(text)


@pytest.mark.parametrize(
    "hidden", ["system", "developer", "analysis", "tool"],
)
def test_hidden_channels_never_display(hidden: str) -> None:
    t = load("03_concurrent_calls.ocm") if hidden in ("analysis", "tool") else load("01_legacy_1x.ocm")
    if hidden == "system":
        t = read_transcript("---\nversion: 2.2\n---\n<|start|>system<|message|>secret<|end|>\n")
    if hidden == "developer":
        t = read_transcript("---\nversion: 2.2\n---\n<|start|>developer<|message|>secret<|end|>\n")
    message = next(m for m in t.messages if m.role == hidden or m.channel == hidden)
    with pytest.raises(VisibilityError):
        display_text(message)
