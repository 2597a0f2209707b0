"""A conversation as any API's messages build it: the one way a client's history becomes the
app's `Conversation`, whichever API it came by.

Guarantees: the same conversation for every template and every API — system and developer text
(instructions) given before any other message is gathered, in order, into the developer message,
which comes first and holds the declared tools as its `functions`; instructions given later stay
where the client put them, each a developer message of its own (a template with no place for
them gathers them: `app/domain/instructions.py`); an assistant's tool calls become call messages
to `functions.NAME` (their arguments' JSON, `<|constrain|>json`), and its reasoning is kept only
before tool calls, so analysis after a final answer is never rendered (a template that shows no
reasoning leaves it out); a tool result is named by the call it answers (by the call's id; else
the name given, else `tool`); a user's text and images stay in their order, text side by side
joined, empty text left out (text alone is one text message, even empty). Nothing here reads a
wire format: each API hands in values it has already checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from app.domain.messages import (
    Author,
    Conversation,
    DeveloperContent,
    ImageContent,
    Message,
    Role,
    TextContent,
    ToolDescription,
)

CALL_TYPE = "<|constrain|>json"


class Call(NamedTuple):
    """A tool call a client sends back: its id, the function's name, the arguments' JSON."""

    id: str
    name: str
    arguments: str


class Transcript:
    """A conversation being built, message by message (see the module guarantees)."""

    def __init__(self) -> None:
        self.instructions: list[str] = []
        self.messages: list[Message] = []
        self.names: dict[str, str] = {}  # a call's id → its function's name

    def instruct(self, text: str) -> None:
        """System or developer text (empty text adds nothing): before any other message it
        joins the opening instructions, after one it stays where the client put it."""
        if text and self.messages:
            self.messages.append(Message.of(Role.DEVELOPER, text))
        elif text:
            self.instructions.append(text)

    def user(self, parts: Sequence[str | ImageContent]) -> None:
        """A user's message: its text and images, in order."""
        texts = [p for p in parts if isinstance(p, str)]
        if len(texts) == len(parts):
            self.messages.append(Message.of(Role.USER, "".join(texts)))
            return
        content: list[TextContent | ImageContent] = []
        for part in parts:
            if isinstance(part, ImageContent):
                content.append(part)
            elif content and isinstance(content[-1], TextContent):
                content[-1] = TextContent(text=content[-1].text + part)
            else:
                content.append(TextContent(text=part))
        kept = tuple(c for c in content if not isinstance(c, TextContent) or c.text)
        self.messages.append(Message(author=Author(role=Role.USER), content=kept))

    def assistant(self, text: str, reasoning: str = "", calls: Sequence[Call] = ()) -> None:
        """An assistant's message: its reasoning (kept before calls only), text and calls."""
        if not calls:
            self.messages.append(Message.of(Role.ASSISTANT, text, channel="final"))
            return
        if reasoning:
            self.messages.append(Message.of(Role.ASSISTANT, reasoning, channel="analysis"))
        if text:
            self.messages.append(Message.of(Role.ASSISTANT, text, channel="commentary"))
        for call in calls:
            if call.id:
                self.names[call.id] = call.name
            self.messages.append(
                Message.of(
                    Role.ASSISTANT,
                    call.arguments,
                    channel="commentary",
                    recipient=f"functions.{call.name}",
                    content_type=CALL_TYPE,
                )
            )

    def tool(self, call_id: str, text: str, name: str | None = None) -> None:
        """A tool's result, named by the call it answers."""
        named = self.names.get(call_id, name or "tool")
        self.messages.append(
            Message(
                author=Author(role=Role.TOOL, name=f"functions.{named}"),
                content=(TextContent(text=text),),
                channel="commentary",
                recipient="assistant",
            )
        )

    def conversation(self, tools: Sequence[ToolDescription] = ()) -> Conversation:
        """The conversation, its developer message first (when it has instructions or tools)."""
        if not self.instructions and not tools:
            return Conversation(messages=tuple(self.messages))
        developer = DeveloperContent(instructions="\n\n".join(self.instructions) or None)
        if tools:
            developer = developer.with_function_tools(tools)
        return Conversation(messages=(Message.of(Role.DEVELOPER, developer), *self.messages))


__all__ = ["CALL_TYPE", "Call", "Transcript"]
