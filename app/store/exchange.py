"""Export and import of conversations: OpenChatML 2.2, its JSON projection, Markdown.

Guarantees:
- OpenChatML and JSON exports hold the conversation as the window shows it (the chosen version
  of every turn and its chosen reply), every message with its channel, recipient, content type
  and call ids, analysis included: importing them gives back the same messages;
- Markdown holds only what a reader of the chat saw: user messages, answers and preambles, and
  one line per tool call (tool, outcome); never analysis;
- a compaction is in every format, at its place: in Markdown its marker's sentence and the
  summary the model read in place of the older exchanges (quoted), undone or not; in OpenChatML
  and JSON the header's `harmony_desk.compactions` lists each record (`turn`: the turn whose
  reply holds it, `segment`: its place among that reply's segments, `undone`, `compaction`:
  the record) while every message stays in the body, so the conversation before compaction is
  there whole; importing puts each marker back on its turn's reply (a record that is not
  valid is a `TranscriptError`);
- an interrupted answer (the app or the stream stopped mid-answer) is in every format: its
  text as a `final` message, which in OpenChatML is left unterminated as the last frame when it
  is the last message (E-STREAM-TRUNCATED, as the spec allows), and in JSON marked `truncated`;
  importing it gives back a reply marked incomplete, so Continue and Regenerate are offered;
- Markdown says an answer the app's stopping cut short in the window's words
  (`INTERRUPTED_NOTICE`);
- the attached files an OpenChatML or JSON export carries (given by the caller, as listed by
  `app/documents/carry.py`) are in the header's `harmony_desk.attachments`, and an import
  gives that list back as it found it (the caller restores the files);
- a user message's images travel with it: OpenChatML and JSON bodies are text, so the body
  holds the image marker (U+E0F0) in each image's place and the header's
  `harmony_desk.images` lists, by message index, each image's entry (`{"type": "image",
  "sha256", "mime", "width", "height", "name"}`); the images' bytes are among the carried
  attachments (they are kept with the message's version). Importing gives back the version's
  images, the same values in the same order, and its text without the markers; Markdown shows
  each image as `[image: name, W×H]` (a Markdown file has no place for the bytes). Search never
  sees image bytes;
- an import either yields a whole conversation or raises `TranscriptError` with its code and
  place (an image entry that is not valid included); nothing partial is produced.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from app.domain.compaction import Compaction, record_of, undo
from app.domain.events import Compacted, MessageDone
from app.domain.history import ChatDoc, Reply, Turn, Version
from app.domain.interrupted import INTERRUPTED_NOTICE, cut_short
from app.domain.messages import (
    IMAGE_MARKER,
    Conversation,
    DeveloperContent,
    ImageContent,
    Message,
    Role,
    TextContent,
    content_from_dict,
    content_to_dict,
    user_message,
)
from app.domain.reply import ReplyBuilder
from app.domain.visibility import Lane, route
from app.errors import ErrorCode, InvalidInputError, TranscriptError
from app.harmony.ocm import convert
from app.harmony.ocm.interop import EXTENSION_KEY, from_conversation, to_conversation

FORMATS = ("ocm", "json", "md")
ATTACHMENTS = "attachments"
IMAGES = "images"
COMPACTIONS = "compactions"


INTERRUPTED = ("incomplete", "stopped", "failed")


def reply_messages(reply: Reply) -> list[Message]:
    """The reply's messages, with an interrupted answer that only its segments hold (the app
    was stopped before the message closed) as a `final` message."""
    messages = list(reply.messages)
    if reply.state in INTERRUPTED and not any(
        route(m.author.role, m.channel, m.recipient) is Lane.ANSWER for m in messages
    ):
        shown = "".join(s.text for s in reply.segments if s.kind == "answer")
        if shown:
            messages.append(Message.of(Role.ASSISTANT, shown, channel="final"))
    return messages


def doc_messages(doc: ChatDoc) -> list[Message]:
    """The chosen branch as model messages, interrupted answers included."""
    out: list[Message] = []
    for turn in doc.turns:
        version = turn.version
        out.append(user_message(version.user_text, version.images))
        if version.reply is not None:
            out.extend(reply_messages(version.reply))
    return out


def to_domain(doc: ChatDoc) -> Conversation:
    """The conversation as model messages: instructions first, then the chosen branch."""
    messages: list[Message] = []
    if doc.instructions.strip():
        messages.append(Message.of(Role.DEVELOPER, DeveloperContent(instructions=doc.instructions)))
    messages.extend(doc_messages(doc))
    return Conversation(messages=tuple(messages))


def _ends_interrupted(doc: ChatDoc) -> bool:
    last = doc.turns[-1].version.reply if doc.turns else None
    return last is not None and last.state in INTERRUPTED and bool(reply_messages(last))


def export(doc: ChatDoc, fmt: str, attachments: Sequence[Mapping[str, Any]] = ()) -> str:
    """`doc` written as `ocm`, `json` or `md`, carrying `attachments` (not in Markdown)."""
    if fmt == "md":
        return markdown(doc)
    if fmt not in ("ocm", "json"):
        raise TranscriptError(ErrorCode.INPUT_INVALID, f"unknown export format {fmt!r}")
    conversation = to_domain(doc)
    transcript = from_conversation(conversation)
    header = {**transcript.header, "title": doc.title}
    images = {
        str(i): [content_to_dict(c) for c in m.images]
        for i, m in enumerate(conversation.messages)
        if m.images
    }
    extension = dict(header.get(EXTENSION_KEY) or {})
    if images:
        extension[IMAGES] = images
    if attachments:
        extension[ATTACHMENTS] = [dict(a) for a in attachments]
    compactions = _compactions(doc)
    if compactions:
        extension[COMPACTIONS] = compactions
    if extension:
        header[EXTENSION_KEY] = extension
    messages = transcript.messages
    if _ends_interrupted(doc) and messages[-1].role == Role.ASSISTANT.value:
        messages = (*messages[:-1], dataclasses.replace(messages[-1], terminator=None))
    return convert.dump(dataclasses.replace(transcript, header=header, messages=messages), fmt)


def markdown(doc: ChatDoc) -> str:
    lines = [f"# {doc.title}", ""]
    for turn in doc.turns:
        version = turn.version
        lines += ["**You:**", ""]
        for image in version.images:
            lines += [f"[image: {image.name or 'unnamed'}, {image.width}×{image.height}]", ""]
        lines += [version.user_text, ""]
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
            elif (found := record_of(segment)) is not None:
                lines += _marker_lines(*found)
        if cut_short(reply):  # the app stopped mid-answer: said as the window says it
            lines += [f"*({INTERRUPTED_NOTICE})*", ""]
        elif reply.state in ("stopped", "failed", "incomplete"):
            lines += [f"*(this answer is {reply.state})*", ""]
    return "\n".join(lines).rstrip() + "\n"


def _marker_lines(compaction: Compaction, applies: bool) -> list[str]:
    """A compaction's marker in Markdown: its sentence, then the summary, quoted."""
    if applies:
        said = f"*Compacted: {compaction.said()}.* From here on the model read this summary in"
        said += " place of those exchanges:"
    else:
        said = f"*Compaction undone: {compaction.said()}.* The model read them again; the"
        said += " summary it had made:"
    quoted = [f"> {line}" if line.strip() else ">" for line in compaction.summary.splitlines()]
    return ["---", "", said, "", *quoted, "", "---", ""]


def _compactions(doc: ChatDoc) -> list[dict[str, Any]]:
    """The compaction records of the chosen branch, by turn and place (the header's list)."""
    out = []
    for index, turn in enumerate(doc.turns):
        reply = turn.version.reply
        for place, segment in enumerate(reply.segments if reply is not None else []):
            found = record_of(segment)
            if found is not None:
                compaction, applies = found
                entry = {"turn": index, "segment": place, "undone": not applies}
                out.append({**entry, "compaction": compaction.to_dict()})
    return out


def _with_compactions(doc: ChatDoc, extension: Any) -> None:
    """Each listed compaction's marker back on its turn's reply, at its place (see the module
    guarantees)."""
    listed = extension.get(COMPACTIONS) if isinstance(extension, Mapping) else None
    if listed is None:
        return
    where = f"the header's {EXTENSION_KEY}.{COMPACTIONS}"
    if not isinstance(listed, list):
        raise TranscriptError(ErrorCode.INPUT_INVALID, f"{where} is not a list")
    for j, entry in enumerate(listed):
        reply = _reply_of(doc, entry)
        if reply is None or not isinstance(entry, Mapping):
            raise TranscriptError(ErrorCode.INPUT_INVALID, f"{where}[{j}] names no reply")
        try:
            compaction = Compaction.from_dict(entry.get("compaction"))
        except InvalidInputError as exc:
            raise TranscriptError(ErrorCode.INPUT_INVALID, f"{where}[{j}]: {exc}") from exc
        ReplyBuilder(reply).apply(Compacted(compaction))
        marker = reply.segments.pop()
        place = entry.get("segment")
        at = place if isinstance(place, int) and place >= 0 else len(reply.segments)
        reply.segments.insert(min(at, len(reply.segments)), marker)
        if entry.get("undone"):
            undo([marker])


def _reply_of(doc: ChatDoc, entry: Any) -> Reply | None:
    """The reply of the turn a listed compaction names (None: no such turn, or no reply)."""
    turn = entry.get("turn") if isinstance(entry, Mapping) else None
    if not isinstance(turn, int) or not 0 <= turn < len(doc.turns):
        return None
    return doc.turns[turn].version.reply


def import_text(text: str, fmt: str | None = None) -> ChatDoc:
    """A conversation from OpenChatML or its JSON projection (detected when `fmt` is None)."""
    return import_carrying(text, fmt)[0]


def import_carrying(text: str, fmt: str | None = None) -> tuple[ChatDoc, Any]:
    """A conversation, and the attachments list its header carries (None when none)."""
    transcript = convert.load(text, fmt)
    extension = transcript.header.get(EXTENSION_KEY)
    listed = extension.get(ATTACHMENTS) if isinstance(extension, Mapping) else None
    conversation = _with_images(to_conversation(transcript), extension)
    title = transcript.header.get("title")
    doc = from_domain(conversation, str(title) if title else None)
    cut = transcript.messages and transcript.messages[-1].terminator is None
    last = doc.turns[-1].version.reply if doc.turns else None
    if cut and last is not None:  # an answer that was interrupted stays interrupted
        last.state = "incomplete"
        last.error = f"{ErrorCode.STREAM_TRUNCATED.value}: the answer was cut off"
    _with_compactions(doc, extension)
    return doc, listed


def _image(raw: Any, where: str) -> ImageContent:
    try:
        content = content_from_dict(raw)
    except (InvalidInputError, ValidationError, TypeError) as exc:
        raise TranscriptError(ErrorCode.INPUT_INVALID, f"{where} is not a valid image") from exc
    if not isinstance(content, ImageContent):
        raise TranscriptError(ErrorCode.INPUT_INVALID, f"{where} is not an image")
    return content


def _with_images(conversation: Conversation, extension: Any) -> Conversation:
    """The user messages given back their images (`harmony_desk.images`: the entries of each
    message's images by message index), each body's markers taken out of its text."""
    listed = extension.get(IMAGES) if isinstance(extension, Mapping) else None
    if listed is None:
        return conversation
    where = f"the header's {EXTENSION_KEY}.{IMAGES}"
    if not isinstance(listed, Mapping):
        raise TranscriptError(ErrorCode.INPUT_INVALID, f"{where} is not an object")
    messages = list(conversation.messages)
    for key, entries in listed.items():
        index = int(key) if str(key).isdigit() else -1
        if not 0 <= index < len(messages) or messages[index].author.role is not Role.USER:
            raise TranscriptError(ErrorCode.INPUT_INVALID, f"{where}: {key!r} is no user message")
        if not isinstance(entries, list):
            raise TranscriptError(ErrorCode.INPUT_INVALID, f"{where}.{key} is not a list")
        images = [_image(e, f"{where}.{key}[{j}]") for j, e in enumerate(entries)]
        text = messages[index].text
        marked = len(text) - len(text.lstrip(IMAGE_MARKER))
        messages[index] = user_message(text[min(marked, len(images)) :], images)
    return Conversation(messages=tuple(messages))


def _user_text(message: Message) -> str:
    """A user message's own text (its images are apart: `Version.images`)."""
    return "".join(c.text for c in message.content if isinstance(c, TextContent))


class _Replay:
    """One stored reply's messages folded by the one reply builder, as if they streamed."""

    def __init__(self, reply: Reply) -> None:
        self.builder = ReplyBuilder(reply, stored=True)
        self.messages: list[Message] = []

    def add(self, message: Message) -> None:
        lane = route(message.author.role, message.channel, message.recipient)
        self.builder.apply(MessageDone(len(self.messages), message, lane, True, ()))
        self.messages.append(message)

    def finish(self) -> None:
        self.builder.close()
        self.builder.reply.messages = tuple(self.messages)


def from_domain(conversation: Conversation, title: str | None = None) -> ChatDoc:
    """Turns from model messages: each user message opens a turn; what follows is its reply.
    Linear in the number of messages, however many one reply holds."""
    doc = ChatDoc()
    builders: list[_Replay] = []
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
            builders.append(_Replay(Reply(state="done")))
            version = Version(
                _user_text(message), replies=[builders[-1].builder.reply], images=message.images
            )
            doc.turns.append(Turn([version]))
            continue
        if not builders or not doc.turns:  # model output before any user message
            builders.append(_Replay(Reply(state="done")))
            doc.turns.append(Turn([Version("", replies=[builders[-1].builder.reply])]))
        builders[-1].add(message)
    for builder in builders:
        builder.finish()
    first = next((t.version.user_text for t in doc.turns if t.version.user_text), "")
    doc.title = title or (first.splitlines()[0][:60] if first else "Imported chat")
    for turn in doc.turns:  # a version with an empty reply has no reply at all
        version = turn.version
        if version.replies and not version.replies[0].messages:
            version.replies = []
    return doc


def dump_json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, indent=1) + "\n"


__all__ = [
    "FORMATS",
    "export",
    "from_domain",
    "import_carrying",
    "import_text",
    "markdown",
    "to_domain",
]
