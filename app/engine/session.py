"""What a turn driver may ask of any session — a model on this computer or a remote endpoint —
and what one generation returns.

Guarantees: a session says what it can do in `capabilities`, and callers ask that, never which
class it is. Both sessions stream the same event union (`ChatEvent`), return a `Generation`
from `generate` and `resume`, and record each user turn as a `TurnRecord`; a failure is a value
(`Generation.failed`), never an exception mid-stream.
"""

from __future__ import annotations

import threading
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

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
from app.domain.progress import ImageEncoding, PromptRead
from app.engine.request import GenerationRequest

if TYPE_CHECKING:
    from app.engine.protocol import ModelInfo
    from app.templates.base import Template

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
    | PromptRead
    | ImageEncoding
)


@dataclass(frozen=True)
class Capabilities:
    """What a session's backend can do; the facets a caller may rely on."""

    continues_prefix: bool  # continues a cut answer from the token ids it had produced
    vocabulary: bool  # the model's own token table is at hand (exact counts, token scores)
    images: bool = False  # takes images in a message (a remote endpoint's server decides)
    tools: bool = True  # the model can call tools (its family has a tool-call format)
    effort: bool = True  # a reasoning effort means something to the model
    keeps_prompt: bool = False  # a prompt read now is kept for the next turn (a local cache)


REMOTE = Capabilities(continues_prefix=False, vocabulary=False, images=True)  # its server decides


def local_capabilities(template: Template, info: ModelInfo | None) -> Capabilities:
    """What a model this app runs can do: its template says whether it calls tools and takes
    an effort; a projector loaded with it, whether it sees images. The one place this is said
    (the session, and the window before a session exists, read it)."""
    return Capabilities(
        continues_prefix=True,
        vocabulary=True,
        tools=template.tool_calls is not None,
        effort=template.takes_effort,
        images=info is not None and bool(info.projector),
        keeps_prompt=True,
    )


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
    conversation: Conversation | None = None  # what was asked, effort and JSON mode recorded


@dataclass(frozen=True)
class TurnRecord:
    """What one turn was asked with and how it went."""

    user_index: int
    reasoning_effort: ReasoningEffort | None
    timings: Timings | None
    failed: str | None = None


class Session(Protocol):
    """One conversation with one backend (see the module guarantees)."""

    conversation: Conversation  # what the last turn left (the driver keeps it; read-only outside)
    turns: list[TurnRecord]

    @property
    def capabilities(self) -> Capabilities: ...

    @property
    def name(self) -> str:
        """The model, as the user knows it: its GGUF file's name, or the endpoint's model."""
        ...

    @property
    def n_ctx(self) -> int:
        """The context, in tokens (a remote endpoint's as the app knows it)."""
        ...

    @property
    def max_tokens(self) -> int:
        """The answer's budget when a request names none."""
        ...

    def prompt_size(self, conversation: Conversation) -> int:
        """The tokens of `conversation`'s prompt (estimated where the tokenizer is not ours)."""
        ...

    def generate(
        self,
        conversation: Conversation,
        request: GenerationRequest,
        cancel: threading.Event | None = None,
    ) -> Generator[ChatEvent, None, Generation]:
        """One generation for `conversation` as `request` asks: the effort and JSON mode
        recorded on it, fitted to the context under `request.overflow` (`ContextFit` first),
        constrained by the one grammar the request makes, and its JSON checked after."""
        ...

    def count(self, text: str) -> int:
        """How many tokens `text` is (estimated where the tokenizer is not ours)."""
        ...

    def room(self, text: str, conversation: Conversation | None = None) -> int:
        """The tokens left for more of a user message `text` after `conversation` (None: the
        session's own) and the answer's reserve."""
        ...

    def token_table(self) -> Sequence[bytes]:
        """The model's token table (empty where `capabilities.vocabulary` is False)."""
        ...


class ModelSession(Session, Protocol):
    """A session on a model this app runs itself: besides turns, a raw prompt continued (the
    completions API) and a conversation's exact prompt size (Anthropic's token count)."""

    def complete(
        self, prompt: str, request: GenerationRequest, cancel: threading.Event | None = None
    ) -> Iterator[str | GenerationDone | TurnFailed]:
        """`prompt` continued as text, then how it ended (`ContextError`: it does not fit)."""
        ...
