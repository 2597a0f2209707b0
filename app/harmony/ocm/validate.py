"""Content checks of a read transcript: the problems that lose no data.

Each check yields (message index, code, text); the reader turns them into positioned
problems. None of them stops a transcript from being read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from app.errors import ErrorCode
from app.harmony.ocm.model import OcmMessage, Terminator, Transcript

Finding = tuple[int, ErrorCode, str]


def _required_channels(header: Mapping[str, Any]) -> bool:
    profiles = header.get("profiles")
    harmony = profiles.get("harmony") if isinstance(profiles, Mapping) else None
    if not isinstance(harmony, Mapping) or harmony.get("enabled") is False:
        return False
    return bool(harmony.get("require_channels"))


def _body_findings(index: int, message: OcmMessage) -> Iterator[Finding]:
    if message.constrain and message.constrain.lower() == "json":
        try:
            json.loads(message.text)
        except ValueError as exc:
            yield (
                index,
                ErrorCode.BODY_CONSTRAINT_VIOLATION,
                f"the body is not the JSON its <|constrain|>json promises: {exc}",
            )
    if message.is_call:
        try:
            body = json.loads(message.text)
        except ValueError:
            return
        deadline = body.get("deadline_ms") if isinstance(body, dict) else None
        if deadline is not None and not (isinstance(deadline, int) and deadline > 0):
            yield index, ErrorCode.CALL_SCHEMA, "deadline_ms must be a positive whole number"


def _call_findings(transcript: Transcript) -> Iterator[Finding]:
    calls: dict[str, str] = {}
    for index, message in enumerate(transcript.messages):
        if message.is_call:
            if message.role != "assistant":
                yield (
                    index,
                    ErrorCode.PARSE_HEADER,
                    "only the assistant ends a message with <|call|>",
                )
            if not message.recipient:
                yield index, ErrorCode.CALL_SCHEMA, "a tool call needs to= naming the tool"
            if not message.call_id:
                yield index, ErrorCode.CALL_SCHEMA, "a tool call needs a call_id"
            elif message.call_id in calls:
                yield index, ErrorCode.CALL_SCHEMA, f"call_id {message.call_id!r} is used twice"
            else:
                calls[message.call_id] = message.recipient or ""
        elif message.role == "tool" and message.call_id is not None:
            if message.call_id not in calls:
                yield (
                    index,
                    ErrorCode.CALL_SCHEMA,
                    f"the reply's call_id {message.call_id!r} matches no earlier call",
                )
            elif calls[message.call_id] != message.name:
                yield (
                    index,
                    ErrorCode.CALL_SCHEMA,
                    f"call {message.call_id!r} went to {calls[message.call_id]!r},"
                    f" not {message.name!r}",
                )


def findings(transcript: Transcript) -> list[Finding]:
    """Every content problem, by message index."""
    out: list[Finding] = []
    channels = _required_channels(transcript.header) and not transcript.legacy
    for index, message in enumerate(transcript.messages):
        if channels and message.role == "assistant" and message.channel is None:
            out.append(
                (index, ErrorCode.PARSE_CHANNEL_MISSING, "the harmony profile requires a channel")
            )
        if message.terminator is Terminator.RETURN and (message.role, message.channel) != (
            "assistant",
            "final",
        ):
            out.append(
                (index, ErrorCode.PARSE_HEADER, "<|return|> ends only an assistant's final answer")
            )
        out.extend(_body_findings(index, message))
    out.extend(_call_findings(transcript))
    return sorted(out, key=lambda f: f[0])
