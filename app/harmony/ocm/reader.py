"""Read OpenChatML 2.2 text into a `Transcript`.

Guarantees: `read_transcript` returns a transcript or raises `TranscriptError` (a code and
the line, column and byte offset); any other exception is a bug. `check_transcript` lists
every problem it can find, recovering at the next `<|start|>` after a malformed frame.
Structural problems (the YAML header, frame syntax) are fatal; problems of content (a body
that fails its `<|constrain|>` type, call ids, missing channels, a cut-off last frame) are
kept on the transcript and lose no data. Unknown YAML keys are kept and never fatal.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import yaml

from app.errors import ErrorCode, TranscriptError
from app.harmony.ocm.model import (
    CHANNELS,
    CONTROL_TOKENS,
    INTENTS,
    ROLES,
    OcmMessage,
    Problem,
    Segment,
    Terminator,
    Transcript,
)
from app.harmony.ocm.validate import findings
from app.inputs import load_yaml

MARKER = re.compile(r"(<+)\|(" + "|".join(sorted(CONTROL_TOKENS, key=len, reverse=True)) + r")\|>")
_END_LITERAL = "<|endliteral|>"
_TERMINATORS = {"end": Terminator.END, "call": Terminator.CALL, "return": Terminator.RETURN}
_START_ATTRS = ("to", "call_id", "name", "intent", "content_type")
_CHANNEL_ATTRS = ("intent", "content_type", "to")
_LEGACY_ROLE = re.compile(r"^functions\.[A-Za-z0-9_.-]+$")


class _FrameError(Exception):
    """Internal: a fatal problem in the current frame (caught by the frame loop)."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


@dataclass
class _Token:
    name: str
    start: int
    end: int


@dataclass
class _Reader:
    text: str
    pos: int = 0
    problems: list[Problem] = field(default_factory=list)
    fatal: list[Problem] = field(default_factory=list)

    # --- positions and problems -----------------------------------------------------

    def problem(self, code: ErrorCode, message: str, at: int) -> Problem:
        line = self.text.count("\n", 0, at) + 1
        column = at - (self.text.rfind("\n", 0, at) + 1) + 1
        offset = len(self.text[:at].encode("utf-8"))
        return Problem(code, message, line, column, offset)

    def fail(self, message: str, at: int, code: ErrorCode = ErrorCode.PARSE_HEADER) -> _FrameError:
        return _FrameError(self.problem(code, message, at))

    def note(self, code: ErrorCode, message: str, at: int) -> None:
        self.problems.append(self.problem(code, message, at))

    # --- scanning -------------------------------------------------------------------

    def next_token(self, start: int) -> tuple[_Token | None, str]:
        """The next unescaped control token from `start`, and the unescaped text before it."""
        parts: list[str] = []
        at = start
        for match in MARKER.finditer(self.text, start):
            run = match.group(1)
            if len(run) == 1:
                parts.append(self.text[at : match.start()])
                return _Token(match.group(2), match.start(), match.end()), "".join(parts)
            parts.append(self.text[at : match.start()] + run[1:] + f"|{match.group(2)}|>")
            at = match.end()
        parts.append(self.text[at:])
        return None, "".join(parts)


def _split_header(reader: _Reader) -> dict[str, Any]:
    text = reader.text
    if not text.startswith("---"):
        raise reader.fail("a transcript must begin with a YAML header between '---' lines", 0)
    first_newline = text.find("\n")
    if first_newline < 0 or text[:first_newline].strip() != "---":
        raise reader.fail("the header must open with a line holding only '---'", 0)
    body_start = first_newline + 1
    close = re.compile(r"^---[ \t]*\r?$", re.MULTILINE).search(text, body_start)
    first_start = text.find("<|start|>", body_start)
    if close is not None and (
        first_start < 0
        or close.start() < first_start
        or _is_header(text[body_start : close.start()])  # a header value spells <|start|>
    ):
        yaml_text, reader.pos = text[body_start : close.start()], close.end()
    else:  # no closing '---': the header ends where the first frame begins
        end = first_start if first_start >= 0 else len(text)
        yaml_text, reader.pos = text[body_start:end], end
    return _parse_yaml(reader, yaml_text, body_start)


def _is_header(yaml_text: str) -> bool:
    try:
        data = load_yaml(yaml_text)
    except yaml.YAMLError:
        return False
    return isinstance(data, Mapping) and "version" in data


def _parse_yaml(reader: _Reader, yaml_text: str, at: int) -> dict[str, Any]:
    try:
        data = load_yaml(yaml_text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        offset = at
        if mark is not None:
            offset = at + mark.index
        raise reader.fail(f"the YAML header is not valid YAML: {exc}", offset) from exc
    if not isinstance(data, Mapping):
        raise reader.fail("the YAML header must be a mapping of keys to values", at)
    header = {str(k): v for k, v in data.items()}
    version = header.get("version")
    if version is None:
        raise reader.fail("the header has no 'version' (2.2, or 1.x for a legacy transcript)", at)
    header["version"] = str(version)
    if not re.fullmatch(r"(1\.\d+|2\.[0-2])(\.\d+)?", header["version"]):
        raise reader.fail(f"unsupported OpenChatML version {version!r}", at)
    _check_known_keys(reader, header, at)
    return header


def _check_known_keys(reader: _Reader, header: Mapping[str, Any], at: int) -> None:
    settings = header.get("generation_settings")
    if settings is not None and not isinstance(settings, Mapping):
        raise reader.fail("'generation_settings' must be a mapping", at)
    effort = (settings or {}).get("reasoning_effort")
    if effort is not None and effort not in ("low", "medium", "high"):
        raise reader.fail(f"reasoning_effort must be low, medium or high, not {effort!r}", at)
    profiles = header.get("profiles")
    if profiles is not None and not isinstance(profiles, Mapping):
        raise reader.fail("'profiles' must be a mapping", at)


def _attributes(
    reader: _Reader, words: list[str], allowed: tuple[str, ...], at: int, attrs: dict[str, str]
) -> list[str]:
    """Read `key=value` words into `attrs`; return the bare words."""
    bare = []
    for word in words:
        key, eq, value = word.partition("=")
        if not eq:
            bare.append(word)
            continue
        if key not in allowed:
            raise reader.fail(f"unknown header attribute {key!r}", at)
        if not value:
            raise reader.fail(f"header attribute {key!r} has no value", at)
        if attrs.get(key, value) != value:
            raise reader.fail(f"header attribute {key!r} is given twice", at)
        attrs[key] = value
    return bare


def _role(reader: _Reader, word: str, attrs: dict[str, str], at: int) -> tuple[str, bool]:
    if word in ROLES:
        if word == "tool" and "name" not in attrs:
            raise reader.fail("a tool message needs name= with the tool's name", at)
        return word, False
    if _LEGACY_ROLE.match(word):
        if attrs.setdefault("name", word) != word:
            raise reader.fail(f"role {word!r} and name={attrs['name']!r} disagree", at)
        return "tool", True
    raise reader.fail(f"unknown role {word!r}", at)


def _channel_value(reader: _Reader, token: _Token, parts: list[str], attrs: dict[str, str]) -> None:
    """Check a `<|channel|>` value's words: a known channel, then attributes (into `attrs`)
    and at most one bare content type."""
    if parts[0] not in CHANNELS:
        raise reader.fail(f"unknown channel {parts[0]!r}", token.end)
    bare = _attributes(reader, parts[1:], _CHANNEL_ATTRS, token.end, attrs)
    if len(bare) > 1 or (bare and "content_type" in attrs):
        raise reader.fail(f"unexpected words after the channel: {bare!r}", token.end)
    if bare:
        attrs["content_type"] = bare[0]


def _frame_header(reader: _Reader, start: _Token) -> tuple[dict[str, Any], _Token]:
    """Read from just after `<|start|>` to `<|message|>`."""
    token, head = reader.next_token(start.end)
    words = head.split()
    if not words:
        raise reader.fail("a message header needs a role", start.end)
    attrs: dict[str, str] = {}
    extra = _attributes(reader, words[1:], _START_ATTRS, start.end, attrs)
    if extra:
        raise reader.fail(f"unexpected words in a message header: {' '.join(extra)!r}", start.end)
    role, legacy = _role(reader, words[0], attrs, start.end)
    fields: dict[str, Any] = {"role": role, "legacy_role": legacy}
    while token is not None and token.name in ("channel", "constrain"):
        following, value = reader.next_token(token.end)
        parts = value.split()
        if not parts:
            raise reader.fail(f"<|{token.name}|> needs a value", token.end)
        key = "channel" if token.name == "channel" else "constrain"
        if key in fields:
            raise reader.fail(f"<|{token.name}|> is given twice", token.start)
        if key == "channel":
            _channel_value(reader, token, parts, attrs)
        elif len(parts) > 1:
            raise reader.fail("<|constrain|> takes one content type", token.end)
        fields[key] = parts[0]
        token = following
    if token is None or token.name != "message":
        where = token.start if token else len(reader.text)
        raise reader.fail("a message header must end with <|message|>", where)
    if attrs.get("intent") not in (None, *INTENTS):
        raise reader.fail(f"intent must be one of {', '.join(INTENTS)}", start.end)
    fields.update(
        recipient=attrs.get("to"),
        call_id=attrs.get("call_id"),
        name=attrs.get("name"),
        intent=attrs.get("intent"),
        content_type=attrs.get("content_type"),
    )
    return fields, token


def _frame_body(reader: _Reader, message: _Token) -> tuple[list[Segment], Terminator | None, int]:
    """Read the body after `<|message|>`; return segments, terminator and the end position."""
    segments: list[Segment] = []
    at = message.end
    while True:
        token, text = reader.next_token(at)
        if text:
            segments.append(Segment(text))
        if token is None:
            reader.note(
                ErrorCode.STREAM_TRUNCATED, "the last message has no <|end|>", message.start
            )
            return segments, None, len(reader.text)
        if token.name in _TERMINATORS:
            return segments, _TERMINATORS[token.name], token.end
        if token.name == "literal":
            close = reader.text.find(_END_LITERAL, token.end)
            if close < 0:
                raise reader.fail("<|literal|> has no <|endliteral|>", token.start)
            segments.append(Segment(reader.text[token.end : close], literal=True))
            at = close + len(_END_LITERAL)
            continue
        raise reader.fail(
            f"<|{token.name}|> inside a message body (a missing <|end|>, or write it as "
            f"<<|{token.name}|>)",
            token.start,
        )


def _read_frames(reader: _Reader, starts: list[int]) -> list[OcmMessage]:
    messages: list[OcmMessage] = []
    while True:
        token, text = reader.next_token(reader.pos)
        stray = text.strip()
        if stray:
            at = reader.pos + text.find(stray[0])
            reader.fatal.append(
                reader.problem(ErrorCode.PARSE_HEADER, "text outside a message", at)
            )
        if token is None:
            return messages
        if token.name != "start":
            reader.fatal.append(
                reader.problem(
                    ErrorCode.PARSE_HEADER, f"<|{token.name}|> outside a message", token.start
                )
            )
            reader.pos = token.end
            continue
        try:
            fields, message_token = _frame_header(reader, token)
            body, terminator, reader.pos = _frame_body(reader, message_token)
        except _FrameError as exc:
            reader.fatal.append(exc.problem)
            reader.pos = _resync(reader, token.end)
            continue
        messages.append(OcmMessage(body=tuple(body), terminator=terminator, **fields))
        starts.append(token.start)


def _resync(reader: _Reader, at: int) -> int:
    for match in MARKER.finditer(reader.text, at):
        if match.group(2) == "start" and len(match.group(1)) == 1:
            return match.start()
    return len(reader.text)


def _read(text: str) -> tuple[Transcript, list[Problem]]:
    reader = _Reader(text.removeprefix("\ufeff"))
    try:
        header = _split_header(reader)
    except _FrameError as exc:
        return Transcript(), [exc.problem]
    starts: list[int] = []
    messages = _read_frames(reader, starts)
    if header["version"].startswith("1."):
        messages = [m if m.channel else replace(m, channel="final") for m in messages]
    transcript = Transcript(header=header, messages=tuple(messages))
    problems = reader.problems + [
        reader.problem(code, text, starts[index]) for index, code, text in findings(transcript)
    ]
    return Transcript(header, tuple(messages), tuple(problems)), reader.fatal


def read_transcript(text: str) -> Transcript:
    """The transcript in `text`; a `TranscriptError` at the first fatal problem."""
    transcript, fatal = _read(text)
    if fatal:
        first = fatal[0]
        raise TranscriptError(first.code, first.message, first.line, first.column, first.offset)
    return transcript


def check_transcript(text: str) -> list[Problem]:
    """Every problem in `text`, fatal or not, in order of position."""
    transcript, fatal = _read(text)
    return sorted([*fatal, *transcript.problems], key=lambda p: p.offset)


def body_json(message: OcmMessage) -> Any:
    """The body parsed as JSON (a `ValueError` if it is not JSON)."""
    return json.loads(message.text)
