"""What every chat template provides, and the tokenizer it writes with.

A template turns a conversation into prompt token ids, names its stop ids, and makes the
parser for the model's output. Template markers are tokenized with special-token parsing;
message text never is (the prompt-injection guard).

A template also answers every question that depends on the model family, so that no session,
turn or frontend asks which template it holds: the messages a conversation starts with
(`first_messages`), how a reasoning effort and a response format are written into the
conversation (`with_effort`, `announce_format`), which grammar constrains a turn (`grammar`),
which tool-call syntax it speaks (`tool_calls`, None: none; `call_format` the text format of a
plain-text family), whether its answers may open with free `<think>` text (`thinks`), and the
reasoning block its grammars let a turn begin with (`think_block`: its markup, and whether the
generation prompt opens it).
Whether a generation made a call is read from its parser's events, never from a stop token.
The defaults are those of a plain-text chat template; a family overrides what it does
differently.
"""

from __future__ import annotations

import datetime as dt
from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar, Protocol

from pydantic import BaseModel, ConfigDict, Field

from app.constrain.constraint import (
    CallSpec,
    Constraint,
    ResponseFormat,
    ToolChoice,
    json_constraint,
)
from app.domain.events import ParseEvent
from app.domain.messages import Conversation, Message, ReasoningEffort
from app.domain.sampling import Sampling
from app.templates.calls.format import CODE_PARAMETERS, CallFormat, name_of
from app.templates.calls.formats import call_format
from app.templates.calls.grammar import ThinkBlock, call_grammar


def _controls_within(
    tokenizer: Tokenizer, ids: Sequence[int], table: Sequence[bytes]
) -> dict[str, int]:
    """The control tokens (b"" in `table`) among `ids` of a marker several tokens long, by
    their spelling."""
    if len(ids) < 2:
        return {}
    found = [i for i in ids if 0 <= i < len(table) and table[i] == b""]
    spelled = tokenizer.special_bytes(found)
    return {b.decode("utf-8", "replace"): i for i, b in zip(found, spelled, strict=True) if b}


class Capability(StrEnum):
    CHAT = "chat"
    COMPLETION = "completion"  # a base model: the prompt goes in undecorated


class TemplateDefaults(BaseModel):
    """A template's defaults; the user may override them per model."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    session_len: int = Field(4096, ge=16, description="Context length in tokens.")
    temperature: float = Field(0.8, ge=0.0, le=2.0)
    top_p: float = Field(0.95, gt=0.0, le=1.0)
    top_k: int = Field(40, ge=0)
    repetition_penalty: float = Field(1.0, ge=0.5, le=2.0)
    stop_words: tuple[str, ...] = ()
    capability: Capability = Capability.CHAT

    def sampling(self, seed: int | None = None) -> Sampling:
        return Sampling(
            temperature=self.temperature,
            top_p=self.top_p,
            top_k=self.top_k,
            repeat_penalty=self.repetition_penalty,
            seed=seed,
        )


class Tokenizer(Protocol):
    """The loaded model's tokenizer."""

    @property
    def n_vocab(self) -> int: ...

    @property
    def eos_id(self) -> int:
        """The end-of-generation id the model declares (-1 when none)."""
        ...

    @property
    def bos_ids(self) -> list[int]:
        """What a prompt starts with ([] when the model adds no BOS)."""
        ...

    def tokenize(self, text: str, *, special: bool) -> list[int]: ...

    def token_table(self) -> Sequence[bytes]:
        """The bytes of every id, control tokens as b""."""
        ...

    def special_bytes(self, ids: Sequence[int]) -> list[bytes]:
        """The bytes of `ids`, control tokens spelled out."""
        ...


class OutputParser(Protocol):
    """Turns generated ids into the same typed events the Harmony parser emits."""

    messages: list[Message]  # the messages completed so far

    def feed(self, token: int) -> list[ParseEvent]: ...

    def finish(self, reason: str = "") -> list[ParseEvent]: ...


@dataclass(frozen=True)
class GrammarRequest:
    """What a turn asks its grammar to allow: a JSON answer (`schema`), calls to `tools`
    (`{name: parameters}`, the `functions`) and to the other tools in `calls`, under a
    `tool_choice`; reasoning capped at `thinking_budget` tokens a message; free strings
    budgeted from `max_tokens`."""

    schema: Mapping[str, Any] | None = None
    tools: Mapping[str, Mapping[str, Any] | None] = field(default_factory=dict)
    calls: tuple[CallSpec, ...] = ()
    tool_choice: ToolChoice = "auto"
    thinking_budget: int | None = None
    max_tokens: int | None = None
    control: Mapping[str, int] = field(default_factory=dict)  # call markers that are one token


class Template(ABC):
    """A model family's prompt format."""

    name: ClassVar[str]
    defaults: ClassVar[TemplateDefaults] = TemplateDefaults()
    tool_calls: ClassVar[str | None] = None  # the tool-call syntax it speaks; None: no calls
    thinks: ClassVar[bool] = False  # an answer may open with free `<think>…</think>` text
    opens_think: ClassVar[bool] = False  # its generation prompt opens the think block
    takes_effort: ClassVar[bool] = False  # a reasoning effort changes what it writes

    @abstractmethod
    def prompt_ids(
        self,
        conversation: Conversation,
        tokenizer: Tokenizer,
        *,
        reasoning_effort: ReasoningEffort | None = None,
    ) -> list[int]:
        """The prompt for the model's next message."""

    @abstractmethod
    def stop_ids(self, tokenizer: Tokenizer) -> list[int]:
        """Ids that end a generation."""

    @abstractmethod
    def output_parser(self, tokenizer: Tokenizer, tools: Collection[str] = ()) -> OutputParser:
        """A fresh parser for one generation."""

    def check_model(self, tokenizer: Tokenizer) -> None:  # noqa: B027 - optional hook
        """Raise `ModelLoadError` when the loaded model cannot use this template."""

    def for_model(self, metadata: dict[str, Any]) -> Template:
        """This template set up for a model (from its GGUF metadata); most need nothing."""
        return self

    # --- family hooks (see the module docstring) ---------------------------------------

    def first_messages(self, today: dt.date) -> tuple[Message, ...]:
        """The messages a new conversation starts with."""
        return ()

    def with_effort(self, conversation: Conversation, effort: ReasoningEffort) -> Conversation:
        """`conversation` asking for `effort` where the format records it; else unchanged."""
        return conversation

    def announce_format(
        self, conversation: Conversation, response_format: ResponseFormat
    ) -> Conversation:
        """`conversation` telling the model of `response_format` where the format has a place
        for it; else unchanged (the grammar alone holds the answer to it)."""
        return conversation

    def grammar(self, request: GrammarRequest) -> Constraint | None:
        """The constraint for a turn, None when nothing is constrained. A plain-text template
        with a call format holds calls to the offered tools (`call_grammar`); else it
        constrains a JSON answer only (its whole text, after a `<think>` block if it thinks)."""
        fmt = self.call_format()
        offered = dict(request.tools)
        for c in request.calls:
            offered[name_of(c.recipient)] = CODE_PARAMETERS if c.code else c.schema
        if fmt is not None and offered:
            return call_grammar(
                fmt,
                offered,
                request.tool_choice,
                think=self.think_block(),
                control=request.control,
                thinking_budget=request.thinking_budget,
            )
        if request.schema is None:
            return None
        return json_constraint(
            request.schema, prefix_free_text=self.thinks, max_tokens=request.max_tokens
        )

    def call_format(self) -> CallFormat | None:
        """The family's text tool-call format (None: no calls, or a format of its own)."""
        return call_format(self.tool_calls)

    def think_block(self) -> ThinkBlock | None:
        """The reasoning block a turn may begin with (None: the family does not reason): the
        call format's think tags, opened by the prompt when `opens_think`."""
        fmt = self.call_format()
        if fmt is None or not (self.thinks or self.opens_think):
            return None
        return ThinkBlock(fmt.think, self.opens_think)

    def control_markers(self, tokenizer: Tokenizer) -> dict[str, int]:
        """The call format's markers (and the reasoning block's tags) that are one special
        token in this model's vocabulary: a control token, or a token of its own spelled
        `<…>` (llguidance takes both as special: a grammar must write them as tokens); and the
        control tokens within a tag that is several tokens (Kimi-K3's `<|open|>think<|sep|>`),
        each by its spelling."""
        fmt = self.call_format()
        if fmt is None:
            return {}
        known: tuple[Tokenizer, dict[str, int]] | None = getattr(self, "_control", None)
        if known is not None and known[0] is tokenizer:
            return dict(known[1])  # read once per model: every generation asks
        table = tokenizer.token_table()
        block = self.think_block()
        tags = block.tags if block is not None else ()
        found = {m: tokenizer.tokenize(m, special=True) for m in (*fmt.markers(), *tags)}
        control = {
            m: ids[0]
            for m, ids in found.items()
            if len(ids) == 1
            and 0 <= ids[0] < len(table)
            and (table[ids[0]] == b"" or (m.startswith("<") and m.endswith(">")))
        }
        for tag in tags:
            control.update(_controls_within(tokenizer, found[tag], table))
        self._control = (tokenizer, control)
        return dict(control)

    def layout(self) -> dict[str, Any] | None:
        """The markers a template file wrote it with (`templates show`); None: built in code."""
        return None
