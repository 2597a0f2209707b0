"""The typed events of a generation turn, as immutable values.

The streaming parser emits them; the UI, debug pane, store and tests consume the same union.
Only plain values: they cross threads and processes unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from app.domain.messages import Message, Role
from app.domain.visibility import Lane
from app.errors import ErrorCode


class Severity(StrEnum):
    """How bad a parse issue is: recovered anomalies are warnings."""

    DEBUG = "debug"
    WARNING = "warning"
    ERROR = "error"


class StopReason(StrEnum):
    """Why a turn ended."""

    RETURN = "return"  # `<|return|>`: the final answer is complete
    CALL = "call"  # `<|call|>`: a tool call is ready
    END_OF_TEXT = "end_of_text"  # `<|endoftext|>`
    FOREIGN_ROLE = "foreign_role"  # the model began a message for a role it does not own
    TRUNCATED = "truncated"  # the stream ended without a stop token


@dataclass(frozen=True, slots=True)
class MessageStarted:
    index: int
    role: Role
    name: str | None
    channel: str | None
    recipient: str | None
    content_type: str | None
    lane: Lane


@dataclass(frozen=True, slots=True)
class ContentDelta:
    index: int
    text: str
    lane: Lane


@dataclass(frozen=True, slots=True)
class MessageDone:
    index: int
    message: Message
    lane: Lane
    complete: bool  # False when the stream was cut inside this message
    token_ids: tuple[int, ...]  # the exact generated ids of this message, terminator included


@dataclass(frozen=True, slots=True)
class ParseIssue:
    code: ErrorCode
    message: str
    severity: Severity = Severity.WARNING
    index: int | None = None


@dataclass(frozen=True, slots=True)
class TurnDone:
    stop: StopReason
    detail: str = ""


ParseEvent = MessageStarted | ContentDelta | MessageDone | ParseIssue | TurnDone
