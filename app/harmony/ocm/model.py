"""The OpenChatML 2.2 transcript model: a YAML header and a list of framed messages.

Guarantees: values are immutable; a message's body keeps how it was written (plain text and
literal-block segments), so writing a read transcript gives back its text; the header keeps
unknown keys (they are ignored, never fatal, and never lost).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from app.errors import ErrorCode

CONTROL_TOKENS = (
    "start",
    "channel",
    "message",
    "call",
    "constrain",
    "return",
    "end",
    "literal",
    "endliteral",
)
ROLES = ("system", "developer", "user", "assistant", "tool")
CHANNELS = ("analysis", "commentary", "final")
INTENTS = ("preamble", "status", "debug")


class Terminator(StrEnum):
    """How a frame ends."""

    END = "end"
    CALL = "call"  # an outgoing tool call
    RETURN = "return"  # the final answer of a turn


@dataclass(frozen=True)
class Segment:
    """A run of body text; `literal` when it was written inside `<|literal|>...<|endliteral|>`."""

    text: str
    literal: bool = False


@dataclass(frozen=True)
class OcmMessage:
    """One frame. `role` is canonical (`tool` for tool replies, with the tool in `name`)."""

    role: str
    body: tuple[Segment, ...] = ()
    channel: str | None = None
    recipient: str | None = None  # to=
    call_id: str | None = None
    name: str | None = None
    intent: str | None = None
    content_type: str | None = None  # the content_type= attribute
    constrain: str | None = None  # the <|constrain|> type
    terminator: Terminator | None = Terminator.END  # None: the stream was cut inside this frame
    legacy_role: bool = False  # written as `functions.x` rather than `tool name=functions.x`

    @property
    def text(self) -> str:
        """The body as plain text (literal blocks unwrapped)."""
        return "".join(s.text for s in self.body)

    @property
    def is_call(self) -> bool:
        return self.terminator is Terminator.CALL


@dataclass(frozen=True)
class Problem:
    """Something wrong in a transcript, with where it is (1-based line and column)."""

    code: ErrorCode
    message: str
    line: int = 0
    column: int = 0
    offset: int = 0

    def __str__(self) -> str:
        return f"{self.code.value} {self.line}:{self.column} {self.message}"


@dataclass(frozen=True)
class Transcript:
    """A header (the YAML mapping, key order kept) and the messages."""

    header: dict[str, Any] = field(default_factory=lambda: {"version": "2.2"})
    messages: tuple[OcmMessage, ...] = ()
    problems: tuple[Problem, ...] = ()  # non-fatal problems found while reading

    @property
    def version(self) -> str:
        return str(self.header.get("version", ""))

    @property
    def legacy(self) -> bool:
        """A 1.x transcript: messages without a channel read as `final`."""
        return self.version.startswith("1.")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Transcript):
            return NotImplemented
        return self.header == other.header and self.messages == other.messages

    __hash__ = None  # type: ignore[assignment]
