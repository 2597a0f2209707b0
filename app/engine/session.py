"""What a turn driver may ask of any session — a model on this computer or a remote endpoint —
and what one generation returns.

Guarantees: a session says what it can do in `capabilities`, and callers ask that, never which
class it is. Both sessions stream the same event union (`ChatEvent`), return a `Generation`
from `generate` and `resume`, and record each user turn as a `TurnRecord`; a failure is a value
(`Generation.failed`), never an exception mid-stream.
"""

from __future__ import annotations

import threading
from collections.abc import Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from app.constrain.constraint import CallSpec, Constraint, ResponseFormat, ToolChoice
from app.domain.budget import Overflow
from app.domain.events import (
    ContextFit,
    GenerationDone,
    JsonChecked,
    JsonRetried,
    ParseEvent,
    PromptRendered,
    RequestSent,
    ResponseReceived,
    Timings,
    TokenScored,
    TurnFailed,
)
from app.domain.messages import Conversation, Message, ReasoningEffort

ChatEvent = (
    ParseEvent
    | GenerationDone
    | TurnFailed
    | JsonChecked
    | JsonRetried
    | PromptRendered
    | TokenScored
    | RequestSent
    | ResponseReceived
    | ContextFit
)


@dataclass(frozen=True)
class Capabilities:
    """What a session's backend can do; the facets a caller may rely on."""

    local_grammar: bool  # our grammar constrains its tokens (JSON mode's mask, tool arguments)
    continues_prefix: bool  # continues a cut answer from the token ids it had produced
    server_tool_choice: bool  # told the tools, the backend itself enforces `tool_choice`
    vocabulary: bool  # the model's own token table is at hand (exact counts, token scores)
    images: bool = False  # takes images in a message
    snapshots: bool = False  # keeps its KV state across restarts and chat switches
    sequences: int = 1  # generations it runs at once
    tools: bool = True  # the model can call tools (its family has a tool-call format)
    effort: bool = True  # a reasoning effort means something to the model


@dataclass
class Generation:
    """What one generation produced."""

    messages: list[Message]
    timings: Timings | None
    failed: str | None  # why the turn failed (the worker died, the prompt did not fit)
    finished: bool  # ended on a stop id or a completed grammar, not on a limit
    stop_id: int | None
    tokens: list[int] = field(default_factory=list)  # every generated id, a continued prefix too
    called: bool = False  # it handed over to tool calls (Harmony's `<|call|>`, a server's calls)


@dataclass(frozen=True)
class TurnRecord:
    """What one turn was asked with and how it went."""

    user_index: int
    reasoning_effort: ReasoningEffort | None
    timings: Timings | None
    failed: str | None = None


class Session(Protocol):
    """One conversation with one backend (see the module guarantees)."""

    conversation: Conversation
    turns: list[TurnRecord]
    max_tokens: int
    thinking_budget: int | None
    top_logprobs: int
    overflow: Overflow  # what a prompt that outgrows the context does (`app/engine/overflow.py`)
    conversation_id: str  # the history's id of the conversation: whose KV snapshots ("": none)

    @property
    def capabilities(self) -> Capabilities: ...

    def send(
        self,
        text: str | Message,
        *,
        reasoning_effort: ReasoningEffort | None = None,
        max_tokens: int | None = None,
        cancel: threading.Event | None = None,
        response_format: ResponseFormat | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> Iterator[ChatEvent]:
        """Send a user message and stream the reply's events."""
        ...

    def generate(
        self,
        conversation: Conversation,
        *,
        constraint: Constraint | None = None,
        max_tokens: int | None = None,
        cancel: threading.Event | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> Generator[ChatEvent, None, Generation]:
        """One generation for `conversation` (a local grammar, or the backend's tool choice)."""
        ...

    def resume(
        self,
        conversation: Conversation,
        prefix: Sequence[int],
        *,
        max_tokens: int | None = None,
        cancel: threading.Event | None = None,
        response_format: ResponseFormat | None = None,
    ) -> Generator[ChatEvent, None, Generation]:
        """Continue a cut answer from its ids `prefix` (a failure where it cannot)."""
        ...

    def with_effort(self, conversation: Conversation, effort: ReasoningEffort) -> Conversation:
        """`conversation` asking for `effort`, as this backend's format records it."""
        ...

    def tool_constraint(
        self,
        tools: Mapping[str, Mapping[str, Any] | None],
        calls: Sequence[CallSpec],
        tool_choice: ToolChoice,
    ) -> Constraint | None:
        """The grammar for a generation of a tool turn (None: unconstrained)."""
        ...

    def count(self, text: str) -> int:
        """How many tokens `text` is (estimated where the tokenizer is not ours)."""
        ...

    def room(self, text: str) -> int:
        """The tokens left for more of a user message `text` after the answer's reserve."""
        ...

    def token_table(self) -> Sequence[bytes]:
        """The model's token table (empty where `capabilities.vocabulary` is False)."""
        ...
