"""The JSON projection of a transcript, both directions.

Shape: `{"header": {...YAML header...}, "messages": [...]}`, one object per frame with
`role`, `channel`, and the body in exactly one of `content`, `thinking` (analysis) or
`tool_call` (`id`, `recipient`, `content_type`, `arguments`: a frame ended by `<|call|>`);
optional `name`, `call_id`, `recipient`, `intent`, `content_type`, `constrain`,
`legacy_role`, `end` (`"return"`), `truncated`, and `segments` when the body used literal
blocks. Guarantee: the JSON never holds a state the text cannot: `from_json` checks every
message by the same rules as the text reader, and `from_json(to_json(t)) == t`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.errors import ErrorCode, TranscriptError
from app.harmony.ocm.model import OcmMessage, Segment, Terminator, Transcript
from app.harmony.ocm.reader import read_transcript
from app.harmony.ocm.writer import write_transcript

_OPTIONAL = ("name", "call_id", "recipient", "intent", "content_type", "constrain")


def message_to_json(message: OcmMessage) -> dict[str, Any]:
    """One frame as a JSON object."""
    out: dict[str, Any] = {"role": message.role}
    if message.channel is not None:
        out["channel"] = message.channel
    if message.is_call:
        out["tool_call"] = {
            "id": message.call_id,
            "recipient": message.recipient,
            "content_type": message.constrain,
            "arguments": message.text,
        }
    elif message.channel == "analysis":
        out["thinking"] = message.text
    else:
        out["content"] = message.text
    for key in _OPTIONAL:
        value = getattr(message, key)
        if value is not None and not (
            message.is_call and key in ("call_id", "recipient", "constrain")
        ):
            out[key] = value
    if message.legacy_role:
        out["legacy_role"] = True
    if message.terminator is Terminator.RETURN:
        out["end"] = "return"
    if message.terminator is None:
        out["truncated"] = True
    if any(s.literal for s in message.body):
        out["segments"] = [{"text": s.text, "literal": s.literal} for s in message.body]
    return out


def to_json(transcript: Transcript) -> dict[str, Any]:
    """The JSON projection of `transcript`."""
    return {
        "header": dict(transcript.header),
        "messages": [message_to_json(m) for m in transcript.messages],
    }


def _text(raw: Mapping[str, Any], key: str, index: int) -> str | None:
    value = raw.get(key)
    if value is not None and not isinstance(value, str):
        raise TranscriptError(ErrorCode.PARSE_HEADER, f"message {index}: {key!r} must be a string")
    return value


def _body(raw: Mapping[str, Any], text: str, index: int) -> tuple[Segment, ...]:
    segments = raw.get("segments")
    if segments is None:
        return (Segment(text),) if text else ()
    if not isinstance(segments, list) or not all(
        isinstance(s, Mapping) and isinstance(s.get("text"), str) for s in segments
    ):
        raise TranscriptError(ErrorCode.PARSE_HEADER, f"message {index}: bad 'segments'")
    body = tuple(Segment(s["text"], bool(s.get("literal"))) for s in segments)
    if "".join(s.text for s in body) != text:
        raise TranscriptError(
            ErrorCode.PARSE_HEADER, f"message {index}: 'segments' disagree with the text"
        )
    return body


def message_from_json(raw: object, index: int) -> OcmMessage:
    """One frame from its JSON object."""
    if not isinstance(raw, Mapping) or not isinstance(raw.get("role"), str):
        raise TranscriptError(ErrorCode.PARSE_HEADER, f"message {index}: an object with a 'role'")
    fields: dict[str, Any] = {key: _text(raw, key, index) for key in _OPTIONAL}
    call = raw.get("tool_call")
    terminator: Terminator | None = Terminator.END
    if call is not None:
        if not isinstance(call, Mapping):
            raise TranscriptError(
                ErrorCode.PARSE_HEADER, f"message {index}: 'tool_call' must be an object"
            )
        fields.update(
            call_id=_text(call, "id", index),
            recipient=_text(call, "recipient", index),
            constrain=_text(call, "content_type", index),
        )
        text = _text(call, "arguments", index) or ""
        terminator = Terminator.CALL
    else:
        text = _text(raw, "thinking", index) or _text(raw, "content", index) or ""
    if raw.get("end") == "return":
        terminator = Terminator.RETURN
    if raw.get("truncated") is True:
        terminator = None
    return OcmMessage(
        role=raw["role"],
        channel=_text(raw, "channel", index),
        body=_body(raw, text, index),
        terminator=terminator,
        legacy_role=raw.get("legacy_role") is True,
        **fields,
    )


def from_json(data: object) -> Transcript:
    """A transcript from its JSON projection, checked as the text reader checks text."""
    if not isinstance(data, Mapping) or not isinstance(data.get("messages"), list):
        raise TranscriptError(
            ErrorCode.PARSE_HEADER, "expected an object with 'header' and 'messages'"
        )
    header = data.get("header", {"version": "2.2"})
    if not isinstance(header, Mapping):
        raise TranscriptError(ErrorCode.PARSE_HEADER, "'header' must be an object")
    messages = tuple(message_from_json(m, i) for i, m in enumerate(data["messages"]))
    transcript = Transcript(header=dict(header), messages=messages)
    checked = read_transcript(write_transcript(transcript))
    return Transcript(dict(header), messages, checked.problems)
