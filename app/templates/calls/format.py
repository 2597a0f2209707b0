"""A tool-call format: how one chat-template family declares tools, writes a call, hands a
result back, reads a call out of generated text and constrains one.

Guarantees: a format is pure text in, text out — the prompt side returns `Piece`s (markup,
tokenized with special-token parsing, apart from content, which never is: a tool's result
cannot forge a control token); `read` takes text that starts at one of the format's
`triggers` and returns the calls it holds and how much text they took, `None` while more text
may still complete them, raises `NotACall` for text that is the answer's after all, or raises
`CallSyntaxError` (with the tool's name when it could be
read) for markup that can never become a valid call; `grammar_call` is the Lark text of one
call after its trigger, its name and arguments held to the declared tools.

A call's name in the prompt is the tool's name: a `functions` tool's bare name, any other
namespace's qualified name (`browser.search`, `python`); `recipient_of` maps it back.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from app.domain.messages import (
    Conversation,
    DeveloperContent,
    Message,
    Role,
    SystemContent,
    ToolDescription,
)
from app.errors import ErrorCode, HarmonyDeskError

CODE_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"code": {"type": "string", "description": "The code to run."}},
    "required": ["code"],
}


@dataclass(frozen=True)
class ToolCall:
    """One call as the model wrote it: the tool's name and its arguments as JSON text."""

    name: str
    arguments: str


@dataclass(frozen=True)
class Piece:
    """Prompt text: `markup` is tokenized with special-token parsing, content never."""

    text: str
    markup: bool = False


class CallSyntaxError(HarmonyDeskError):
    """Call markup that can never become a valid call; `name` when it could be read."""

    code = ErrorCode.CALL_SCHEMA

    def __init__(
        self,
        message: str,
        name: str = "",
        length: int | None = None,
        calls: tuple[ToolCall, ...] = (),
    ) -> None:
        super().__init__(message)
        self.name = name
        self.length = length  # how much text the bad markup took (None: all there is)
        self.calls = calls  # whole calls written before the bad part (they stand)


class NotACall(HarmonyDeskError):
    """Text at a trigger that turned out to be answer text: its first `length` characters
    are (a format whose trigger may also begin an answer's own markup, a Markdown fence). A
    signal between a format's reader and the scanner, never shown: the text is the answer's."""

    code = ErrorCode.CALL_SCHEMA

    def __init__(self, length: int) -> None:
        super().__init__("the text is the answer's, not a call")
        self.length = length


def name_of(recipient: str) -> str:
    """The name a text model calls the tool at `recipient` by."""
    return recipient.removeprefix("functions.")


def recipient_of(name: str) -> str:
    """The recipient of a call to `name` (the inverse of `name_of`)."""
    return name if "." in name or name == "python" else f"functions.{name}"


def declared_tools(conversation: Conversation) -> list[ToolDescription]:
    """Every tool the conversation declares (system and developer namespaces), each under the
    name a text model calls it by; a code tool takes `{"code": …}`."""
    found: list[ToolDescription] = []
    for m in conversation.messages:
        for c in m.content:
            if not isinstance(c, SystemContent | DeveloperContent) or not c.tools:
                continue
            for ns in c.tools.values():
                if not ns.tools:  # the namespace is the tool (`python`): code in, text out
                    found.append(
                        ToolDescription(
                            name=ns.name,
                            description=ns.description or "",
                            parameters=CODE_PARAMETERS,
                        )
                    )
                for t in ns.tools:
                    name = t.name if ns.name == "functions" else f"{ns.name}.{t.name}"
                    params = t.parameters or {"type": "object", "properties": {}}
                    found.append(
                        ToolDescription(name=name, description=t.description, parameters=params)
                    )
    return found


def declared_names(conversation: Conversation) -> frozenset[str]:
    """The names a text model calls the conversation's tools by (see `declared_tools`)."""
    return frozenset(t.name for t in declared_tools(conversation))


def openai_tools(tools: Sequence[ToolDescription]) -> list[dict[str, Any]]:
    """The tools as OpenAI-shaped declarations (what most chat templates are given)."""
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters or {"type": "object", "properties": {}},
            },
        }
        for t in tools
    ]


def calls_in(message: Message) -> ToolCall | None:
    """The call an assistant message makes, None when it makes none."""
    if message.author.role is not Role.ASSISTANT or not message.recipient:
        return None
    if message.recipient in ("all", "assistant", "user"):
        return None
    return ToolCall(name_of(message.recipient), message.text)


def arguments_of(call: ToolCall) -> Any:
    """The call's arguments as a value (its text when that is not JSON)."""
    try:
        return json.loads(call.arguments)
    except ValueError:
        return call.arguments


class CallFormat(ABC):
    """One family's tool-call markup (see the module guarantees)."""

    name: ClassVar[str]
    triggers: ClassVar[tuple[str, ...]]  # where a call begins in generated text
    result_role: ClassVar[str] = "tool"  # the turn a result is written in
    results_together: ClassVar[bool] = False  # results in a row share one turn

    @abstractmethod
    def declare(self, tools: Sequence[ToolDescription]) -> str:
        """The system-prompt text that declares `tools`."""

    @abstractmethod
    def write(self, calls: Sequence[ToolCall]) -> list[Piece]:
        """An assistant turn's text for `calls`."""

    @abstractmethod
    def result(self, name: str, text: str) -> list[Piece]:
        """How a tool's result goes back (inside a `result_role` turn)."""

    @abstractmethod
    def read(self, text: str, final: bool) -> tuple[list[ToolCall], int] | None:
        """The calls at the start of `text` (which begins at a trigger) and the length they
        took; None while more text may complete them (`final`: no more comes)."""

    @abstractmethod
    def grammar_rest(self, tools: Mapping[str, Mapping[str, Any] | None]) -> str:
        """Lark rules defining `call_rest`: one call after its trigger (`triggers[0]`), its
        name one of `tools` and its arguments held to that tool's schema (None: any object).
        A marker is a literal of its own, so a grammar may write it as a control token."""

    separator: ClassVar[str] = "\n"  # between two calls in a row
    think: ClassVar[tuple[str, str]] = ("<think>", "</think>")  # a think block's open and close
    # characters without which new text cannot complete a held call ("": any text may): the
    # scanner reads a held call again only when they come (or at the end)
    closers: ClassVar[str] = ""
    # markup the generation prompt ends with, which the answer continues (Functionary's `>>>`):
    # the scanner reads an answer as if it began with it, and a grammar writes the first call
    # without it (as `call_first`, which `grammar_rest` then defines beside `call_rest`, with
    # `answer_first`: how the answer begins when it begins with no call)
    opening: ClassVar[str] = ""
    # triggers that begin a call only at the start of the answer (past blank space) or right
    # after another call; anywhere else they are answer text (Llama 3's bare `{"name"`)
    leading: ClassVar[tuple[str, ...]] = ()
    # markup that ends the model's turn after its calls (a stop token where it is one token:
    # Gemma 4's `<|tool_response>`)
    ends: ClassVar[tuple[str, ...]] = ()

    def markers(self) -> tuple[str, ...]:
        """Markup that may be one control token in a model's vocabulary."""
        return self.triggers

    def knowing(self, tools: Collection[str]) -> CallFormat:
        """This format for a generation whose conversation declares `tools` (by the names the
        model calls them): a format that reads calls it could not tell from an answer's own
        text without them (Hermes' fenced JSON) reads them; most are themselves."""
        return self
