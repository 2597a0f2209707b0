"""Reading a generation back through a call format's text parser, as the tests of each format
do: what the parser's events say was called, answered, thought and noticed.

Guarantees: `fed` feeds each piece's bytes one token at a time (token i is byte i, `BYTES`),
then finishes the parser, and returns every event in order; `folded` takes the finished
messages only (calls with their recipient and their arguments parsed as JSON, answer and
thinking text joined in order) and every `ParseIssue`; `read_back` is the two together.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from app.domain.events import MessageDone, ParseEvent, ParseIssue
from app.domain.visibility import Lane
from app.errors import ErrorCode
from app.templates.calls.format import CallFormat
from app.templates.calls.formats import FORMATS
from app.templates.text_output import TextOutputParser

BYTES = [bytes([i]) for i in range(256)]  # a token table where token i is byte i


def fed(fmt: CallFormat, pieces: Sequence[str], *, thinking: bool = False) -> list[ParseEvent]:
    """The events of `pieces` fed byte by byte, each piece's bytes in turn, then the end;
    `thinking`: the prompt opened a think block."""
    parser = TextOutputParser(BYTES, [], fmt, thinking=thinking)
    events = [e for piece in pieces for b in piece.encode() for e in parser.feed(b)]
    return events + parser.finish()


def folded(events: Sequence[ParseEvent]) -> dict[str, Any]:
    """The calls, answer, thinking and notices a generation's events hold."""
    done = [e for e in events if isinstance(e, MessageDone)]
    return {
        "calls": [
            (e.message.recipient, json.loads(e.message.text))
            for e in done
            if e.lane is Lane.TOOL_CALL
        ],
        "answer": "".join(e.message.text for e in done if e.lane is Lane.ANSWER),
        "thinking": "".join(e.message.text for e in done if e.lane is Lane.ANALYSIS),
        "issues": [e for e in events if isinstance(e, ParseIssue)],
    }


def read_back(fmt: CallFormat | str, *pieces: str, thinking: bool = False) -> dict[str, Any]:
    """`pieces` read through the format (or the registered format of that name), folded."""
    return folded(fed(FORMATS[fmt] if isinstance(fmt, str) else fmt, pieces, thinking=thinking))


def assert_one_bad_call(got: dict[str, Any], tool: str) -> None:
    """`got` (a `read_back`) called nothing and gave one `E-CALL-SCHEMA` notice, naming the
    call to `tool` (no tool: "call a tool")."""
    assert got["calls"] == []
    assert [i.code for i in got["issues"]] == [ErrorCode.CALL_SCHEMA]
    message = got["issues"][0].message
    assert f"call {tool}" in message if tool else "call a tool" in message
