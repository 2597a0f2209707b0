"""Write a `Transcript` as canonical OpenChatML 2.2 text.

Canonical form: the YAML header between `---` lines (`version` first, other keys in their
order); one frame per line group, attributes in the grammar's order
(`to`, `call_id`, `name`, `intent`, `content_type`) in the start header, then
`<|channel|>`, then `<|constrain|>`; a newline after each frame. Body text that spells a
control token is escaped by doubling its leading `<`; literal segments are written as
literal blocks. Guarantee: `read_transcript(write_transcript(t)) == t` (bodies compared as
text), and writing what was read gives canonical text back.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from app.errors import ErrorCode, TranscriptError
from app.harmony.ocm.model import OcmMessage, Segment, Transcript
from app.harmony.ocm.reader import MARKER

_END_LITERAL = "<|endliteral|>"
_UNSAFE_VALUE = re.compile(r"\s|<\||\|>")


def escape(text: str) -> str:
    """Body text with every control-token spelling protected by one more leading `<`."""
    return MARKER.sub(lambda m: "<" + m.group(0), text)


def _segments(body: tuple[Segment, ...]) -> str:
    """Body text; a trailing `<` before a marker we write goes into a literal block."""
    out: list[str] = []
    for segment in body:
        text = segment.text
        if segment.literal and _END_LITERAL not in text:
            out.append(f"<|literal|>{text}<|endliteral|>")
            continue
        stem = text.rstrip("<")
        out.append(escape(stem))
        if tail := text[len(stem) :]:
            out.append(f"<|literal|>{tail}<|endliteral|>")
    return "".join(out)


def _value(key: str, value: str) -> str:
    if not value or _UNSAFE_VALUE.search(value):
        raise TranscriptError(
            ErrorCode.PARSE_HEADER, f"{key}={value!r} cannot be written in a message header"
        )
    return f" {key}={value}"


def frame_text(message: OcmMessage) -> str:
    """One message as a canonical frame (without the trailing newline)."""
    if message.role == "tool" and message.legacy_role and message.name:
        head = message.name
        attrs = {"to": message.recipient, "call_id": message.call_id}
    else:
        head = message.role
        attrs = {"to": message.recipient, "call_id": message.call_id, "name": message.name}
    attrs.update(intent=message.intent, content_type=message.content_type)
    head += "".join(_value(k, v) for k, v in attrs.items() if v is not None)
    if message.channel is not None:
        head += f"<|channel|>{message.channel}"
    if message.constrain is not None:
        head += f"<|constrain|>{message.constrain}"
    end = "" if message.terminator is None else f"<|{message.terminator.value}|>"
    return f"<|start|>{head}<|message|>{_segments(message.body)}{end}"


class _HeaderDumper(yaml.SafeDumper):
    """Strings holding a YAML line break of their own (NEL, LS, PS) are double-quoted, where
    they are escaped; plain or single-quoted, a reader folds them into spaces."""


def _string(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = '"' if any(c in value for c in "\x85\u2028\u2029") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_HeaderDumper.add_representer(str, _string)


def header_text(header: dict[str, Any]) -> str:
    """The YAML front matter, `version` first."""
    version = str(header.get("version", "2.2"))
    rest = {k: v for k, v in header.items() if k != "version"}
    lines = f"version: {version}\n"
    if rest:
        lines += yaml.dump(
            rest, Dumper=_HeaderDumper, sort_keys=False, allow_unicode=True, width=100
        )
    return f"---\n{lines}---\n"


def write_transcript(transcript: Transcript) -> str:
    """The canonical text of `transcript`."""
    frames = []
    for index, message in enumerate(transcript.messages):
        if message.terminator is None and index != len(transcript.messages) - 1:
            raise TranscriptError(
                ErrorCode.STREAM_TRUNCATED, f"message {index} is cut off but is not the last one"
            )
        # A cut-off last frame gets no newline: it would become part of its body.
        frames.append(frame_text(message) + ("" if message.terminator is None else "\n"))
    return header_text(transcript.header) + "".join(frames)
