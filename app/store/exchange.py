"""Export and import of conversations: OpenChatML 2.2, its JSON projection, Markdown.

Guarantees:
- OpenChatML and JSON exports hold the conversation as the window shows it (the chosen version
  of every turn and its chosen reply), every message with its channel, recipient, content type
  and call ids, analysis included: importing them gives back the same messages;
- Markdown holds only what a reader of the chat saw: user messages, answers and preambles, and
  one line per tool call (tool, outcome); never analysis;
- an import either yields a whole conversation or raises `TranscriptError` with its code and
  place; nothing partial is produced.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from app.domain.history import ChatDoc, Reply, Segment, Turn, Version
from app.domain.messages import Conversation, DeveloperContent, Message, Role
from app.domain.visibility import Lane, route
from app.errors import ErrorCode, TranscriptError
from app.harmony.ocm import convert
from app.harmony.ocm.interop import from_conversation, to_conversation

FORMATS = ("ocm", "json", "md")


def to_domain(doc: ChatDoc) -> Conversation:
    """The conversation as model messages: instructions first, then the chosen branch."""
    messages: list[Message] = []
    if doc.instructions.strip():
        messages.append(Message.of(Role.DEVELOPER, DeveloperContent(instructions=doc.instructions)))
    messages.extend(doc.messages())
    return Conversation(messages=tuple(messages))


def export(doc: ChatDoc, fmt: str) -> str:
    """`doc` written as `ocm`, `json` or `md`."""
    if fmt == "md":
        return markdown(doc)
    if fmt not in ("ocm", "json"):
        raise TranscriptError(ErrorCode.INPUT_INVALID, f"unknown export format {fmt!r}")
    transcript = from_conversation(to_domain(doc))
    header = {**transcript.header, "title": doc.title}
    return convert.dump(dataclasses.replace(transcript, header=header), fmt)


def markdown(doc: ChatDoc) -> str:
    lines = [f"# {doc.title}", ""]
    for turn in doc.turns:
        version = turn.version
        lines += ["**You:**", "", version.user_text, ""]
        reply = version.reply
        if reply is None:
            continue
        lines += ["**Assistant:**", ""]
        for segment in reply.segments:
            if segment.kind in ("answer", "json"):
                lines += [segment.text, ""]
            elif segment.kind == "preamble":
                lines += [f"*{segment.text.strip()}*", ""]
            elif segment.kind == "tool":
                outcome = segment.data.get("state", "")
                lines += [f"> tool call: `{segment.data.get('tool', '?')}` ({outcome})", ""]
        if reply.state in ("stopped", "failed", "incomplete"):
            lines += [f"*(this answer is {reply.state})*", ""]
    return "\n".join(lines).rstrip() + "\n"


def import_text(text: str, fmt: str | None = None) -> ChatDoc:
    """A conversation from OpenChatML or its JSON projection (detected when `fmt` is None)."""
    transcript = convert.load(text, fmt)
    conversation = to_conversation(transcript)
    title = transcript.header.get("title")
    return from_domain(conversation, str(title) if title else None)


def from_domain(conversation: Conversation, title: str | None = None) -> ChatDoc:
    """Turns from model messages: each user message opens a turn; what follows is its reply."""
    doc = ChatDoc()
    reply: Reply | None = None
    for message in conversation.messages:
        role = message.author.role
        if role is Role.SYSTEM:
            continue
        if role is Role.DEVELOPER:
            content = message.content[0]
            if isinstance(content, DeveloperContent) and content.instructions:
                doc.instructions = content.instructions
            continue
        if role is Role.USER:
            reply = Reply(state="done")
            doc.turns.append(Turn([Version(message.text, replies=[reply])]))
            continue
        if reply is None:  # model output before any user message: a turn with no user text
            reply = Reply(state="done")
            doc.turns.append(Turn([Version("", replies=[reply])]))
        reply.messages = (*reply.messages, message)
        _show(reply, message)
    first = next((t.version.user_text for t in doc.turns if t.version.user_text), "")
    doc.title = title or (first.splitlines()[0][:60] if first else "Imported chat")
    for turn in doc.turns:  # a version with an empty reply has no reply at all
        version = turn.version
        if version.replies and not version.replies[0].messages:
            version.replies = []
    return doc


def _show(reply: Reply, message: Message) -> None:
    """What the window shows of `message` (never its analysis)."""
    lane = route(message.author.role, message.channel, message.recipient)
    if lane is Lane.ANSWER:
        reply.segments.append(Segment("answer", message.text, complete=True))
    elif lane is Lane.PREAMBLE:
        reply.segments.append(Segment("preamble", message.text, complete=True))
    elif lane is Lane.TOOL_CALL:
        data: dict[str, Any] = {
            "tool": message.recipient,
            "arguments": message.text,
            "state": "called",
        }
        reply.segments.append(Segment("tool", data=data, complete=True))
    elif lane is Lane.TOOL_RESULT:
        cards = [s for s in reply.segments if s.kind == "tool" and "result" not in s.data]
        card = next((s for s in cards if s.data.get("tool") == message.author.name), None)
        if card is not None:
            ok = not message.text.startswith('{"ok": false')
            card.data.update(state="ok" if ok else "error", result=message.text)
    elif lane is Lane.ANALYSIS:
        reply.debug.analysis += message.text + "\n"


def dump_json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, indent=1) + "\n"


__all__ = ["FORMATS", "export", "from_domain", "import_text", "markdown", "to_domain"]
